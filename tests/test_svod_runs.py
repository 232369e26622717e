"""Svod logs as its developers run them (tests/svod_runs.py): default threads, several tests, panics, cut logs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli import tgstore
from svod_runs import DISTINCT, PANIC_AT, cut_log, libtest_threads_session, panic_session, serial_session, threaded_log

from tgstore.svod.readers import read_runs
from tgstore.svod.readers.model import document_name
from tgstore.svod.readers.sessions import case_from_test

NAMES = ["r_8_16_4", "r_8_16_4n1", "r_8_16_4n2"]
FULL = {("kernel-initial", "event"), ("pre-movement", "event"), ("pre-load-collapse", "event"),
        ("pre-split-ranges", "event"), ("pre-symbolic", "event"), ("pre-simplify-ranges", "event"),
        ("00-initial", "event"), ("09-pre_expand", "event"), ("20-final_rewrite", "event")}


def ids_of(kernel) -> set[int]:
    return {i for s in kernel.stages if s.tree is not None for i in s.tree.nodes}


ORDER = "does not prove the schedule's order"


@pytest.mark.parametrize("seed", range(12))
def test_default_threads_canonical_only_give_the_real_kernels(seed: int) -> None:
    """SVOD_THREADS unset, SVOD_DUMP_CANONICAL_STAGE= and codegen trace, 3 kernels interleaved (another interleaving
    per seed): the compile phase names the three kernels; each optimize-phase document goes to the one kernel whose
    bare name it carries (no other kernel has it), the code by its name. Names of different shapes carry no order:
    that is said, with the fix."""
    (run,) = read_runs([("t.log", threaded_log(3, seed, names=DISTINCT, trees=False, documents=True))])
    assert sorted(k.name for k in run.kernels) == sorted(DISTINCT)
    for kernel in run.kernels:
        assert [(s.label, s.source) for s in kernel.stages] == [("optimized", "dump-canonical"),
                                                                ("final_rewrite", "dump-canonical"),
                                                                ("program", "dump-canonical")]
        names = {s.canonical["nodes"][0]["arg"]["name"] for s in kernel.stages}
        assert names == {kernel.name}
        assert kernel.code is not None and f"@{kernel.name}(" in kernel.code
    assert not run.unattributed and not run.order_proven
    (problem,) = run.problems
    assert ORDER in problem.message and "SVOD_THREADS=1" in problem.message


def test_default_threads_documents_of_one_bare_name_are_not_split_by_guess() -> None:
    """Three kernels whose optimize-phase documents all say `r_8_16_4` (the suffixes come at naming): the compile
    phase names them, in schedule order by the counter's suffix; nothing ties an optimize-phase document to one of
    them, so those are stored unattributed, with one problem."""
    (run,) = read_runs([("t.log", threaded_log(3, 4, trees=False, documents=True))])
    assert [k.name for k in run.kernels] == NAMES and run.order_proven
    assert all([(s.label, document_name(s.canonical)) for s in k.stages] == [("program", k.name)]
               for k in run.kernels)
    assert sorted(s.label for s in run.unattributed) == ["final_rewrite"] * 3 + ["optimized"] * 3
    (problem,) = run.problems
    assert "SVOD_THREADS=1" in problem.message and problem.message.startswith("6 stages hold no proof")


@pytest.mark.parametrize("seed", range(12))
def test_default_threads_with_trees_only_never_invent_kernels(seed: int) -> None:
    """Trees and generated code only (RUST_LOG=svod_schedule=trace,svod_codegen=trace): the compile phase names the
    three kernels, never more; a stage joins one only on proof, and every stage a kernel holds is that kernel's
    (kernel k's trees have ids 1000k..); what nothing proves is stored unattributed, grouped where proven one
    kernel's, with one problem naming SVOD_THREADS=1."""
    (run,) = read_runs([("t.log", threaded_log(3, seed))])
    assert [k.name for k in run.kernels] == NAMES
    for k, kernel in enumerate(run.kernels):
        assert {i // 1000 for i in ids_of(kernel)} <= {k}
    stored = [s for k in run.kernels for s in k.stages] + run.unattributed
    assert len(stored) == 27 and all(s.label != "kernel-initial-or-00" or s in run.unattributed for s in stored)
    for fragment in {s.fragment for s in run.unattributed} - {None}:
        assert len({i // 1000 for s in run.unattributed if s.fragment == fragment for i in ids_of_stage(s)}) == 1
    (problem,) = run.problems
    assert "SVOD_THREADS=1" in problem.message and problem.message.startswith(f"{len(run.unattributed)} stages")


def ids_of_stage(stage) -> set[int]:
    return set(stage.tree.nodes) if stage.tree is not None else set()


def test_per_stage_counts_alone_are_stored_unattributed() -> None:
    """Only `[per-stage]` lines from three kernels at once (SVOD_PER_STAGE_UOPS=1, no RUST_LOG) and the code: no
    evidence ties a count to a kernel, so none is filed; every line is kept unattributed, with one problem."""
    text = threaded_log(3, 5, trees=False, per_stage=True)
    (run,) = read_runs([("t.log", text)])
    assert [k.name for k in run.kernels] == NAMES and all(k.stages == [] for k in run.kernels)
    counts = [s for s in run.unattributed if s.source == "per-stage"]
    assert len(counts) == 6 and sum("SVOD_THREADS=1" in p.message for p in run.problems) == 1


def test_svod_threads_1_is_cut_by_emission_order() -> None:
    """SVOD_THREADS=1, same switches: every stage of every kernel, in schedule order, nothing unattributed."""
    text = threaded_log(3, 0, per_stage=True)
    from svod_runs import program_lines

    serial = "\n".join(text.split("\n")[:5] + ["test x::llvm ... " + program_lines(3, None, per_stage=True)[0],
                                                *program_lines(3, None, per_stage=True)[1:], "ok"])
    (run,) = read_runs([("t.log", serial)], threads_stated=1)  # as `ingest-svod --svod-threads 1` reads it
    assert [k.name for k in run.kernels] == NAMES and not run.unattributed and not run.problems
    for k, kernel in enumerate(run.kernels):
        assert {i // 1000 for i in ids_of(kernel)} == {k}
        assert ("20-final_rewrite", "per-stage") in {(s.label, s.source) for s in kernel.stages}


def test_a_log_is_a_test_session() -> None:
    """`cargo test row_reduce_sum -- --nocapture --test-threads=1`: four tests, four runs; the GPU variants that
    printed only their skip line are skipped; the second test's kernel carries the counter's suffix."""
    runs = read_runs([("s.log", serial_session())])
    assert [(r.test, r.outcome) for r in runs] == [("ops::row_reduce_sum::clang", "ok"),
                                                   ("ops::row_reduce_sum::llvm", "ok"),
                                                   ("ops::row_reduce_sum::amd", "skipped"),
                                                   ("ops::row_reduce_sum::cuda", "skipped")]
    assert [[k.name for k in r.kernels] for r in runs] == [["r_8_16_4"], ["r_8_16_4n1"], [], []]
    assert all(not r.problems for r in runs)
    assert {(s.label, s.source) for s in runs[1].kernels[0].stages} >= FULL


def test_tests_in_libtest_threads_are_split_where_evidence_allows() -> None:
    """libtest's threads: one test printing and two GPU variants skipping: the output is the one test's. Two tests
    printing: each test's run and outcome, and their output in one run with no test, every stage unattributed."""
    runs = read_runs([("p.log", libtest_threads_session(("llvm",)))])
    assert [(r.test, r.outcome, len(r.kernels)) for r in runs] == [("ops::row_reduce_sum::llvm", "ok", 1),
                                                                   ("ops::row_reduce_sum::amd", "skipped", 0),
                                                                   ("ops::row_reduce_sum::cuda", "skipped", 0)]
    runs = read_runs([("p.log", libtest_threads_session(("clang", "llvm")))])
    assert [(r.test, r.outcome, r.stage_count) for r in runs if r.test] == [
        ("ops::row_reduce_sum::clang", "ok", 0), ("ops::row_reduce_sum::llvm", "ok", 0),
        ("ops::row_reduce_sum::amd", "skipped", 0), ("ops::row_reduce_sum::cuda", "skipped", 0)]
    (loose,) = [r for r in runs if r.test is None]
    assert loose.tests_unproven and loose.stage_count > 0 and len(loose.unattributed) == loose.stage_count
    assert all(not k.stages for k in loose.kernels) and not loose.schedule_stages
    assert any("--test-threads=1" in p.message and "with_thread_names" in p.message for p in loose.problems)


def test_interleaved_tests_are_stored_with_outcomes_and_their_stages_unattributed(tmp_path: Path) -> None:
    """Issue 44 point 3, degrade, never refuse: two tests printing at once in libtest's threads, nothing naming
    its test. Stored: a run per test with its outcome (the GPU variants skipped by their skip lines), and one run
    with no test holding every stage unattributed (no stage on a kernel), with the problem saying what would prove
    the test; `--case-from-test` puts that run under the one case its tests map to."""
    log = tmp_path / "p.log"
    log.write_text(libtest_threads_session(("clang", "llvm")), encoding="utf-8")
    db = tmp_path / "x.db"
    proc = tgstore("ingest-svod", log, "--case-from-test", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        runs = conn.execute("SELECT r.id, r.test, r.outcome, c.name FROM svod_runs r JOIN cases c "
                            "ON c.id = r.case_id ORDER BY r.id").fetchall()
        assert sorted((test or "", outcome, case) for _id, test, outcome, case in runs) == [
            ("", None, "row_reduce_sum"), ("ops::row_reduce_sum::amd", "skipped", "row_reduce_sum"),
            ("ops::row_reduce_sum::clang", "ok", "row_reduce_sum"), ("ops::row_reduce_sum::cuda", "skipped",
                                                                     "row_reduce_sum"),
            ("ops::row_reduce_sum::llvm", "ok", "row_reduce_sum")]
        (loose,) = [run_id for run_id, test, _o, _c in runs if test is None]
        stages = conn.execute("SELECT run_id, kernel_index, unattributed FROM svod_stages").fetchall()
        assert stages and {(run_id, kernel, flag) for run_id, kernel, flag in stages} == {(loose, None, 1)}
        (problem,) = [m for (m,) in conn.execute("SELECT message FROM svod_problems WHERE run_id = ? AND message "
                                                 "LIKE '%interleaved%'", (loose,))]
        assert "--test-threads=1" in problem and ".with_thread_names(true)" in problem
    assert tgstore("db", "check", "--db", db).returncode == 0


def test_a_panic_is_a_failed_run_with_where_it_died() -> None:
    runs = read_runs([("f.log", panic_session())])
    ok, failed = runs
    assert (ok.outcome, failed.outcome) == ("ok", "FAILED")
    assert failed.panic.location == PANIC_AT and failed.panic.message.startswith("pm_reduce: REDUCE without")
    assert failed.failed_kernel == 0 and failed.last_stage == "09-pre_expand"
    last = failed.kernels[0].stages[-1]
    assert (last.label, last.source) == ("panic", "panic") and last.tree is not None
    assert {i // 1000 for i in last.tree.nodes} == {1}
    assert any(f"panicked at {PANIC_AT}" in p.message for p in failed.problems)
    assert not any("SVOD_THREADS" in p.message for p in failed.problems)  # a panic is not thread interleaving


def test_a_cut_log_says_so() -> None:
    (run,) = read_runs([("c.log", cut_log())])
    assert run.outcome is None
    messages = [p.message for p in run.problems]
    assert any("ends mid-line" in m for m in messages) and any("no result line" in m for m in messages)


def test_case_from_test() -> None:
    assert case_from_test("ops::row_reduce_sum::llvm") == "row_reduce_sum"
    assert case_from_test("test_matmul::clang::test_matmul::_128x128_expects") == "matmul"
    assert case_from_test("tests::sum_rows") == "sum_rows"


def test_ingest_svod_stores_a_run_per_test(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_text(serial_session(), encoding="utf-8")
    db = tmp_path / "x.db"
    proc = tgstore("ingest-svod", log, "--case-from-test", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    runs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["case"], r["test"], r["outcome"]) for r in runs] == [
        ("row_reduce_sum", "ops::row_reduce_sum::clang", "ok"), ("row_reduce_sum", "ops::row_reduce_sum::llvm", "ok"),
        ("row_reduce_sum", "ops::row_reduce_sum::amd", "skipped"),
        ("row_reduce_sum", "ops::row_reduce_sum::cuda", "skipped")]
    assert "4 Svod runs stored" in proc.stderr
    again = tgstore("ingest-svod", log, "--case", "sum_rows", "--test", "::llvm", "--db", db)
    assert again.returncode == 0 and "1 Svod runs stored" in again.stderr, again.stderr
    failed = tmp_path / "f.log"
    failed.write_text(panic_session(), encoding="utf-8")
    proc = tgstore("ingest-svod", failed, "--case", "sum_rows", "--test", "::llvm", "--db", db, "--json")
    (summary,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert (summary["outcome"], summary["panic"]["location"], summary["last_stage"]) == \
        ("FAILED", PANIC_AT, "09-pre_expand")
    both = tmp_path / "p.log"
    both.write_text(libtest_threads_session(("clang", "llvm")), encoding="utf-8")
    stored = tgstore("ingest-svod", both, "--case", "sum_rows", "--db", db)  # stored, not refused
    assert stored.returncode == 0 and "5 Svod runs stored" in stored.stderr, stored.stderr
    assert tgstore("db", "check", "--db", db).returncode == 0


def gpu_ir(abi: str, name: str) -> str:
    """The head of an IR dump as SVOD_DUMP_NVPTX_IR / SVOD_DUMP_AMD_IR write it (the calling convention marks it)."""
    triple = "nvptx64-nvidia-cuda" if abi == "ptx_kernel" else "amdgcn-amd-amdhsa"
    return (f"; ModuleID = '{name}'\ntarget triple = \"{triple}\"\n\ndefine {abi} void @{name}(ptr addrspace(1) "
            "noalias %data0, ptr addrspace(1) noalias %data1) {\nentry:\n  ret void\n}\n")


@pytest.mark.parametrize(("variant", "arch", "abi", "kind"), [("cuda", "sm_89", "ptx_kernel", "nvptx"),
                                                              ("amd", "gfx1100", "amdgpu_kernel", "amdgpu")])
def test_gpu_ir_dumps_and_canonical_only_logs_name_their_kernels(variant: str, arch: str, abi: str, kind: str
                                                                  ) -> None:
    """A GPU variant that ran (no skip line), canonical documents only (SVOD_DUMP_CANONICAL_STAGE=, no RUST_LOG),
    and its IR dump directory: the kernels are named by their `program` documents, and each `<arch>_<kernel>.ll`
    is attached to its kernel as its own code kind."""
    from svod_runs import canonical_block

    test = f"ops::two_kernels::{variant}"
    lines = []
    for name in DISTINCT[:2]:
        lines += canonical_block("optimized", name) + canonical_block("final_rewrite", name)
    for name in DISTINCT[:2]:
        lines += canonical_block("program", name)
    text = "\n".join([f"test {test} ... {lines[0]}", *lines[1:], "ok", ""])
    files = [("t.log", text)] + [(f"/ir/{arch}_{name}.ll", gpu_ir(abi, name)) for name in DISTINCT[:2]]
    (run,) = read_runs(files)
    assert sorted((k.name, k.code_kind) for k in run.kernels) == sorted([(DISTINCT[0], kind), (DISTINCT[1], kind)])
    assert all(f"@{k.name}(" in k.code for k in run.kernels)
    # two documents a kernel are too few to show one thread, and the two names have different shapes
    assert [p.message for p in run.problems if ORDER not in p.message] == []
    stray = read_runs([("t.log", text), (f"/ir/{arch}_E_4_4.ll", gpu_ir(abi, "E_4_4"))])[0]
    assert [p.message for p in stray.problems if ORDER not in p.message] == [
        f"{arch}_E_4_4.ll: no kernel named 'E_4_4' in the log; the file is kept, not placed"]


def test_a_hint_checks_the_logs_own_switches() -> None:
    """An `.ll` file no kernel of the log has: with svod_codegen traces in the log, the hint does not ask for them."""
    text = threaded_log(1, None, names=["r_8_16_4"])
    (run,) = read_runs([("t.log", text), ("/ll/E_9.ll", "define void @E_9() {\n}\n")])
    (problem,) = [p for p in run.problems if "E_9" in p.message]
    assert "add svod_codegen=trace" not in problem.message and "they name r_8_16_4" in problem.message
