"""Commit sweeps and bisect over a real git history whose commits are tinygrad releases (issue: commit sweeps)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from cli import TGSTORE, rows, tgstore
from git_history import build_release_history, git
from processes import processes_with

ARTIFACT_TABLES = ["blobs", "kernels", "uop_nodes", "linears", "case_results", "schedule_items", "programs",
                   "patterns", "pattern_sets"]
# Two cases whose C source differs between 0.12 and 0.14; the C renderer only: CI time.
CASES = '''"""Sweep test cases."""
from tinygrad import Tensor


def case_matmul():
    """16x16 @ 16x16 matrix multiply."""
    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)


def case_softmax():
    """Softmax over the last axis of a 4x16 tensor."""
    return Tensor.empty(4, 16).softmax(axis=-1)
'''
# (tinygrad release to put in the tree, or None to keep the tree and edit the README; subject)
HISTORY = [
    ("0.12.0", "tinygrad 0.12.0"),
    (None, "docs: readme edit one"),
    (None, "docs: readme edit two"),
    ("0.14.0", "tinygrad 0.14.0"),
    (None, "docs: readme edit three"),
]
@pytest.fixture(scope="session")
def history(tmp_path_factory, tinygrad_release) -> tuple[Path, list[str], Path]:
    """(repo, shas oldest first, cases file)."""
    base = tmp_path_factory.mktemp("sweep")
    repo = base / "tinygrad"
    shas = build_release_history(repo, HISTORY, tinygrad_release)
    cases = base / "cases.py"
    cases.write_text(CASES)
    return repo, shas, cases


def sweep_args(db: Path, repo: Path, cases: Path, *revs: str, jobs: int = 2) -> list[str | Path]:
    args: list[str | Path] = ["sweep", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C",
                              "--jobs", str(jobs)]
    for rev in revs:
        args += ["--rev", rev]
    return args


def unwrapped(stderr: str) -> str:
    """The CLI's error messages, which rich wraps at 80 columns when stderr is not a terminal, as one line."""
    return stderr.replace("\n", "")


def counts(db: Path) -> dict[str, int]:
    return {t: rows(db, f"SELECT count(*) FROM {t}")[0][0] for t in ARTIFACT_TABLES}


def runs_by_sha(db: Path) -> dict[str, list[tuple]]:
    found: dict[str, list[tuple]] = {}
    for sha, status, version, date, subject in rows(db, "SELECT sha, status, version, committed_at, subject "
                                                        "FROM v_runs ORDER BY run_id"):
        found.setdefault(sha, []).append((status, version, date, subject))
    return found


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def assert_consistent(db: Path, repo: Path) -> None:
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "PRAGMA foreign_key_check") == []
    assert worktrees(repo) == [f"worktree {repo.resolve()}"]


def expected_runs(shas: list[str]) -> dict[str, list[tuple]]:
    expected = {}
    version = None
    for i, (sha, (release, subject)) in enumerate(zip(shas, HISTORY, strict=True)):
        version = release or version
        expected[sha] = [("ok", version, f"2025-01-{i + 1:02d}T12:00:00+00:00", subject)]
    return expected


@pytest.fixture(scope="session")
def swept(history, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str], dict[str, int]]:
    """The whole history swept once with --jobs 2: (db, the CLI's result, artifact row counts after it)."""
    repo, shas, cases = history
    db = tmp_path_factory.mktemp("swept") / "sweep.db"
    proc = tgstore(*sweep_args(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", shas[0]))
    return db, proc, counts(db)


def test_sweep_stores_one_ok_run_per_commit(history, swept):
    repo, shas, _cases = history
    db, proc, _counts = swept
    assert proc.returncode == 0, proc.stderr
    assert runs_by_sha(db) == expected_runs(shas)
    # A..B leaves A out (it came in as the second --rev), oldest first after that: the progress lines say so
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == len(shas) and all(" ok " in ln for ln in lines), proc.stderr
    assert {ln.split()[1] for ln in lines} == {sha[:10] for sha in shas}
    assert "5 ok" in proc.stderr
    assert_consistent(db, repo)


def test_unchanged_commits_add_no_artifacts(history, swept, tmp_path):
    """Content addressing: the README-only commits reuse every case result, kernel and blob of their parent."""
    repo, shas, cases = history
    db = tmp_path / "two.db"
    proc = tgstore(*sweep_args(db, repo, cases, shas[0], shas[3]))  # the two releases only
    assert proc.returncode == 0, proc.stderr
    # Sweeping the three README-only commits as well added their runs and run_cases, and no artifact row: not even
    # a DEBUG text blob, since the extractor masks tinygrad's timings.
    assert counts(db) == counts(swept[0])
    assert rows(swept[0], "SELECT count(*) FROM run_cases") == [(2 * len(shas),)]


def test_sweep_again_skips_everything(history, swept):
    repo, shas, cases = history
    db, _proc, before = swept
    runs_before = rows(db, "SELECT id, status, ingested_at FROM runs ORDER BY id")
    proc = tgstore(*sweep_args(db, repo, cases, f"{shas[0]}..{shas[-1]}", shas[0]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(" skipped ") == len(shas), proc.stderr
    assert "extracting" not in proc.stderr
    assert rows(db, "SELECT id, status, ingested_at FROM runs ORDER BY id") == runs_before
    assert counts(db) == before
    assert_consistent(db, repo)


PASSES = """SELECT c.sha, count(p.id), count(p.pass_list_id) FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN case_set_members m ON m.case_set_id = r.case_set_id JOIN schedule_items si ON si.case_result_id = m.case_result_id
JOIN programs p ON p.schedule_item_id = si.id WHERE r.is_current AND p.renderer = 'C' GROUP BY c.sha"""


def test_a_sweep_asking_for_stages_extracts_what_a_sweep_without_them_stored(history, tmp_path):
    """`--stages none` (the cheap first look), then `--stages C` over the same range: every commit gets its passes,
    each line saying what its stored run lacked; a third sweep (asking for less) skips every commit, saying why."""
    repo, shas, cases = history
    db = tmp_path / "stages.db"
    revs = (f"{shas[0]}~0..{shas[-1]}", shas[0])
    first = tgstore(*sweep_args(db, repo, cases, *revs), "--stages", "none")
    assert first.returncode == 0, first.stderr
    assert {sha: (programs > 0, passes) for sha, programs, passes in rows(db, PASSES)} == {
        sha: (True, 0) for sha in shas}
    second = tgstore(*sweep_args(db, repo, cases, *revs), "--stages", "C")
    assert second.returncode == 0, second.stderr
    by_sha = {sha: (programs, passes) for sha, programs, passes in rows(db, PASSES)}
    assert set(by_sha) == set(shas) and all(passes == programs > 0 for programs, passes in by_sha.values()), by_sha
    lines = [ln for ln in second.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == len(shas) and all(" ok " in ln and "lacked stages C (it has none)" in ln for ln in lines), \
        second.stderr
    proc = tgstore("stages", "matmul", "--commit", shas[1], "--db", db)
    assert proc.returncode == 0 and "no passes recorded" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[2].split()[:4] == ["0", "early", "movement", "ops"], proc.stdout  # 0.12's first
    third = tgstore(*sweep_args(db, repo, cases, *revs), "--stages", "none")
    assert third.returncode == 0, third.stderr
    lines = [ln for ln in third.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == len(shas) and all(" skipped " in ln and "holds what was asked" in ln and "stages none" in ln
                                           for ln in lines), third.stderr


def assert_no_orphans(marker: str) -> None:
    """The extraction children of a killed sweep die with it (PR_SET_PDEATHSIG), though they run in their own
    sessions; if any survive, kill them so they do not outlive the test, and fail."""
    deadline = time.monotonic() + 10
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], "extraction children outlived the killed sweep"


def test_killed_sweep_resumes(history, tmp_path):
    repo, shas, _cases = history
    cases = tmp_path / "kill_cases.py"  # a private copy: its path marks this test's extraction children
    cases.write_text(_cases.read_text())
    db = tmp_path / "killed.db"
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}  # what the killed processes leave behind stays in tmp_path
    log = tmp_path / "killed.log"
    with open(log, "w") as stderr:
        proc = subprocess.Popen([*TGSTORE, *map(str, sweep_args(db, repo, cases, f"{shas[0]}~0..{shas[-1]}",
                                                                shas[0], jobs=1))],
                                stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    try:
        # kill it once the first commit is stored and the next one is checked out and being extracted
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                checked_out = list((tmp_path / "tmp").glob("tgstore-pkg-*/tree/tinygrad"))
                if rows(db, "SELECT count(*) FROM runs")[0][0] >= 1 and checked_out and processes_with(str(cases)):
                    break
            except sqlite3.Error:  # not created or not migrated yet
                pass
            time.sleep(0.1)
        assert proc.poll() is None, f"the sweep ended before it could be killed: {log.read_text()}"
        assert rows(db, "SELECT count(*) FROM runs")[0][0] >= 1, "no run was ingested in time"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert_no_orphans(str(cases))
    stored = rows(db, "SELECT count(*) FROM runs")[0][0]
    assert 1 <= stored < len(shas)
    assert list((tmp_path / "tmp").glob("tgstore-pkg-*"))  # the killed sweep's checkout is left behind ...
    resumed = tgstore(*sweep_args(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", shas[0]), env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count(" skipped ") == stored, resumed.stderr
    assert runs_by_sha(db) == expected_runs(shas)  # every commit exactly one ok run
    assert_consistent(db, repo)
    assert list((tmp_path / "tmp").glob("tgstore-*")) == []  # ... and gone: checkouts, bundles, every temporary dir


def test_failed_run_is_stored_and_retried(history, tmp_path):
    repo, shas, cases = history
    db = tmp_path / "timeout.db"
    proc = tgstore(*sweep_args(db, repo, cases, shas[1]), "--timeout", "0.5")
    assert proc.returncode == 1, proc.stderr
    assert "timeout" in proc.stderr
    assert rows(db, "SELECT status FROM runs") == [("timeout",)]
    assert_consistent(db, repo)
    proc = tgstore(*sweep_args(db, repo, cases, shas[1]))
    assert proc.returncode == 0, proc.stderr
    # the retry is the current run; the timed-out attempt is kept (failed_runs shows it), its id not reused
    assert rows(db, "SELECT id, status, is_current FROM runs ORDER BY id") == [(1, "timeout", 0), (2, "ok", 1)]
    assert {sha: [r for r in runs if r[0] == "ok"] for sha, runs in runs_by_sha(db).items()} == {
        shas[1]: expected_runs(shas)[shas[1]]}


def test_bisect_extracts_only_missing_commits(history, tmp_path):
    repo, shas, cases = history
    db = tmp_path / "bisect.db"
    proc = tgstore(*sweep_args(db, repo, cases, shas[0], shas[-1]))  # only the ends are stored
    assert proc.returncode == 0, proc.stderr
    proc = tgstore("bisect", "matmul", "--good", shas[0], "--bad", shas[-1], "--repo", repo, "--db", db,
                   "--cases", cases, "--renderers", "C")
    assert proc.returncode == 0, proc.stderr
    # shas[0..4]: the search looks at shas[2] (same) and shas[3] (differs), both extracted now
    assert proc.stdout.split()[0] == shas[3]
    assert "2025-01-04T12:00:00+00:00 tinygrad 0.14.0" in proc.stdout
    assert "2 extractions" in proc.stderr, proc.stderr
    assert set(runs_by_sha(db)) == {shas[0], shas[2], shas[3], shas[4]}
    # everything stored now: nothing to extract, same answer, kernel ASTs too
    proc = tgstore("bisect", "softmax", "--good", shas[0], "--bad", shas[-1], "--repo", repo, "--db", db,
                   "--cases", cases, "--renderers", "C", "--what", "ast")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == shas[3]
    assert "0 extractions" in proc.stderr
    assert_consistent(db, repo)


def test_bisect_errors(history, swept):
    repo, shas, cases = history
    db = swept[0]
    common = ["--repo", repo, "--db", db, "--cases", cases, "--renderers", "C"]
    for args, message in [
        (["nosuchcase", "--good", shas[0], "--bad", shas[-1]], "unknown case 'nosuchcase'"),
        (["matmul", "--good", shas[-1], "--bad", shas[0]], "is not an ancestor of"),
        (["matmul", "--good", shas[0], "--bad", shas[2]], "no difference to bisect"),
        (["matmul", "--good", "nosuchrev", "--bad", shas[2]], "unknown revision 'nosuchrev'"),
    ]:
        proc = tgstore("bisect", *args, *common)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert message in unwrapped(proc.stderr) and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_bad_rev_and_not_a_repo(history, tmp_path):
    repo, shas, cases = history
    db = tmp_path / "never.db"
    (empty := tmp_path / "submodules" / "tinygrad").mkdir(parents=True)  # what a clone without submodules has
    for args, message in [
        (sweep_args(db, repo, cases, f"{shas[0]}..nosuchrev"), "unknown revision 'nosuchrev'"),
        (sweep_args(db, repo, cases, shas[0], "v9.9.9"), "unknown revision 'v9.9.9'"),
        (sweep_args(db, repo, cases, f"{shas[-1]}..{shas[0]}"), "selects no commits"),
        (sweep_args(db, tmp_path, cases, "HEAD"), f"{tmp_path} is not a git repository"),
        (sweep_args(db, tmp_path / "nope", cases, "HEAD"), "does not exist"),
        (sweep_args(db, repo / "tinygrad", cases, "HEAD"), "not the top of a git repository"),
        (sweep_args(db, empty, cases, "HEAD"), "is empty (a submodule not checked out?)"),
    ]:
        proc = tgstore(*args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert message in unwrapped(proc.stderr) and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert not db.exists()  # nothing written


def test_bisect_steps_around_a_commit_git_cannot_check_out(history, tinygrad_release, tmp_path):
    """A clone missing an object of one commit's package (as tinygrad's own history has): that commit is untestable,
    not the end of the bisect."""
    _repo, _shas, cases = history
    repo = tmp_path / "tinygrad"
    (good,) = build_release_history(repo, [("0.12.0", "tinygrad 0.12.0")], tinygrad_release)
    lost = repo / "tinygrad" / "lost_in_the_clone.py"
    lost.write_text("# only in this commit; its object is deleted below\n")
    for date, subject in (("2025-01-02", "add a file"), ("2025-01-03", "remove it")):
        git(repo, "add", "--all")
        git(repo, "commit", "--quiet", "-m", subject,
            env={"GIT_AUTHOR_DATE": f"{date}T12:00:00+00:00", "GIT_COMMITTER_DATE": f"{date}T12:00:00+00:00"})
        if lost.exists():
            blob = git(repo, "rev-parse", "HEAD:tinygrad/lost_in_the_clone.py")
            lost.unlink()
    missing = git(repo, "rev-parse", "HEAD~1")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    shutil.rmtree(repo / "tinygrad")
    shutil.copytree(tinygrad_release("0.14.0") / "tinygrad", repo / "tinygrad",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "tinygrad 0.14.0",
        env={"GIT_AUTHOR_DATE": "2025-01-04T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-01-04T12:00:00+00:00"})
    bad = git(repo, "rev-parse", "HEAD")
    proc = tgstore("bisect", "matmul", "--good", good, "--bad", bad, "--repo", repo, "--db", tmp_path / "b.db",
                   "--cases", cases, "--renderers", "C")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == bad
    # extracted from what the clone holds, but the file sat where the import system looks: untestable, named
    assert f"{missing[:10]} is untestable: it could have read tinygrad/lost_in_the_clone.py" in proc.stderr
