"""Skip by what ran (issue 30): a sweep copies the run of a commit's parent when the commit changes no file that run
read, extracts it otherwise, and the copy holds what an extraction stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history, git
from test_sweep import CASES

pytestmark = pytest.mark.slow


def commit(repo: Path, subject: str, day: int) -> str:
    date = f"2025-01-{day:02d}T12:00:00+00:00"
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


def sweep(db: Path, repo: Path, cases: Path, rev: str, *extra: str):
    proc = tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C", "--stages", "none",
                   "--rev", rev, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc


CASE_ROWS = """SELECT k.name, cr.hash, rc.status, ms.hash, d.hash FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN case_results cr ON cr.id = rc.case_result_id LEFT JOIN match_sets ms ON ms.id = rc.match_set_id
LEFT JOIN blobs d ON d.id = rc.debug_blob_id WHERE rc.run_id = ? ORDER BY k.name"""


CASE_ROWS = """SELECT k.name, cr.hash, rc.status, ms.hash, d.hash FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN case_results cr ON cr.id = rc.case_result_id LEFT JOIN match_sets ms ON ms.id = rc.match_set_id
LEFT JOIN blobs d ON d.id = rc.debug_blob_id WHERE rc.run_id = ? ORDER BY k.name"""


def stored(db: Path) -> dict[str, tuple]:
    """Per commit: its run's status, case results (case, result hash, status), pattern set, tree hash, version."""
    found = {}
    for sha, run_id, status, patterns, tree_hash, version in rows(
            db, "SELECT c.sha, r.id, r.status, ps.hash, c.tree_hash, c.version FROM runs r JOIN tinygrad_commits c "
                "ON c.id = r.commit_id LEFT JOIN pattern_sets ps ON ps.id = r.pattern_set_id WHERE r.is_current"):
        cases = rows(db, CASE_ROWS, run_id)
        found[sha] = (status, cases, patterns, tree_hash, version)
    return found


def test_a_commit_that_changes_only_files_the_run_did_not_read_is_copied(tinygrad_release, tmp_path):
    repo = tmp_path / "tinygrad"
    (first,) = build_release_history(repo, [("0.14.0", "tinygrad 0.14.0")], tinygrad_release)
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "skip.db"
    sweep(db, repo, cases, first)
    ((text,),) = rows(db, "SELECT b.text FROM runs r JOIN blobs b ON b.id = r.inputs_blob_id")
    inputs = json.loads(text)
    read = set(inputs["files"])
    assert {"tinygrad/__init__.py", "tinygrad/tensor.py"} <= read
    package = sorted(p.relative_to(repo).as_posix() for p in (repo / "tinygrad").rglob("*.py"))
    unread = [p for p in package if p not in read]
    assert unread, "the run read every file of the package"
    # a file the run did not read changes: copied
    with open(repo / unread[0], "a") as f:
        f.write("# an edit no extraction reads\n")
    not_read = commit(repo, f"edit {unread[0]}", 2)
    # a file the run read changes (a comment: the output stays, but only an extraction can say so): extracted
    with open(repo / "tinygrad" / "tensor.py", "a") as f:
        f.write("# an edit the extraction reads\n")
    read_edit = commit(repo, "edit tinygrad/tensor.py", 3)
    # a new module where the run loaded modules from: an import could find it, so extracted
    (repo / "tinygrad" / "shadowing_module.py").write_text("X = 1\n")
    appeared = commit(repo, "add tinygrad/shadowing_module.py", 4)
    proc = sweep(db, repo, cases, f"{first}..{appeared}")
    copies = rows(db, "SELECT c.sha, r.copied_from, r.copy_reason, r.inputs_blob_id IS NOT NULL FROM runs r "
                      "JOIN tinygrad_commits c ON c.id = r.commit_id WHERE r.copied_from IS NOT NULL")
    assert copies == [(not_read, first, f"it changes no file {first}'s run read", 1)], proc.stderr
    extracted = rows(db, "SELECT c.sha FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                         "WHERE r.copied_from IS NULL ORDER BY c.git_position")
    assert extracted == [(first,), (read_edit,), (appeared,)]
    assert "1 of them copied" in proc.stderr.replace("\n", " "), proc.stderr
    # every commit extracted (--no-skip) stores the same facts, the copy's commit row included
    full = tmp_path / "full.db"
    proc = sweep(full, repo, cases, f"{first}~0..{appeared}", "--rev", first, "--no-skip")
    assert rows(full, "SELECT count(*) FROM runs WHERE copied_from IS NULL") == [(4,)]
    assert stored(db) == stored(full)
    facts = stored(db)
    assert facts[not_read][3] != facts[first][3]  # its own tree hash, though not extracted
    assert facts[read_edit][1] == facts[not_read][1]  # a comment: the same output, found by extracting
