"""`tgstore check --against REV --time`: the working tree's kernels and REV's timed on this machine, interleaved. On an
unchanged tree nothing is slower; with the kernels compiled at -O0 in the working tree, the slower kernel is listed,
`--fail-on slower` exits 1 and `--report md` says it in Markdown. Each round is one draw: the exact test over rounds
needs 4 rounds a side for 95% (5 for 99%), and with fewer a kernel slower in every round is unsure, not slower."""

from __future__ import annotations

import json
import shutil

import pytest
from cli import tgstore
from git_history import build_release_history

needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="timing compiles kernels with clang")

CASES = ("from tinygrad import Tensor\n\n\ndef case_matmul():\n"
         "    return Tensor.ones(128, 128).contiguous() @ Tensor.ones(128, 128).contiguous()\n")


@pytest.mark.slow
@needs_clang
def test_check_time_quiet_on_an_unchanged_tree_and_failing_on_a_slower_one(tmp_path, tinygrad_release):
    repo = tmp_path / "repo"
    (sha,) = build_release_history(repo, [("0.14.0", "release")], tinygrad_release)
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    stored = tgstore("ingest", "--db", db, "--tinygrad", repo, "--cases", cases, "--renderers", "C")
    assert stored.returncode == 0, stored.stderr
    check = ("check", "--db", db, "--against", sha[:10], "--tinygrad", repo, "--cases", cases, "--time",
             "--rounds", "4", "--confidence", "0.95")

    quiet = tgstore(*check, "--fail-on", "slower", "--json")
    assert quiet.returncode == 0, quiet.stderr
    speed = json.loads(quiet.stdout)["speed"]
    judged = [k for k in speed["kernels"] if k["verdict"] != "too short"]
    assert judged and not [k for k in judged if k["verdict"] == "slower"], speed
    assert all(len(k["ns"]) == len(k["base_ns"]) == 4 for k in judged)
    assert speed["smallest_p"] == pytest.approx(2 / 70) and speed["rounds_needed"] == 4

    compiler = repo / "tinygrad" / "runtime" / "support" / "compiler_cpu.py"
    compiler.write_text(compiler.read_text().replace("'-O2'", "'-O0'"))  # uncommitted: the working tree only
    slow = tgstore(*check, "--fail-on", "slower", "--report", "md")
    assert slow.returncode == 1, slow.stderr
    assert "**Output:** no kernel changed" in slow.stdout  # same source: only its speed changed
    (row,) = [line for line in slow.stdout.splitlines() if line.startswith("| matmul[2]")]
    assert float(row.split("|")[4].strip().rstrip("x")) > 1.5
    # every round slower: the exact test's least p, 2/70, printed to two digits
    assert float(row.split("|")[5]) == pytest.approx(2 / 70, abs=0.0005)
    # two rounds cannot reach 95% (the least p is 1/3): slower in both rounds, the kernel is unsure, and it says so
    few = tgstore(*check[:-4], "--rounds", "2", "--confidence", "0.95", "--fail-on", "slower")
    assert few.returncode == 0, few.stderr
    assert "unsure matmul[2]" in few.stdout and "--rounds 4 can" in few.stderr
    # the default --fail-on changed: the output did not change, so the check passes
    assert tgstore(*check).returncode == 0
    refused = tgstore("check", "--db", db, "--against", sha[:10], "--tinygrad", repo, "--cases", cases,
                      "--fail-on", "slower")
    assert refused.returncode == 2 and "needs --time" in refused.stderr
