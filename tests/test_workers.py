"""One extraction's cases in several worker processes (`--jobs`): the bundle is the one a single process writes,
record for record (graphs and rules in the same order under the same keys, the files the run read), and a worker
that dies fails the extraction instead of hanging it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_fresh import BEFORE, TARGETS, extract

from tgstore.extract.runner import resolve_tinygrad_root
from tgstore.pipeline import ExtractionPlan, extract_bundle

PIDS_CASES = '''from tinygrad import Tensor
import os

def _seen():
    with open({pids!r}, "a") as f:
        f.write(f"{{os.getpid()}}\\n")

''' + "".join(f'''
def case_add_{i}():
    _seen()
    return Tensor.empty(16) + {i}
''' for i in range(6))


@pytest.mark.parametrize(("release", "renderers", "cases"), [
    ("0.10.0", None, BEFORE + TARGETS),  # 0.10 opens devices from "MainProcess" only
    ("0.14.0", None, BEFORE + TARGETS),
    # C alone: the canonical documents' lowering builds matchers no renderer's did, in a worker's last case too
    ("0.14.0", ["C"], ["matmul", "softmax"]),
])
def test_workers_write_the_bundle_one_process_writes(tinygrad_release, tmp_path: Path, release: str,
                                                     renderers: list[str] | None, cases: list[str]) -> None:
    root = tinygrad_release(release)
    one = extract(root, tmp_path, "suite", cases, renderers=renderers)
    two = extract(root, tmp_path, "suite", cases, workers=2, renderers=renderers)
    assert [r["kind"] for r in one].count("case") == len(cases)
    assert all(r["status"] == "ok" for r in one if r["kind"] == "case")
    assert len(one) == len(two)
    for mine, theirs in zip(one, two, strict=True):  # one by one, so that a failure names the record
        assert mine == theirs, (mine["kind"], mine.get("name") or mine.get("key") or mine.get("hash"))


def pid_cases(tmp_path: Path, body: str = "") -> tuple[Path, Path]:
    pids = tmp_path / "pids"
    cases = tmp_path / "cases.py"
    cases.write_text(PIDS_CASES.format(pids=str(pids)) + body)
    return cases, pids


def test_cases_run_in_the_workers(tmp_path: Path) -> None:
    cases, pids = pid_cases(tmp_path)
    result = extract_bundle(resolve_tinygrad_root(None), tmp_path / "b.jsonl",
                            ExtractionPlan(case_files=[cases], renderers=["C"], stages="none", workers=2))
    assert result.status == "ok", result.stderr
    ran_in = pids.read_text().split()
    assert len(ran_in) == 6 and len(set(ran_in)) == 2  # two workers, each ran a case; no case ran twice


def test_a_worker_that_dies_fails_the_extraction(tmp_path: Path) -> None:
    cases, pids = pid_cases(tmp_path, '''
def case_dies():
    _seen()
    os._exit(7)
''')
    start = time.monotonic()
    result = extract_bundle(resolve_tinygrad_root(None), tmp_path / "b.jsonl",
                            ExtractionPlan(case_files=[cases], renderers=["C"], stages="none", workers=2,
                                           timeout=600))
    assert result.status == "failed" and time.monotonic() - start < 300, result.stderr
    assert "BrokenProcessPool" in result.stderr
    assert '"kind": "end"' not in (tmp_path / "b.jsonl").read_text()
    assert [pid for pid in set(pids.read_text().split()) if alive(int(pid))] == []  # no worker left behind


def alive(pid: int, within: float = 30.0) -> bool:
    """Whether the process is still there after `within` seconds (an exited one is reaped by init meanwhile)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.1)
    return True
