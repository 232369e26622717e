"""The bench scripts are not run by the suite (their figures are timings), but they must keep working: each one
imports what it uses from tgstore and accepts every option bench/README.md shows for it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from slack import generous

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "bench").glob("bench_*.py"))
README = (ROOT / "bench" / "README.md").read_text()


def documented_options(script: Path) -> set[str]:
    """Every `--option` bench/README.md writes after `bench/<script>` on a command line."""
    options: set[str] = set()
    for line in README.splitlines():
        if f"bench/{script.name}" in line:
            command = line.split("#", 1)[0]
            options |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", command))
    return options


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_bench_script_imports_and_takes_the_options_its_readme_shows(script: Path) -> None:
    assert f"bench/{script.name}" in README, f"{script.name} is not in bench/README.md"
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=generous(30),
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script.name}")
    accepted = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", done.stdout))
    assert documented_options(script) <= accepted, documented_options(script) - accepted


def test_the_readme_shows_sweep_options_so_the_check_above_can_fail() -> None:
    assert {"--commits", "--renderers", "--cases", "--repo", "--rev", "--jobs", "--db"} <= documented_options(
        ROOT / "bench" / "bench_sweep.py")
