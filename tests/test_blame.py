"""Blame by pass, rule attribution and bisect by pass (tgstore blame / why / bisect --what pass:NAME).

The fast tests read real source text and a real git repository's diff; the slow ones sweep a small history whose
commits are tinygrad releases (tests/git_history.py: 0.13.0, a README edit, 0.14.0, two README edits), storing only
its two ends, and check blame against a plain comparison of the stored graphs (tests/blame_against_graphs.py), the
attribution against the releases' real diff, and bisect by pass against its extraction count."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from blame_against_graphs import check, plain_changes
from cli import rows, tgstore
from git_history import build_release_history, git
from test_sweep import CASES
from web_server import chromium_available

from tgstore.compare.rewrite_steps import PassSteps, Step
from tgstore.compare.rule_diff import rule_diff
from tgstore.git import diff_hunks, file_at
from tgstore.history.attribution import rank
from tgstore.history.rule_source import rule_scopes

needs_chromium = pytest.mark.skipif(not chromium_available(), reason="chromium is not installed")
SOURCE = '''from tinygrad.uop.ops import UOp, PatternMatcher, UPat, Ops
from tinygrad.helpers import FAST_THING

def fold_it(x):
  return x.src[0]

class Helper:
  def shrink(self, x):
    return x

gep_pushing = PatternMatcher([
  (UPat(Ops.GEP, name="g"), lambda g: g.src[0]),
  (UPat(Ops.ADD, name="x"),
   fold_it),
  (UPat(Ops.MUL, name="x"), lambda x: Helper.shrink(x)),
])

def late_patterns(fast_thing):
  pat = [(UPat(Ops.SUB, name="x"), fold_it)]
  if fast_thing:
    pat += [(UPat(Ops.CDIV, name="x"), lambda x: x)]
  return PatternMatcher(pat)
'''


def test_a_rule_is_placed_in_its_source_rule_matcher_helpers_guard():
    scopes = rule_scopes("tinygrad/x.py", SOURCE, 14)  # the ADD rule's second line
    found = {(s.kind, s.name): (s.start, s.end) for s in scopes}
    assert found[("rule", "line 13")] == (13, 14)  # the whole element of the list, not only its line
    assert found[("matcher", "gep_pushing")] == (11, 16)
    assert found[("helper", "fold_it")] == (4, 5)
    method = {(s.kind, s.name): (s.start, s.end) for s in rule_scopes("tinygrad/x.py", SOURCE, 15)}
    assert method[("helper", "Helper.shrink")] == (8, 9)  # a class's method the rule calls
    guarded = {(s.kind, s.name) for s in rule_scopes("tinygrad/x.py", SOURCE, 21)}
    assert ("guard", "fast_thing") in guarded and ("function", "late_patterns") in guarded
    assert ("guard", "fast_thing") not in {(s.kind, s.name) for s in rule_scopes("tinygrad/x.py", SOURCE, 19)}


def test_a_helper_imported_from_another_tinygrad_module_is_read_there():
    other = "def const(x):\n  return x\n"
    text = "from tinygrad.uop.ops import const, PatternMatcher\npm = PatternMatcher([\n  (UPat(), const),\n])\n"
    scopes = rule_scopes("tinygrad/a.py", text, 3, lambda path: other if path == "tinygrad/uop/ops.py" else None)
    assert [(s.kind, s.path, s.start, s.end) for s in scopes if s.kind == "helper"] == [
        ("helper", "tinygrad/uop/ops.py", 1, 2)]


def _repo_with_edit(tmp_path: Path, before: str, after: str) -> tuple[Path, str, str]:
    repo = tmp_path / "repo"
    (repo / "tinygrad").mkdir(parents=True)
    git(repo, "init", "--quiet")
    (repo / "tinygrad" / "x.py").write_text(before)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "a")
    a = git(repo, "rev-parse", "HEAD")
    (repo / "tinygrad" / "x.py").write_text(after)
    git(repo, "commit", "--quiet", "-am", "b")
    return repo, a, git(repo, "rev-parse", "HEAD")


def _steps(*rules: tuple[int, str, str]) -> PassSteps:
    """A pass's recorded steps: (line, UPat source, the result's hash) each."""
    return PassSteps(0, "p", 0, "C", None, len(rules), 100,
                     [Step(i, "tinygrad/x.py", line, upat, {"hash": "in"}, {"hash": out})
                      for i, (line, upat, out) in enumerate(rules)], True)


def test_the_rule_whose_helper_a_hunk_edits_ranks_first(tmp_path):
    after = SOURCE.replace("return x.src[0]", "return x.src[1]")
    repo, a, b = _repo_with_edit(tmp_path, SOURCE, after)
    hunks = diff_hunks(repo, a, b)
    assert [(h.path, h.old_start, h.old_count, h.new_start, h.new_count) for h in hunks] == [
        ("tinygrad/x.py", 5, 1, 5, 1)]
    gep = '(UPat(Ops.GEP, name="g"), lambda g: g.src[0]),'
    add = '(UPat(Ops.ADD, name="x"),'
    diff = rule_diff(_steps((12, gep, "g1"), (13, add, "a1")),
                     _steps((12, gep, "g2"), (13, add, "a2"), (13, add, "a3")), {}, {})
    assert [(c.status, c.key[1]) for c in diff.changes] == [("count changed", add), ("matched differently", gep)]
    ranked = rank(diff.changes, hunks, lambda p: file_at(repo, a, p), lambda p: file_at(repo, b, p))
    assert ranked[0].change.key[1] == add and ranked[0].touches[0].scope.kind == "helper"
    assert "helper fold_it()" in ranked[0].why
    assert ranked[1].touches == [] and "no hunk" in ranked[1].why  # the GEP rule calls nothing the hunk edits
    assert ranked[0].score > ranked[1].score


def test_a_setting_that_turns_a_guarded_rule_off_is_named(tmp_path):
    repo, a, b = _repo_with_edit(tmp_path, "FAST_THING = ContextVar('FAST_THING', 1)\n",
                                 "FAST_THING = ContextVar('FAST_THING', 0)\n")
    (repo / "tinygrad" / "y.py").write_text(SOURCE)
    hunks = diff_hunks(repo, a, b)
    rule = "(UPat(Ops.CDIV, name=\"x\"), lambda x: x)]"
    diff = rule_diff(_steps((21, rule, "c")), _steps(), {}, {})
    diff.changes[0].a.file = "tinygrad/y.py"
    ranked = rank(diff.changes, hunks, lambda p: SOURCE if p == "tinygrad/y.py" else None, lambda p: None)
    assert diff.changes[0].status == "disappeared"
    assert ranked[0].touches and ranked[0].touches[0].scope.kind == "guard"
    assert "fast_thing" in ranked[0].why


def test_blame_rejects_a_bad_spelling_with_exit_2(tmp_path):
    proc = tgstore("blame", "softmax", "--kernel", "0", "--spelling", "nope", "--db", tmp_path / "none.db")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--spelling" in proc.stderr


# a history whose ends are stored and whose middle is not: 0.13.0, README, 0.14.0, README, README
HISTORY = [("0.13.0", "tinygrad 0.13.0"), (None, "docs"), ("0.14.0", "tinygrad 0.14.0"), (None, "more docs"),
           (None, "even more docs")]


@pytest.fixture(scope="module")
def history(tmp_path_factory, tinygrad_release):
    where = tmp_path_factory.mktemp("blame")
    repo = where / "tinygrad"
    shas = build_release_history(repo, HISTORY, tinygrad_release)
    cases = where / "cases.py"
    cases.write_text(CASES)
    db = where / "blame.db"
    proc = tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C", "--stages", "C",
                   "--rev", shas[0], "--rev", shas[-1])
    assert proc.returncode == 0, proc.stderr
    return repo, shas, cases, db


@pytest.mark.slow
def test_blame_lists_exactly_the_changes_a_plain_comparison_finds(history):
    repo, shas, _cases, db = history
    proc = tgstore("blame", "softmax", "--kernel", "0", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["commits"] == 2 and found["changes"]
    for change in found["changes"]:
        assert change["before"]["sha"] == shas[0] and change["after"]["sha"] == shas[-1]
        assert change["gap"] == 3 and change["bisect"].startswith("tgstore bisect CASE --what pass:")
        assert change["diff"].startswith("---")
    assert found["gaps"] == [{"before": found["first"], "after": found["last"], "missing": 3}]
    only_plain, only_blame, both = check(db)
    assert (only_plain, only_blame) == (set(), set()) and both > 0
    assert {c[3] for c in plain_changes(db) if c[0] == "softmax" and c[2] == 0} == {
        c["pass"] for c in found["changes"]}
    text = tgstore("blame", "softmax", "--kernel", "0", "--db", db)
    assert "3 commits between" in text.stdout and "tgstore bisect softmax --what pass:" in text.stdout


@pytest.mark.slow
def test_why_names_rules_and_the_hunks_of_the_releases_diff(history):
    repo, shas, _cases, db = history
    found = json.loads(tgstore("blame", "softmax", "--kernel", "0", "--db", db, "--json").stdout)
    explained = []
    for change in found["changes"]:
        proc = tgstore("why", "softmax", "--kernel", "0", "--pass", change["pass"], "--occurrence",
                       change["occurrence"], "--commit", shas[-1][:12], "--repo", repo, "--db", db, "--json")
        assert proc.returncode == 0, proc.stderr
        why = json.loads(proc.stdout)
        assert why["changed"] and why["before"]["sha"] == shas[0]
        explained += [r for r in why["rules"] if r["hunks"]]
    assert explained, "no rule of any changed pass has a hunk of the 0.13.0 -> 0.14.0 diff"
    real = subprocess.run(["git", "-C", str(repo), "diff", "-U0", shas[0], shas[-1], "--", "tinygrad"],
                          capture_output=True, text=True, check=True).stdout
    for rule in explained:
        for hunk in rule["hunks"]:
            assert hunk["text"].splitlines()[0] in real  # a real hunk header of the diff
            scope = hunk["scope"]
            lines = range(hunk["old_start"], hunk["old_start"] + max(hunk["old_count"], 1)) if hunk["side"] == "a" \
                else range(hunk["new_start"], hunk["new_start"] + max(hunk["new_count"], 1))
            assert scope["kind"] == "guard" or (scope["start"] <= lines[-1] and lines[0] <= scope["end"])


@pytest.mark.slow
def test_bisect_by_pass_extracts_the_case_alone_at_most_log2_plus_one_times(history, tmp_path):
    repo, shas, cases, db = history
    copy = tmp_path / "bisect.db"
    copy.write_bytes(db.read_bytes())
    changed = json.loads(tgstore("blame", "softmax", "--kernel", "0", "--db", copy, "--json").stdout)["changes"]
    pass_name = changed[0]["pass"]
    runs_before = rows(copy, "SELECT count(*) FROM runs")[0][0]
    proc = tgstore("bisect", "softmax", "--what", f"pass:{pass_name}", "--good", shas[0], "--bad", shas[-1],
                   "--repo", repo, "--cases", cases, "--renderers", "C", "--db", copy)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == shas[2]  # 0.14.0's commit, in the middle of the unstored stretch
    extractions = rows(copy, "SELECT count(*) FROM runs")[0][0] - runs_before  # counted by the database
    n = len(shas) - 1
    assert 1 <= extractions <= math.ceil(math.log2(n)) + 1
    assert f"{extractions} extraction" in proc.stderr
    suites = rows(copy, "SELECT DISTINCT s.name FROM runs r JOIN suites s ON s.id = r.suite_id WHERE r.id > ?",
                  runs_before)
    assert suites and all(name.startswith("bisect_softmax_") for (name,) in suites)  # a one-case suite
    one_case = rows(copy, 'SELECT DISTINCT "case" FROM v_run_cases WHERE run_id > ?', runs_before)
    assert one_case == [("softmax",)]  # only that case, with passes for C only
    assert rows(copy, "SELECT DISTINCT renderer FROM v_passes WHERE run_id > ? AND scope = 'lower'",
                runs_before) == [("C",)]


@pytest.mark.slow
def test_bisect_by_pass_says_when_the_ends_agree(history):
    repo, shas, cases, db = history
    proc = tgstore("bisect", "softmax", "--what", "pass:no such pass", "--good", shas[0], "--bad", shas[-1],
                   "--repo", repo, "--cases", cases, "--renderers", "C", "--db", db)
    assert proc.returncode == 1 and "no difference to bisect" in proc.stderr


@pytest.fixture(scope="module")
def site(history, tmp_path_factory):
    from web_server import start_server, stop_server

    repo, _shas, _cases, db = history
    saved = os.environ.get("TGSTORE_REPO")
    os.environ["TGSTORE_REPO"] = str(repo)  # the pages read the diff from the repository the sweep used
    try:
        running = start_server(db, tmp_path_factory.mktemp("blame-web") / "serve.log")
    finally:
        if saved is None:
            os.environ.pop("TGSTORE_REPO")
        else:
            os.environ["TGSTORE_REPO"] = saved
    yield running
    stop_server(running)


@pytest.fixture
def browser(tmp_path):
    from browser import Browser

    opened = Browser(tmp_path / "profile")
    yield opened
    opened.close()


def _changed_pass(db: Path, repo: Path, sha: str) -> tuple[str, int]:
    """A pass of softmax kernel 0 that blame lists and whose change a rule with a hunk explains, and its position
    at `sha`."""
    found = json.loads(tgstore("blame", "softmax", "--kernel", "0", "--db", db, "--json").stdout)["changes"]
    for change in found:
        if change["occurrence"] != 1 or change["pass_position_after"] is None:
            continue
        why = json.loads(tgstore("why", "softmax", "--kernel", "0", "--pass", change["pass"], "--commit", sha,
                                 "--repo", repo, "--db", db, "--json").stdout)
        if any(r["hunks"] for r in why["rules"]):
            return change["pass"], change["pass_position_after"]
    raise AssertionError("no change of softmax kernel 0 has a rule with a hunk")


@pytest.mark.slow
@needs_chromium
def test_the_workbench_strip_links_to_the_pass_diff_with_its_rules_and_hunks(history, site, browser):
    repo, shas, _cases, db = history
    name, position = _changed_pass(db, repo, shas[-1])
    browser.open(site.root + f"/-/kernel?case=softmax&kernel=0&commit={shas[-1]}&renderer=C&pass={position}")
    strip = browser.js("Array.from(document.querySelectorAll('.tgstore-pass-history a.tgstore-pass-change'))"
                       ".map(a => [a.textContent.trim(), a.getAttribute('href')])")
    assert len(strip) == 1 and strip[0][0].startswith(shas[-1][:10]) and "/-/passdiff?" in strip[0][1]
    assert "tgstore-gap" in browser.js("document.querySelector('a.tgstore-pass-change').className")
    browser.click("a.tgstore-pass-change")
    assert "/-/passdiff" in browser.url and f"pass={name.replace(' ', '+')}" in browser.url
    selected = browser.js("Array.from(document.querySelector('table.tgstore-passdiff tr.selected').cells)"
                          ".map(c => c.textContent.trim())")
    assert name in selected  # the row of that pass is the one selected
    rules = browser.js("Array.from(document.querySelectorAll('#pass-rules tr.tgstore-rule')).map(r => "
                       "r.cells[0].textContent.trim())")
    assert rules and set(rules) <= {"appeared", "disappeared", "count changed", "matched differently"}
    twin = site.get("/-/passdiff.json", **dict(parse_qsl(strip[0][1].split("?", 1)[1])))
    why = twin.json()["why"]
    assert [r["status"] for r in why["rules"][:20]] == rules
    hunks = browser.js("document.querySelectorAll('#pass-rules pre.tgstore-hunk').length")
    assert hunks == sum(min(len(r["hunks"]), 3) for r in why["rules"][:20])
    kernel_twin = site.get("/-/kernel.json", case="softmax", kernel="0", commit=shas[-1], renderer="C",
                           **{"pass": str(position)}).json()
    assert [c["after"]["sha"] for c in kernel_twin["pass_history"]] == [shas[-1]]
