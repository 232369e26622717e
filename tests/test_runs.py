"""Runs that can be trusted: names as a fresh process renders them, no ok run lost to a failed attempt, ids never
reused, a commit missing a file it reads stored as an untestable run (issue: history you can trust)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli import TGSTORE, rows
from git_history import build_release_history, git
from releases_db import CORE_CASES
from slack import generous

from tgstore.bundle import read_bundle
from tgstore.db import open_engine, upgrade
from tgstore.extract.runner import BUILTIN_CASES
from tgstore.pipeline import ExtractionPlan, extract_and_ingest, extract_bundle
from tgstore.queries import run_query


def c_programs(path: Path) -> dict[tuple[str, int], tuple[str, str]]:
    bundle = read_bundle(path)
    return {(case["name"], item["position"]): (program["name"], program["source"])
            for case in bundle.cases for item in case["schedule"] for program in item["programs"]
            if program["renderer"] == "C"}


def test_c_programs_do_not_depend_on_the_other_renderers(tinygrad_release, tmp_path) -> None:
    """0.12 numbers repeated kernel names with a process-global counter: rendered with nine renderers in one process,
    softmax's second kernel used to be stored as r_4_16n9. Each renderer now starts from the counter a fresh process
    would have."""
    root = tinygrad_release("0.12.0")
    cases = [CORE_CASES]  # 15 cases, softmax among them: the whole suite twice would take minutes
    alone = extract_bundle(root, tmp_path / "c.jsonl", ExtractionPlan(case_files=cases, renderers=["C"], stages="none"))
    together = extract_bundle(root, tmp_path / "all.jsonl", ExtractionPlan(case_files=cases, stages="none"))
    assert alone.status == together.status == "ok", (alone.stderr, together.stderr)
    c_alone, c_together = c_programs(tmp_path / "c.jsonl"), c_programs(tmp_path / "all.jsonl")
    assert len(c_alone) >= 14 and c_alone == c_together
    # the names a fresh process gives: repeated names numbered from n1 within the case
    assert [c_alone[("softmax", i)][0] for i in range(2)] == ["r_4_16", "r_4_16n1"]
    assert read_bundle(tmp_path / "all.jsonl").header["features"]["name_counter"] is True


def test_a_failed_reextraction_never_replaces_an_ok_run(tinygrad_release, tmp_path) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_mul():\n    return Tensor.empty(8) * 3\n\n"
                     "def case_sum():\n    return Tensor.empty(8, 8).sum(1)\n")
    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    root = tinygrad_release("0.14.0")
    plan = ExtractionPlan(case_files=[cases], renderers=["C"], stages="none")
    assert extract_and_ingest(engine, root, plan).status == "ok"
    wider = ExtractionPlan(case_files=[cases], renderers=["C", "LLVM", "PTX"], stages="none", timeout=0.5)
    report = extract_and_ingest(engine, root, wider)  # killed after half a second
    assert report.status == "timeout" and report.kept_run_id == 1
    assert rows(db, "SELECT id, status, is_current, renderers FROM runs ORDER BY id") == [
        (1, "ok", 1, "C"), (2, "timeout", 0, "C,LLVM,PTX")]
    assert rows(db, 'SELECT DISTINCT run_id FROM v_run_cases') == [(1,)]  # what queries see is the ok run
    with engine.connect() as conn:
        failed = run_query(conn, "failed_runs").dicts()
    assert [(r["run_id"], r["kind"], r["current_run"]) for r in failed] == [(2, "attempt", "1 (ok)")]
    # a forced ok run replaces the ok run; a deleted run's id is never given to another run
    assert extract_and_ingest(engine, root, plan, force=True).run_id == 3
    assert extract_and_ingest(engine, root, plan, force=True).run_id == 4
    assert rows(db, "SELECT id, status, is_current FROM runs ORDER BY id") == [(2, "timeout", 0), (4, "ok", 1)]


def test_a_commit_missing_a_file_it_reads_is_stored_as_a_failed_run_and_retried(tinygrad_release, tmp_path) -> None:
    repo = tmp_path / "tinygrad"
    shas = build_release_history(repo, [("0.14.0", "release"), (None, "readme")], tinygrad_release)
    # lose one blob of the first commit, as a snapshot that lacks large files does
    blob = git(repo, "rev-parse", f"{shas[0]}:tinygrad/tensor.py")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    db = tmp_path / "t.db"
    args = ["ingest", "--db", str(db), "--repo", str(repo), "--rev", shas[0], "--renderers", "C", "--stages",
            "none", "--cases", str(BUILTIN_CASES)]
    proc = subprocess.run([*TGSTORE, *args], capture_output=True, text=True, timeout=generous())
    # extracted from what the clone holds; tensor.py is what every case imports, so the commit is untestable
    untestable = "untestable: it could have read tinygrad/tensor.py, which the clone lacks"
    assert proc.returncode == 1 and untestable in proc.stderr, proc.stderr
    stored = rows(db, "SELECT r.status, r.error, r.missing_paths, c.sha, c.subject FROM runs r "
                      "JOIN tinygrad_commits c ON c.id = r.commit_id")
    assert len(stored) == 1
    status, error, missing, sha, subject = stored[0]
    assert (status, sha, subject) == ("failed", shas[0], "release") and error == untestable
    assert json.loads(missing) == ["tinygrad/tensor.py"]
    again = subprocess.run([*TGSTORE, *args], capture_output=True, text=True, timeout=generous())
    assert again.returncode == 1 and " skipped " not in again.stderr  # retried, not skipped
    assert rows(db, "SELECT id, status, is_current FROM runs ORDER BY id") == [(1, "failed", 0), (2, "failed", 1)]
