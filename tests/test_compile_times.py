"""Compile times (--time, --compile-times): stored per kernel, renderer and pass with the timing session, shown by
`times --compile`, the compile_time_history query and the chart, and bisected with --metric compile."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli import rows, tgstore
from git_history import build_release_history, git

CASES = """\
from tinygrad import Tensor


def case_matmul():
    return Tensor.ones(32, 32).contiguous() @ Tensor.ones(32, 32).contiguous()


def case_sum():
    return Tensor.ones(8, 64).contiguous().sum(1)
"""


def test_compile_times_stored_with_the_session_not_the_results(tmp_path, tinygrad_release):
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    plain = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases,
                    "--renderers", "C,LLVM", "--stages", "none")
    assert plain.returncode == 0, plain.stderr
    results = rows(db, "SELECT count(*) FROM case_results")[0][0]
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases,
                   "--renderers", "C,LLVM", "--stages", "none", "--compile-times")
    assert proc.returncode == 0, proc.stderr
    # the run stays, its results unchanged: the compile times are a session's (no kernel was run: no warm-up)
    assert rows(db, "SELECT count(*) FROM case_results")[0][0] == results
    assert rows(db, "SELECT count(*), max(warmup IS NULL) FROM timing_sessions") == [(1, 1)]
    assert rows(db, "SELECT count(*) FROM kernel_timings")[0][0] == 0
    kernels = rows(db, "SELECT count(*) FROM schedule_items WHERE root_op = 'SINK'")[0][0]
    by_renderer = dict(rows(db, "SELECT renderer, count(*) FROM compile_times GROUP BY renderer"))
    assert by_renderer == {"C": kernels, "LLVM": kernels, "schedule": 2}
    for total, names, us in rows(db, "SELECT t.total_us, l.names, t.pass_us FROM compile_times t "
                                     "JOIN compile_pass_lists l ON l.id = t.pass_list_id"):
        names, us = json.loads(names), json.loads(us)
        assert len(names) == len(us) > 3 and total > 0 and min(us) >= 0
        # top-level passes run one after the other inside the total
        assert sum(u for (_n, depth), u in zip(names, us, strict=True) if depth == 0) <= total * 1.01 + 50
    names = {n for (n,) in rows(db, "SELECT json_extract(value, '$[0]') FROM compile_pass_lists, json_each(names)")}
    assert {"linearize/render", "schedule to linear"} <= names  # 0.14.0's lowering and scheduling passes

    doc = json.loads(tgstore("times", "matmul", "--db", db, "--compile", "--json").stdout)
    assert [k["renderer"] for k in doc["kernels"] if k["index"] < 0] == ["schedule"]
    lowered = [k for k in doc["kernels"] if k["index"] >= 0]
    assert {k["renderer"] for k in lowered} == {"C", "LLVM"} and all(k["total_us"] > 0 and k["passes"]
                                                                        for k in lowered)
    table = tgstore("times", "matmul", "--db", db, "--compile")
    assert table.returncode == 0 and "schedule" in table.stdout and "total: scheduling" in table.stdout
    refused = tgstore("times", "matmul", "--db", db, "--compile", "--against", "0.14.0")
    assert refused.returncode == 1 and "compile_time_history" in refused.stderr

    history = tgstore("query", "compile_time_history", "--db", db, "-p", "case_name=matmul", "--jsonl")
    assert history.returncode == 0, history.stderr
    found = [json.loads(line) for line in history.stdout.splitlines()]
    steps = {r["step"] for r in found}
    assert {"(scheduling)", "(lowering C)"} <= steps and any(s.startswith("lower: ") for s in steps)
    assert all(r["ms"] >= 0 for r in found)

    from tgstore.web import charts

    with sqlite3.connect(db) as conn:
        chart = charts.chart_data(conn, "compile", "matmul", "LLVM")
    assert chart.series["lowering LLVM"][0] > 0 and chart.series["scheduling"][0] > 0
    assert "<svg" in charts.render(chart)


@pytest.mark.slow
def test_bisect_metric_compile_finds_the_commit_that_made_lowering_slower(tmp_path, tinygrad_release):
    """0.14.0 trees with kernel optimisations off by default (NOOPT=1), then on again: lowering a 128x128 matmul's
    kernels takes several times as long (the optimiser's passes run). bisect --metric compile names that commit,
    extracting with --compile-times only (no kernel is run)."""
    repo = tmp_path / "repo"
    build_release_history(repo, [("0.14.0", "release")], tinygrad_release)
    helpers = repo / "tinygrad" / "helpers.py"
    original = helpers.read_text()
    helpers.write_text(original.replace('ContextVar("NOOPT", 0)', 'ContextVar("NOOPT", 1)'))
    subjects = ["no kernel optimisations", "docs 1", "optimise kernels again", "docs 2"]
    line = []
    for day, subject in enumerate(subjects, start=2):
        if subject == "optimise kernels again":
            helpers.write_text(original)
        else:
            with open(repo / "README.md", "a") as f:
                f.write(subject + "\n")
        date = f"2025-01-{day:02d}T12:00:00+00:00"
        git(repo, "commit", "--quiet", "-am", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        line.append(git(repo, "rev-parse", "HEAD"))
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\n\ndef case_matmul():\n"
                     "    return Tensor.ones(128, 128).contiguous() @ Tensor.ones(128, 128).contiguous()\n")
    db = tmp_path / "t.db"
    proc = tgstore("bisect", "matmul", "--metric", "compile", "--threshold", "100%", "--kernel", "2", "--good",
                   line[0], "--bad", line[-1], "--repo", repo, "--db", db, "--cases", cases, "--renderers", "C")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == line[2], (proc.stdout, proc.stderr)
    assert "slower to lower" in proc.stderr and "again, to confirm" in proc.stderr
    assert rows(db, "SELECT count(*) FROM kernel_timings")[0][0] == 0  # compile times only: nothing was run
