"""`tgstore regressions` on a real timed history: a codegen speed-up and a same-source slowdown planted in a history
of 0.14.0 trees, timed on this (shared, noisy) machine, are found at their commits with their explanation, and
nothing else is; the statistics underneath (tgstore.stepfit) against values worked out by hand."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
from cli import tgstore
from git_history import build_release_history, git

from tgstore.compare.stepfit import Series, analyse, fits, mann_whitney

needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="timing compiles kernels with clang")

CASES = ("from tinygrad import Tensor\n\n\ndef case_matmul():\n"
         "    return Tensor.ones(128, 128).contiguous() @ Tensor.ones(128, 128).contiguous()\n")


def test_mann_whitney_against_the_textbook():
    # no overlap, 5 and 5: U = 0; the normal approximation with continuity correction gives z = 12 / sqrt(275/12)
    u, p = mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert u == 0 and p == pytest.approx(2 * 0.5 * math.erfc(12 / math.sqrt(275 / 12) / math.sqrt(2)))
    assert mann_whitney([6, 7, 8, 9, 10], [1, 2, 3, 4, 5])[0] == 25
    assert mann_whitney([1, 2, 3], [1, 2, 3]) == (4.5, 1.0)  # the same values: no evidence
    assert mann_whitney([], [1.0])[1] == 1.0


def test_exact_fit_and_step_detection_on_noisy_series():
    (cost1, one), (cost2, two) = fits([1.0, 1.0, 1.0, 5.0, 5.0], 2)
    assert one == [(0, 5)] and cost1 == 8.0 and two == [(0, 3), (3, 5)] and cost2 == 0.0
    rng = random.Random(7)
    levels = [100.0] * 4 + [40.0] * 4 + [120.0] * 4
    values = [v * math.exp(rng.gauss(0, 0.03)) for v in levels]
    values[1] *= 1.3  # one slow reading inside a level: an outlier, not two steps
    samples = [[v * (1 + abs(rng.gauss(0, 0.01))) for _ in range(8)] for v in values]
    found = analyse(Series(values, samples, 0.02))
    assert [s.index for s in found.steps] == [4, 8] and found.outliers in ([], [1])  # absorbed, or set apart
    assert found.steps[0].ratio == pytest.approx(0.4, rel=0.1) and found.steps[1].ratio == pytest.approx(3, rel=0.1)
    assert all(s.confidence > 0.99 for s in found.steps)
    flat = [100 * math.exp(rng.gauss(0, 0.03)) for _ in range(30)]
    assert analyse(Series(flat, [[v] * 5 for v in flat], 0.02)).steps == []


def commit(repo: Path, subject: str, day: int) -> str:
    date = f"2025-01-{day:02d}T12:00:00+00:00"
    git(repo, "commit", "--quiet", "-am", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
@needs_clang
def test_regressions_finds_the_planted_steps_and_nothing_else(tmp_path, tinygrad_release):
    """0.14.0 trees: kernels unoptimised (NOOPT on by default) for three commits, then optimised again (a speed-up
    whose source changed: codegen), then compiled with -O0 (a slowdown with the same source). One commit before the
    slowdown is not timed: that step is a gap, with the bisect command that narrows it."""
    repo = tmp_path / "repo"
    shas = build_release_history(repo, [("0.14.0", "release")], tinygrad_release)
    helpers = repo / "tinygrad" / "helpers.py"
    original = helpers.read_text()
    helpers.write_text(original.replace('ContextVar("NOOPT", 0)', 'ContextVar("NOOPT", 1)'))
    line = [commit(repo, "no kernel optimisations", 2)]
    readme = repo / "README.md"
    for day, subject in ((3, "docs 1"), (4, "docs 2")):
        readme.write_text(readme.read_text() + subject + "\n")
        line.append(commit(repo, subject, day))
    helpers.write_text(original)
    line.append(commit(repo, "optimise kernels again", 5))  # line[3]: faster, the source changed
    for day, subject in ((6, "docs 3"), (7, "docs 4")):
        readme.write_text(readme.read_text() + subject + "\n")
        line.append(commit(repo, subject, day))  # line[5] is not timed
    compiler = repo / "tinygrad" / "runtime" / "support" / "compiler_cpu.py"
    compiler.write_text(compiler.read_text().replace("'-O2'", "'-O0'"))
    line.append(commit(repo, "compile kernels without optimisation", 8))  # line[6]: slower, the same source
    for day, subject in ((9, "docs 5"), (10, "docs 6")):
        readme.write_text(readme.read_text() + subject + "\n")
        line.append(commit(repo, subject, day))
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    for rev in (f"{shas[0]}..{line[4]}", f"{line[5]}..{line[-1]}"):
        proc = tgstore("ingest", "--db", db, "--repo", repo, "--rev", rev, "--cases", cases, "--renderers", "C",
                       "--stages", "none", "--time", "--time-runs", "10")
        assert proc.returncode == 0, proc.stderr
    proc = tgstore("regressions", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    found = {(r["position"], r["good"], r["bad"], r["direction"], r["explanation"]) for r in report["regressions"]}
    # the matmul's reduce kernel (#2) and the case's kernels added up; the two copy kernels take ~3 us: not judged
    assert found == {(p, line[2], line[3], "faster", "codegen") for p in (2, None)} | {
        (p, line[4], line[6], "slower", "same source") for p in (2, None)}, report
    by_kernel = {(r["position"], r["direction"]): r for r in report["regressions"]}
    faster, slower = by_kernel[(2, "faster")], by_kernel[(2, "slower")]
    assert faster["exact"] and faster["commits_between"] == 0 and faster["bisect_command"] is None
    assert faster["ratio"] < 0.5 and "generated source" in faster["detail"]
    assert not slower["exact"] and slower["commits_between"] == 1 and slower["ratio"] > 1.5
    assert slower["bisect_command"].startswith(f"tgstore bisect matmul --metric time --good {line[4][:10]} "
                                               f"--bad {line[6][:10]} --kernel 2")
    assert slower["confidence"] > 0.99 and faster["confidence"] > 0.99
    assert slower["diff_command"] == f"tgstore diff {line[4][:10]} {line[6][:10]} --case matmul --stages"
    noise = {(n["position"]): n for n in report["noise"]}
    assert noise[2]["commits"] == len(line) - 1 and 0 < noise[2]["noise"] < 0.5

    since = json.loads(tgstore("regressions", "--db", db, "--json", "--since", line[3]).stdout)
    assert {(r["position"], r["bad"]) for r in since["regressions"]} == {(2, line[6]), (None, line[6])}
    text = tgstore("regressions", "--db", db, "--case", "matmul")
    assert text.returncode == 0 and f"{line[4][:10]}..{line[6][:10]} (gap: 1 commits between)" in text.stdout
    assert "narrow the gap: tgstore bisect matmul --metric time" in text.stdout
    unknown = tgstore("regressions", "--db", db, "--case", "nosuch")
    assert unknown.returncode == 1 and "no case 'nosuch'" in unknown.stderr
    bad_metric = tgstore("regressions", "--db", db, "--metric", "speed")
    assert bad_metric.returncode == 1 and "--metric must be" in bad_metric.stderr

    # the page lists the same steps, each with its chart, its stage diff and (for the gap) the bisect command
    from web_server import start_server, stop_server

    server = start_server(db, tmp_path / "serve.log")
    try:
        page = server.get("/-/regressions").text
        assert page.count('class="tgstore-regression tgstore-slower"') == 2
        assert page.count('class="tgstore-regression tgstore-faster"') == 2
        assert f"/-/diff?a={line[4]}&amp;b={line[6]}&amp;case=matmul" in page
        assert "/-/chart?metric=time&amp;case=matmul" in page and "tgstore bisect matmul --metric time" in page
    finally:
        stop_server(server)
