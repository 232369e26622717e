"""port-queue on a real git history whose commits are tinygrad releases and README edits: --fill extracts only the
commits that make a change exact, names the commit that changed tinygrad, and never a commit outside tinygrad/."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from cli import tgstore
from git_history import build_release_history

HISTORY = [("0.13.0", "tinygrad 0.13.0"), (None, "docs: readme edit one"), (None, "docs: readme edit two"),
           ("0.14.0", "tinygrad 0.14.0"), (None, "docs: readme edit three")]


@pytest.fixture(scope="module")
def history(tmp_path_factory, tinygrad_release) -> tuple[Path, list[str]]:
    base = tmp_path_factory.mktemp("portqueue")
    return base / "tinygrad", build_release_history(base / "tinygrad", HISTORY, tinygrad_release)


def test_fill_names_the_commit_that_changed_a_pass(history, tmp_path: Path) -> None:
    from tgstore.cases import suite_file
    from tgstore.svod.portqueue import case_file_for

    repo, shas = history
    db = tmp_path / "pq.db"
    cases = case_file_for(["softmax", "cat_stack"], [suite_file("builtin")])  # cat_stack: 2 kernels in 0.13, 1 in 0.14
    ends = tgstore("ingest", "--db", db, "--repo", repo, "--rev", shas[0], "--rev", shas[-1], "--cases", cases,
                   "--renderers", "C", "--stages", "C")
    assert ends.returncode == 0, ends.stderr
    before = json.loads(tgstore("port-queue", "softmax", "cat_stack", "--from", shas[0], "--to", shas[-1], "--repo",
                                repo, "--json", "--db", db).stdout)
    assert before["commits"] == [] and [(g["unstored"], bool(g["changes"])) for g in before["gaps"]] == [(3, True)]
    # the gap's fill command runs as printed and fills it like for like (the named cases, what the endpoints recorded)
    command = before["gaps"][0]["fill"]
    assert command == (f"tgstore port-queue softmax cat_stack --from {shas[0][:12]} --to {shas[-1][:12]} --repo "
                       f"{repo} --fill")
    proc = tgstore(*shlex.split(command)[1:], "--db", db)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(tgstore("port-queue", "softmax", "cat_stack", "--from", shas[0], "--to", shas[-1], "--repo",
                               repo, "--json", "--db", db).stdout)
    assert [c["sha"] for c in found["commits"]] == [shas[3]]  # 0.14.0, not a README edit around it
    assert all(c["touches_tinygrad"] for c in found["commits"])
    assert not [g for g in found["gaps"] if g["changes"]]
    assert "--fill: 2 commits extracted" in proc.stderr  # the middle commit, then the one next to the change
    changes = found["commits"][0]["changes"]
    assert changes and all(c["svod_stage"] for c in changes)
    per_kernel = [(c["case"], c["kernel"], c.get("renderer"), c.get("scope")) for c in changes
                  if c["change"] == "changed" and c.get("scope")]
    assert len(per_kernel) == len(set(per_kernel))  # one cause per kernel; later passes counted as knock-on
    # a kernel that went is reported, not skipped (its passes have nothing to be compared with)
    assert [(c["case"], c["kernel"], c["renderer"], c["pass"]) for c in changes if c["change"] == "kernel removed"] \
        == [("cat_stack", 1, "C", None)]


def test_every_renderer_like_for_like_with_commands_that_run_and_a_report(history, tmp_path: Path) -> None:
    """Endpoints recorded C and LLVM: --fill extracts both (what the endpoints hold), changes are named per
    renderer, every printed diff command runs as printed, and the md/html reports name the commit. A commit stored
    only with another suite is a gap with its reason, never a change."""
    import os
    import subprocess
    import sys

    from tgstore.cases import suite_file
    from tgstore.svod.portqueue import case_file_for

    repo, shas = history
    db = tmp_path / "pq.db"
    cases = case_file_for(["softmax"], [suite_file("builtin")])
    ends = tgstore("ingest", "--db", db, "--repo", repo, "--rev", shas[0], "--rev", shas[-1], "--cases", cases,
                   "--renderers", "C,LLVM", "--stages", "C,LLVM")
    assert ends.returncode == 0, ends.stderr
    proc = tgstore("port-queue", "softmax", "--from", shas[0], "--to", shas[-1], "--repo", repo, "--fill", "--json",
                   "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "--fill: extracting C, LLVM passes" in proc.stderr
    found = json.loads(proc.stdout)
    assert [c["sha"] for c in found["commits"]] == [shas[3]]
    renderers = {c["renderer"] for c in found["commits"][0]["changes"] if c.get("renderer")}
    assert renderers == {"C", "LLVM"}
    # the rules involved, from the rewrite steps the endpoints recorded (ingest's default --rewrites) and the fill too
    with_rules = [c for c in found["commits"][0]["changes"] if c.get("rules")]
    assert with_rules, found["commits"][0]["changes"]
    assert all(rule[0] in "+-(" and ":" in rule for c in with_rules for rule in c["rules"] if rule[0] != "(")
    for command in {c["diff"] for c in found["commits"][0]["changes"]
                    if not c.get("canonical") and c.get("scope") != "schedule"}:
        args = shlex.split(command)
        assert args[:2] == ["tgstore", "diff"]
        shown = tgstore(*args[1:], "--db", db)
        assert shown.returncode == 0, (command, shown.stderr)
    # a canonical document's or a scheduler pass's change is shown by diffing the two documents or pass lists
    # (`tgstore diff` compares neither: it would print no change)
    documents = {c["diff"] for c in found["commits"][0]["changes"]
                 if c.get("canonical") or c.get("scope") == "schedule"}
    assert documents and all(command.startswith("diff <(tgstore ") for command in documents)
    for command in documents:
        shown = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env={
            **os.environ, "TGSTORE_DB": str(db), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
        assert shown.returncode == 1 and shown.stdout, (command, shown.returncode, shown.stderr)  # 1: they differ
    only_c = json.loads(tgstore("port-queue", "softmax", "--from", shas[0], "--to", shas[-1], "--repo", repo,
                                "--renderers", "C", "--json", "--db", db).stdout)
    assert {c["renderer"] for c in only_c["commits"][0]["changes"] if c.get("renderer")} == {"C"}
    md = tgstore("port-queue", "softmax", "--from", shas[0], "--to", shas[-1], "--repo", repo, "--report", "md",
                 "--db", db).stdout
    assert f"## {shas[3][:12]}" in md and "| softmax |" in md
    page = tgstore("port-queue", "softmax", "--from", shas[0], "--to", shas[-1], "--repo", repo, "--report", "html",
                   "--db", db).stdout
    assert f"id='c{shas[3][:12]}'" in page and page.rstrip().endswith("</html>")


def test_fill_compares_with_endpoints_recorded_another_way(history, tmp_path: Path) -> None:
    """Endpoints ingested with the porter's own case file and more renderers than --renderers names: --fill extracts
    the endpoints' renderers (else nothing it adds compares with them) and the endpoints again with the named cases
    only, then names the commit; nothing is left as a gap 'not compared'."""
    repo, shas = history
    db = tmp_path / "pq.db"
    own = tmp_path / "mine.py"  # another suite than port-queue's own file: same case, other bytes
    own.write_text("from tinygrad import Tensor\n\n\ndef case_softmax():\n"
                   "    return Tensor.empty(4, 16).softmax(axis=-1)\n")
    ends = tgstore("ingest", "--db", db, "--repo", repo, "--rev", shas[0], "--rev", shas[-1], "--cases", own,
                   "--renderers", "C,LLVM", "--stages", "C")
    assert ends.returncode == 0, ends.stderr
    proc = tgstore("port-queue", "softmax", "--from", shas[0], "--to", shas[-1], "--repo", repo, "--fill",
                   "--renderers", "C", "--json", "--db", db)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert [c["sha"] for c in found["commits"]] == [shas[3]], (found, proc.stderr)
    assert not [g for g in found["gaps"] if g.get("reason") or g["changes"]]
    assert proc.stderr.count("(an endpoint, again with the named cases only and renderers C,LLVM") == 2
    assert "--fill: 4 commits extracted" in proc.stderr
