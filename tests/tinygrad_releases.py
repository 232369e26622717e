"""Session fixture ``tinygrad_release(version) -> Path``: a tinygrad release installed side by side, for tests that
extract from several tinygrad versions. Each release is pip-installed once (``--no-deps --target``) into
``.cache/tinygrad-releases/<version>`` under the repo root (git-ignored) and reused by later sessions."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from slack import generous

REPO_ROOT = Path(__file__).resolve().parent.parent
RELEASE_CACHE = REPO_ROOT / ".cache" / "tinygrad-releases"


def install_tinygrad_release(version: str, cache: Path = RELEASE_CACHE) -> Path:
    """The dir holding ``tinygrad/`` for release ``version``, installing it into ``cache`` on first use."""
    target = cache / version
    if (target / "tinygrad" / "__init__.py").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    # install next to the final place, then rename: a half-finished install is never mistaken for a good one
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=cache))
    try:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(tmp),
            f"tinygrad=={version}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=generous())
        if proc.returncode != 0 or not (tmp / "tinygrad" / "__init__.py").is_file():
            pytest.fail(f"could not install tinygrad=={version}: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        try:
            tmp.rename(target)
        except OSError:  # another session won the race
            if not (target / "tinygrad" / "__init__.py").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def tinygrad_release() -> Callable[[str], Path]:
    """``tinygrad_release("0.10.0")`` -> the dir holding that release's ``tinygrad/`` package."""
    return install_tinygrad_release
