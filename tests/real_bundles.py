"""Session fixture ``real_bundles``: bundles extracted once per test session by `tgstore extract` from the
tinygrad installed beside tgstore (two small cases, tests/fixtures/cases/pair.py), shared by the tests that ingest
real extractions (renderer merging, JSON validity, the fault harness) instead of each extracting its own.

    c_llvm   renderers C,LLVM (the default stages)
    ptx      renderer PTX only
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from built_once import built_once

PAIR_CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "pair.py"
EXTRACTIONS = {"c_llvm": ["--renderers", "C,LLVM"], "ptx": ["--renderers", "PTX", "--stages", "none"]}


@pytest.fixture(scope="session")
def real_bundles(tmp_path_factory) -> dict[str, Path]:
    """name -> a bundle file (read-only by convention: copy before changing it), extracted by one xdist worker."""
    def build(where: Path) -> dict[str, Path]:
        bundles = {}
        for name, options in EXTRACTIONS.items():
            path = where / f"{name}.jsonl"
            # no timeout here: tgstore's own --timeout (900 s) bounds the child, and a loaded machine is slow
            proc = subprocess.run([sys.executable, "-m", "tgstore", "extract", "-o", str(path), "--cases",
                                   str(PAIR_CASES), *options], capture_output=True, text=True, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, (name, proc.stderr)
            bundles[name] = path
        return bundles

    return {name: Path(path) for name, path in built_once(tmp_path_factory, "real-bundles", build).items()}
