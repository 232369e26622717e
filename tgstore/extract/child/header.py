"""The bundle header's facts about a tinygrad and a suite, found without importing tinygrad (the parent uses these
too, to name a commit before extracting it)."""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import subprocess
from typing import Any

from . import settings


def tree_hash(root: pathlib.Path) -> str:
    """sha256 over the sorted lines "<relative path> <sha256 of bytes>" of the package's .py files."""
    pkg = root / "tinygrad"
    lines = []
    for p in pkg.rglob("*.py"):
        if "__pycache__" in p.parts:
            continue
        lines.append(f"{p.relative_to(root).as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def find_version(root: pathlib.Path) -> str | None:
    for meta in sorted(root.glob("tinygrad-*.dist-info/METADATA")):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    for fn, rx in (
        ("setup.py", r"""version\s*=\s*['"]([^'"]+)['"]"""),
        ("pyproject.toml", r"""^version\s*=\s*['"]([^'"]+)['"]"""),
    ):
        if (p := root / fn).is_file() and (m := re.search(rx, p.read_text(errors="replace"), re.M)):
            return m.group(1)
    return None


def git_info(root: pathlib.Path) -> dict | None:
    """{sha, date, subject, dirty, position} of the checkout at `root`; None outside a git checkout. `position` is
    the commit's place on its first-parent line (None in a shallow clone, where it would be counted from the cut)."""

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *a], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        top = git("rev-parse", "--show-toplevel")
        if pathlib.Path(top).resolve() != root.resolve():
            return None  # root is inside some other repository
        sha, date, subject = git("log", "-1", "--format=%H%x00%cI%x00%s").split("\x00", 2)
        dirty = bool(git("status", "--porcelain", "--", "tinygrad"))
        shallow = git("rev-parse", "--is-shallow-repository") == "true"
        position = None if shallow else int(git("rev-list", "--count", "--first-parent", "HEAD"))
        return {"sha": sha, "date": date, "subject": subject, "dirty": dirty, "position": position}
    except Exception:
        return None


def describe_tinygrad(root: pathlib.Path, git: dict | None = None) -> dict[str, Any]:
    """The header's ``tinygrad`` block for the dir holding ``tinygrad/``, computed without importing it.
    ``git`` overrides what ``git log`` in ``root`` says (a caller that exported a commit knows it better)."""
    root = pathlib.Path(root).resolve()
    return {
        "path": str(root),
        "version": find_version(root),
        "tree_hash": tree_hash(root),
        "git": git if git is not None else git_info(root),
    }


def suite_identity(case_files: list[pathlib.Path], suite_name: str | None = None) -> dict[str, Any]:
    """The header's ``suite`` block: name (given, else "builtin" or the files' stems), sha256 over the case files'
    bytes in order, and their absolute paths."""
    files = [pathlib.Path(p).resolve() for p in case_files]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files if p.is_file())).hexdigest()
    name = suite_name or ("builtin" if [p.name for p in files] == ["builtin.py"] else "+".join(p.stem for p in files))
    return {"name": name, "hash": digest, "files": [str(p) for p in files]}


def capture_identity(argv: list[str]) -> dict[str, Any]:
    """The header's ``suite`` block of a capture run: named and hashed by the command line alone, so the runs of a
    sweep (where the command's files change with the commit) compare as one suite."""
    text = json.dumps(list(argv))
    name = "capture: " + " ".join(argv)
    return {"name": name if len(name) <= 120 else name[:117] + "...", "hash": hashlib.sha256(text.encode()).hexdigest(),
            "files": []}


def device_env(root: pathlib.Path, backend: str) -> dict[str, str]:
    """Env vars that select `backend` in this tinygrad: DEV=<name> where supported (0.11+), <NAME>=1 before."""
    rt = root / "tinygrad" / "runtime"
    names = sorted(p.stem[4:].upper() for p in rt.glob("ops_*.py"))
    dev = backend.upper()
    if dev == "CPU" and "CPU" not in names and "CLANG" in names:
        dev = "CLANG"
    if dev == "CLANG" and "CLANG" not in names and "CPU" in names:
        dev = "CPU"
    try:
        src = (root / "tinygrad" / "device.py").read_text(errors="replace")
    except OSError:
        src = ""
    if 'getenv("DEV"' in src or "DEV.device" in src or "DEV.target" in src:
        return {"DEV": dev}
    return {dev: "1"}


def extractor_hash() -> str:
    """sha256 over this child package's own code: a run's output is a function of it too."""
    here = pathlib.Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run_settings(*, suite_hash: str, backend: str, renderers: list[str], stages: list[str], rewrites: int,
                 debug: int) -> dict[str, Any]:
    """What an extraction's output depends on besides the tinygrad files it reads and the machine (recorded with its
    inputs; the table is child/settings.py): two runs with equal settings that read equal bytes on machines that
    identify alike write equal bundles."""
    return settings.run_settings(suite=suite_hash, backend=backend, renderers=renderers, stages=stages,
                                 rewrites=rewrites, debug=debug, extractor=extractor_hash())
