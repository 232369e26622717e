"""History order on a real git repository whose committer dates use mixed timezone offsets, so that ordering by the
date text, or even by UTC time, disagrees with git's first-parent line (issue: history you can trust)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history

from tgstore.store.commits import to_utc, version_key

MATMUL = '''from tinygrad import Tensor


def case_matmul():
    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)
'''
SOFTMAX = '''from tinygrad import Tensor


def case_softmax():
    return Tensor.empty(4, 16).softmax(axis=-1)
'''
HISTORY = [("0.12.0", "release 0.12"), ("0.14.0", "release 0.14"), (None, "readme only")]
# git order c1, c2, c3; date text order c2, c3, c1; UTC order c3 (2025-02-28T21:00Z), c1 (03:00Z), c2 (15:00Z)
DATES = ["2025-03-01T12:00:00+09:00", "2025-03-01T10:00:00-05:00", "2025-03-01T11:00:00+14:00"]


@pytest.fixture(scope="module")
def mixed_zones(tmp_path_factory, tinygrad_release) -> tuple[Path, list[str], Path]:
    """(db, shas oldest first, repo): the three commits swept with the matmul suite, then c3 once more with a
    softmax suite, and the 0.13.0 release (no git) ingested too."""
    base = tmp_path_factory.mktemp("zones")
    repo = base / "tinygrad"
    shas = build_release_history(repo, HISTORY, tinygrad_release, dates=DATES)
    matmul, softmax = base / "matmul.py", base / "softmax.py"
    matmul.write_text(MATMUL)
    softmax.write_text(SOFTMAX)
    db = base / "zones.db"
    common = ["--db", db, "--renderers", "C", "--repo", repo]
    proc = tgstore("ingest", *common, "--cases", matmul, "--rev", f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0],
                   "-j", "2")
    assert proc.returncode == 0, proc.stderr
    proc = tgstore("ingest", *common, "--cases", softmax, "--rev", shas[2])
    assert proc.returncode == 0, proc.stderr
    proc = tgstore("ingest", "--db", db, "--renderers", "C", "--cases", matmul, "--tinygrad",
                   tinygrad_release("0.13.0"))
    assert proc.returncode == 0, proc.stderr
    return db, shas, repo


def test_dates_and_versions_in_a_form_that_sorts() -> None:
    assert [to_utc(d) for d in DATES] == ["2025-03-01T03:00:00Z", "2025-03-01T15:00:00Z", "2025-02-28T21:00:00Z"]
    assert to_utc("not a date") is None and to_utc(None) is None
    versions = ["0.9.2", "0.10.0rc1", "0.10.0", "0.10.0.post1", "0.10.3", "0.11.0", "0.14.0"]
    assert sorted(versions, key=version_key) == versions
    assert version_key("v0.12.0") == version_key("0.12.0") and version_key("dirty") is None


def test_commits_carry_their_first_parent_position_and_utc_time(mixed_zones) -> None:
    db, shas, _repo = mixed_zones
    stored = rows(db, "SELECT sha, git_position, committed_utc FROM tinygrad_commits WHERE sha NOT LIKE 'tree:%' "
                      "ORDER BY git_position")
    assert stored == [(shas[0], 1, "2025-03-01T03:00:00Z"), (shas[1], 2, "2025-03-01T15:00:00Z"),
                      (shas[2], 3, "2025-02-28T21:00:00Z")]


def test_history_order_is_git_order_with_the_release_placed_by_version(mixed_zones) -> None:
    db, shas, _repo = mixed_zones
    ranked = rows(db, "SELECT sha, version FROM v_commits ORDER BY history_rank")
    assert [sha if not sha.startswith("tree:") else version for sha, version in ranked] == [
        shas[0], "0.13.0", shas[1], shas[2]]
    # `tgstore runs` lists in that order (plain columns in a pipe)
    listing = tgstore("runs", "--db", db, "--jsonl")
    assert listing.returncode == 0, listing.stderr
    listed = [json.loads(line) for line in listing.stdout.splitlines()]
    assert [r["sha"][:12] if not r["sha"].startswith("tree:") else r["version"] for r in listed] == [
        shas[0][:12], "0.13.0", shas[1][:12], shas[2][:12], shas[2][:12]]


def test_source_history_shows_one_change_where_the_source_changed_once(mixed_zones) -> None:
    db, shas, _repo = mixed_zones
    proc = tgstore("query", "source_history", "-p", "case_name=matmul", "-p", "renderer=C", "--db", db, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    history = [(r["sha"] if not r["sha"].startswith("tree:") else r["version"], r["change"])
               for r in map(json.loads, proc.stdout.splitlines())]
    # matmul's C source changed once, from 0.12 to 0.13, and 0.14 renders it as 0.13 does; by date text or UTC time
    # the same four runs would show two or three changes
    assert history == [(shas[0], "first"), ("0.13.0", "changed")]


def test_pattern_first_seen_names_the_commit_that_introduced_the_rule(mixed_zones) -> None:
    db, shas, _repo = mixed_zones
    proc = tgstore("query", "patterns_changed", "-p", "a=0.13.0", "-p", f"b={shas[1]}", "--db", db, "--jsonl")
    added = [r for r in map(json.loads, proc.stdout.splitlines()) if r["change"] == "added"
             and r["function_name"] not in (None, "<lambda>")]
    assert added, "0.14 added named rules over 0.13"
    name = added[0]["function_name"]
    proc = tgstore("query", "pattern_first_seen", "-p", f"pattern={name}", "--db", db, "--jsonl")
    first = [r for r in map(json.loads, proc.stdout.splitlines()) if r["upat"] == added[0]["upat"]]
    assert [r["first_sha"] for r in first] == [shas[1]]


def test_a_commit_with_the_same_tinygrad_changes_no_rules_whatever_the_suite(mixed_zones) -> None:
    """c3 only edits the README: its tinygrad's rules are c2's even though its last run used another suite (every
    compiler module is imported and every matcher the suite builds is recorded, matched or not)."""
    db, shas, _repo = mixed_zones
    proc = tgstore("query", "patterns_changed", "-p", f"a={shas[1]}", "-p", f"b={shas[2]}", "--db", db, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    changes = {r["change"] for r in map(json.loads, proc.stdout.splitlines())}
    assert changes <= {"built", "not built"}, changes


def test_pattern_first_seen_counts_commits_not_copies_of_a_rule(releases_db: Path) -> None:
    """Rules built in a loop (one UPat text for several ops) are several patterns rows at one commit; the rule is
    present at a commit once, whatever the number of copies."""
    conn = sqlite3.connect(releases_db)
    expected = dict(((m, u, f), n) for m, u, f, n in conn.execute(
        "SELECT matcher, upat, function_name, count(DISTINCT sha) FROM v_commit_patterns WHERE upat LIKE '%GroupOp%' "
        "GROUP BY matcher, upat, function_name"))
    copies = conn.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM v_commit_patterns WHERE upat LIKE "
                          "'%GroupOp%' GROUP BY sha, matcher, upat, function_name)").fetchone()[0]
    conn.close()
    assert copies > 1, "some rule has copies at one commit, so a count of rows would be wrong"
    proc = tgstore("query", "pattern_first_seen", "-p", "pattern=GroupOp", "--db", releases_db, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    got = {(r["matcher"], r["upat"], r["function_name"]): r["commits_present"]
           for r in map(json.loads, proc.stdout.splitlines())}
    assert got == expected
