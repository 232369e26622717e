"""Kernel timing (--time) on real tinygrad releases: every kernel compiled with clang and run by tinygrad's own timer,
crashes contained, the machine recorded, and times never compared across machines. No test asserts a timing
threshold except the bisect test, whose regression (-O0 instead of -O2) is several times any noise."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history, git

needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="timing compiles kernels with clang")

CASES = """\
from tinygrad import Tensor


def case_add():
    return Tensor.ones(16, 16).contiguous() + Tensor.ones(16, 16).contiguous()


def case_matmul():
    return Tensor.ones(32, 32).contiguous() @ Tensor.ones(32, 32).contiguous()


def case_sum():
    return Tensor.ones(8, 64).contiguous().sum(1)
"""

# A case whose kernel's buffer of 77 floats makes the timing grandchild (only it: not the extraction child) read
# address 0: a real SIGSEGV while the kernel is being set up for timing. Buffer.ensure_allocated is what the timer
# calls to fill each buffer in every era. The next case must still be timed.
CRASHING_CASES = """\
import ctypes
import os

from tinygrad import Tensor
from tinygrad.device import Buffer

EXTRACTION_CHILD = os.getpid()
_ensure_allocated = Buffer.ensure_allocated


def _segfault_in_grandchild(self):
    if os.getpid() != EXTRACTION_CHILD and self.size == 77:
        ctypes.string_at(0)
    return _ensure_allocated(self)


Buffer.ensure_allocated = _segfault_in_grandchild


def case_crashes_when_timed():
    return Tensor.ones(77).contiguous() * 3


def case_after_the_crash():
    return Tensor.ones(16).contiguous() + 1
"""


def rewrite(bundle: Path, factor: int, host: str | None = None) -> None:
    """Scale every kernel time in a bundle by `factor` and, with `host`, make it another machine's: what a slower
    machine (or a slower commit) would have written."""
    records = [json.loads(line) for line in bundle.read_text().splitlines()]
    for record in records:
        if record["kind"] == "header" and host:
            record["timing"]["machine"].update(hostname=host, fingerprint="0123456789abcdef")
        for item in record.get("schedule", []) if record["kind"] == "case" else []:
            timing = item.get("timing") or {}
            for key in ("ns_min", "ns_median", "ns_max"):
                if timing.get(key):
                    timing[key] *= factor
    bundle.write_text("".join(json.dumps(r) + "\n" for r in records))


def times_json(db: Path, case: str, *extra: str) -> dict:
    proc = tgstore("times", case, "--db", db, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@needs_clang
def test_thread_count_is_part_of_the_machine():
    """Times taken with another CPU thread count are another machine's: never compared silently."""
    from tgstore.extract.child.machine import machine, timing_threads
    from tgstore.store.timings import this_machine

    cores = len(os.sched_getaffinity(0))
    assert timing_threads({"NUM_CPU_THREADS": "8"}) == min(8, cores)
    assert timing_threads({"NUM_CPU_THREADS": "1"}) == 1
    one, two = machine("CPU", {"NUM_CPU_THREADS": "8"}, threads=1), machine("CPU", {"NUM_CPU_THREADS": "8"}, threads=2)
    assert (one["timing_threads"], two["timing_threads"]) == (1, 2)
    assert one["fingerprint"] != two["fingerprint"]
    # the parent predicts the fingerprint the child reports (timed sweeps skip what this machine already timed;
    # test_every_kernel_timed_... checks it against a real child's)
    assert this_machine("CPU") == machine("CPU", {"NUM_CPU_THREADS": "8", "CPU_COUNT": "8"})["fingerprint"]


@pytest.mark.parametrize("release", ["0.11.0", "0.14.0"])  # ProgramSpec era (and its fallback buffers); PROGRAM era
def test_every_kernel_timed_with_positive_times_and_estimates(tmp_path, tinygrad_release, release):
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(release), "--cases", cases, "--renderers",
                   "C", "--stages", "none", "--time", "--time-runs", "3")
    assert proc.returncode == 0, proc.stderr
    kernel_items = rows(db, "SELECT count(*) FROM schedule_items WHERE root_op = 'SINK'")[0][0]
    assert rows(db, "SELECT count(*) FROM kernel_timings")[0][0] == kernel_items > 0
    for case in ("add", "matmul", "sum"):
        doc = times_json(db, case)
        assert doc["case"] == case and len(doc["commit"]) > 0
        assert doc["kernels"], case
        for k in doc["kernels"]:
            assert k["status"] == "ok", k
            assert 0 < k["ns_min"] <= k["ns_median"]
            assert k["spread"] is not None and k["spread"] >= 0
            assert k["ops"] is not None and k["bytes"] > 0 and k["gbps"] > 0
            assert k["name"]
    # the matmul's reduce kernel does work tinygrad counts: about 2 * 32^3 ops (32 * 32 * 63 in some eras)
    assert max(k["ops"] for k in times_json(db, "matmul")["kernels"]) >= 32 ** 3
    samples = rows(db, "SELECT samples FROM kernel_timings")
    assert all(len(json.loads(s)) == 3 for (s,) in samples)  # --time-runs 3 after the warm-up

    # the machine: what it is, recorded once, with the run's calibration figure
    machine = times_json(db, "add")["machine"]
    assert machine["cores"] >= 1 and machine["cpu_model"] and machine["device"] == "CPU"
    assert machine["compiler"] == "clang" and "clang" in machine["compiler_version"]
    assert machine["settings"]["NUM_CPU_THREADS"] == "8"
    # timed with the child's 8 threads capped at the cores this process may use (tinygrad's own default)
    assert machine["timing_threads"] == min(8, len(os.sched_getaffinity(0)))
    from tgstore.store.timings import this_machine

    assert machine["fingerprint"] == this_machine("CPU")  # what the parent predicts, before anything ran
    (fingerprint, calibration, calibration_end), = rows(
        db, "SELECT m.fingerprint, s.calibration_ns, s.calibration_end_ns FROM timing_sessions s "
            "JOIN machines m ON m.id = s.machine_id")
    assert fingerprint == machine["fingerprint"] and calibration > 0 and calibration_end > 0

    # asked again for what is stored: nothing is timed; asked for more runs a kernel: timed again, the run stays and
    # a session is added (`times` shows the latest); --force: extracted and timed again, a new run
    ingest = ("ingest", "--db", db, "--tinygrad", tinygrad_release(release), "--cases", cases, "--renderers", "C",
              "--stages", "none", "--time", "--time-runs")
    same = tgstore(*ingest, "3")
    assert same.returncode == 0 and "already ingested" in same.stderr and "--force to redo" in same.stderr
    if release == "0.14.0":
        again = tgstore(*ingest, "4")
        assert again.returncode == 0 and "its kernels were timed again" in again.stderr, again.stderr
    else:
        again = tgstore(*ingest, "3", "--force")
        assert again.returncode == 0 and "run 2 ok" in again.stderr, again.stderr
    # (the run --force replaced is gone; its session stays, run_id NULL: re-timing keeps what was timed)
    assert rows(db, "SELECT s.runs, s.run_id FROM timing_sessions s ORDER BY s.id") == \
        ([(3, 1), (4, 1)] if release == "0.14.0" else [(3, None), (3, 2)])
    assert rows(db, "SELECT count(DISTINCT machine_id) FROM timing_sessions")[0][0] == 1


@needs_clang
def test_a_kernel_that_segfaults_is_recorded_and_the_run_goes_on(tmp_path, tinygrad_release):
    cases = tmp_path / "crash.py"
    cases.write_text(CRASHING_CASES)
    db = tmp_path / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases, "--renderers",
                   "C", "--stages", "none", "--time", "--time-runs", "2")
    assert proc.returncode == 0, proc.stderr
    assert rows(db, "SELECT status FROM runs") == [("ok",)]  # the extraction itself is whole
    crashed = times_json(db, "crashes_when_timed")["kernels"]
    assert crashed and all(k["status"] == "crashed" for k in crashed)  # both kernels have a 77-float buffer
    assert all("SIGSEGV" in k["error"] and k["ns_min"] is None for k in crashed)
    after = times_json(db, "after_the_crash")["kernels"]
    assert after and all(k["status"] == "ok" and k["ns_min"] > 0 for k in after)
    table = tgstore("times", "crashes_when_timed", "--db", db)
    assert table.returncode == 0 and "crashed" in table.stdout and "SIGSEGV" in table.stderr


@needs_clang
def test_times_of_different_machines_are_never_compared(tmp_path, tinygrad_release):
    """Two releases timed on two machines (the second bundle's machine record is another host's): `times --against`
    refuses, kernel_slowdowns pairs nothing, a commit timed on both needs --machine."""
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    bundles = []
    for release, host in (("0.13.0", None), ("0.14.0", "other-host")):
        bundle = tmp_path / f"{release}.jsonl"
        proc = tgstore("extract", "--out", bundle, "--tinygrad", tinygrad_release(release), "--cases", cases,
                       "--renderers", "C", "--stages", "none", "--time", "--time-runs", "2")
        assert proc.returncode == 0, proc.stderr
        if host:  # another machine, where everything ran 1000 times slower: mixing machines would show it
            rewrite(bundle, 1000, host)
        bundles.append(bundle)
    assert tgstore("ingest", "--db", db, "--bundle", bundles[0], "--bundle", bundles[1]).returncode == 0
    refused = tgstore("times", "matmul", "--db", db, "--commit", "0.14.0", "--against", "0.13.0")
    assert refused.returncode == 1
    assert "different machines" in refused.stderr and "other-host" in refused.stderr, refused.stderr
    proc = tgstore("query", "kernel_slowdowns", "--db", db, "-p", "a=0.13.0", "-p", "b=0.14.0", "--jsonl")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""  # same machine pairs only: across the two machines every kernel is 1000x

    # the same commit also timed on this machine: `times` asks which machine, and --machine answers
    mine = tmp_path / "mine.jsonl"
    assert tgstore("extract", "--out", mine, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases,
                   "--renderers", "C", "--stages", "none", "--time", "--time-runs", "2").returncode == 0
    # each kernel was timed in 3 fresh processes and keeps its best one's timing
    from tgstore.bundle import read_bundle
    from tgstore.extract.child.timing import PROCESSES

    timed = [item["timing"] for case in read_bundle(mine).cases for item in case["schedule"]
             if item["root_op"] == "SINK"]
    assert timed
    for timing in timed:
        assert len(timing["process_ns_min"]) == PROCESSES == 3 and timing["status"] == "ok"
        assert timing["ns_min"] == min(timing["process_ns_min"])
    rewrite(mine, 1000)  # this machine, 1000 times slower at 0.14.0: kernel_slowdowns must list it
    assert tgstore("ingest", "--db", db, "--bundle", mine).returncode == 0
    ambiguous = tgstore("times", "matmul", "--db", db, "--commit", "0.14.0")
    assert ambiguous.returncode == 1 and "2 machines" in ambiguous.stderr
    other = times_json(db, "matmul", "--commit", "0.14.0", "--machine", "0123")
    assert other["machine"]["hostname"] == "other-host"
    # on this machine both releases were timed: they compare, and the query pairs them
    mine_fp = json.loads(mine.read_text().splitlines()[0])["timing"]["machine"]["fingerprint"]
    compared = times_json(db, "matmul", "--commit", "0.14.0", "--against", "0.13.0", "--machine", mine_fp)
    assert compared["machine"]["fingerprint"] == mine_fp and compared["against"]["kernels"]
    proc = tgstore("query", "kernel_slowdowns", "--db", db, "-p", "a=0.13.0", "-p", "b=0.14.0", "--jsonl")
    slowdowns = [json.loads(line) for line in proc.stdout.splitlines()]
    assert slowdowns and {row["machine"] for row in slowdowns} == {mine_fp}
    assert all(row["ratio"] > 100 for row in slowdowns)


@needs_clang
def test_history_query_and_chart_of_kernel_times(tmp_path, tinygrad_release):
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "t.db"
    for release in ("0.13.0", "0.14.0"):
        proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(release), "--cases", cases,
                       "--renderers", "C", "--stages", "none", "--time", "--time-runs", "2")
        assert proc.returncode == 0, proc.stderr
    proc = tgstore("query", "kernel_time_history", "--db", db, "-p", "case_name=matmul", "--jsonl")
    assert proc.returncode == 0, proc.stderr
    history = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [h["sha"] for h in history] == sorted([h["sha"] for h in history], key=lambda s: next(
        r["history_rank"] for r in history if r["sha"] == s))
    assert len({h["sha"] for h in history}) == 2 and len({h["machine"] for h in history}) == 1
    assert all(h["ns_min"] > 0 for h in history) and any(h["ratio_to_previous"] for h in history)

    from tgstore.web import charts

    with sqlite3.connect(db) as conn:
        chart = charts.chart_data(conn, "time", "matmul")
        total = charts.chart_data(conn, "time_total", "matmul")
    # each kernel a series named by its position and name; the case's sum drawn apart (it would flatten them)
    assert len(chart.commits) == 2 and "total" not in chart.series and len(chart.series) == 3
    assert all(name.startswith(f"#{i} ") for i, name in enumerate(chart.series))
    assert list(total.series) == ["total"] and len(total.series["total"]) == 2
    assert all(v is not None and v > 0 for v in total.series["total"])
    assert "<svg" in charts.render(chart) and "<svg" in charts.render(total)


@needs_clang
def test_bisect_metric_time_finds_the_commit_that_made_kernels_slower(tmp_path, tinygrad_release):
    """A history of 0.14.0 trees where one commit compiles kernels with -O0 instead of -O2 (several times slower
    for a matmul): bisect --metric time names that commit, having re-timed the endpoints. The commit before it is
    slow only the first time it is timed (a misread, as on a loaded machine): re-timed at the boundary, it is not
    the answer. The commit before that lacks a file it could have read (an object missing from the clone): it is
    untestable, stepped around."""
    repo = tmp_path / "repo"
    shas = build_release_history(repo, [("0.14.0", "release")], tinygrad_release)
    lost = repo / "tinygrad" / "lost_in_the_clone.py"
    lost.write_text("# only in docs 1; its object is deleted below\n")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "docs 1",
        env={"GIT_AUTHOR_DATE": "2025-01-02T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-01-02T12:00:00+00:00"})
    shas.append(git(repo, "rev-parse", "HEAD"))
    blob = git(repo, "rev-parse", "HEAD:tinygrad/lost_in_the_clone.py")
    lost.unlink()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    compiler = repo / "tinygrad" / "runtime" / "support" / "compiler_cpu.py"
    original = compiler.read_text()
    marker = tmp_path / "timed-once"
    once = f"import os as _os\n_FIRST = not _os.path.exists({str(marker)!r})\nopen({str(marker)!r}, 'a').close()\n"
    compiler.write_text(once + original.replace("'-O2'", "('-O0' if _FIRST else '-O2')"))
    git(repo, "commit", "--quiet", "-am", "docs 2",
        env={"GIT_AUTHOR_DATE": "2025-01-03T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-01-03T12:00:00+00:00"})
    shas.append(git(repo, "rev-parse", "HEAD"))
    compiler.write_text(original.replace("'-O2'", "'-O0'"))
    git(repo, "commit", "--quiet", "-am", "compile kernels without optimisation",
        env={"GIT_AUTHOR_DATE": "2025-01-04T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-01-04T12:00:00+00:00"})
    slow = git(repo, "rev-parse", "HEAD")
    for i, subject in enumerate(("docs 3", "docs 4")):
        with open(repo / "README.md", "a") as f:
            f.write(subject + "\n")
        date = f"2025-01-0{5 + i}T12:00:00+00:00"
        git(repo, "commit", "--quiet", "-am", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\n\ndef case_matmul():\n"
                     "    return Tensor.ones(128, 128).contiguous() @ Tensor.ones(128, 128).contiguous()\n")
    db = tmp_path / "t.db"
    proc = tgstore("bisect", "matmul", "--metric", "time", "--threshold", "50%", "--good", shas[0], "--bad", "master",
                   "--repo", repo, "--db", db, "--cases", cases, "--renderers", "C", "--time-runs", "5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == slow
    assert "again, to confirm" in proc.stderr and f"tgstore diff {shas[2][:10]} {slow[:10]}" in proc.stderr
    assert f"{shas[2][:10]} is not slower when timed again" in proc.stderr
    # the clone lacks a file in tinygrad/, which the extraction imports from: the commit is untestable
    assert f"{shas[1][:10]} is untestable: it could have read tinygrad/lost_in_the_clone.py" in proc.stderr
    no_slowdown = tgstore("bisect", "matmul", "--metric", "time", "--good", shas[0], "--bad", shas[2], "--repo",
                          repo, "--db", db, "--cases", cases, "--renderers", "C", "--threshold", "200%")
    assert no_slowdown.returncode == 1 and "no slowdown to bisect" in no_slowdown.stderr
    bad_threshold = tgstore("bisect", "matmul", "--metric", "time", "--good", shas[0], "--bad", slow, "--repo", repo,
                            "--db", db, "--cases", cases, "--threshold", "ten")
    assert bad_threshold.returncode == 1 and "--threshold" in bad_threshold.stderr


GPU = shutil.which("nvidia-smi") is not None and Path("/dev/nvidiactl").exists()


@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU with its driver (tinygrad's CUDA device)")
def test_kernels_timed_on_a_cuda_gpu(tmp_path):
    """With a GPU: the same timing through tinygrad's CUDA device (the installed tinygrad), the GPU recorded."""
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    bundle = tmp_path / "gpu.jsonl"
    proc = tgstore("extract", "--out", bundle, "--cases", cases, "--backend", "CUDA", "--renderers", "CUDA",
                   "--stages", "none", "--time", "--time-runs", "3")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in bundle.read_text().splitlines()]
    machine = records[0]["timing"]["machine"]
    assert machine["device"] == "CUDA" and machine["gpu"]
    items = [i for r in records if r["kind"] == "case" for i in r["schedule"] if i["root_op"] == "SINK"]
    assert items and all(i["timing"]["status"] == "ok" and i["timing"]["ns_min"] > 0 for i in items), items
