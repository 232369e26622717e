"""Svod as it really runs (issue 37): lines another thread cut in two, a killed job, cargo nextest, BEAM's worker
processes, libtest's capture, every escape kind, Metal code, two programs in one test. Each log is built the way
Svod's code and the runner print it (tests/svod_concurrency.py, tests/svod_runners.py cite the source for each
format)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli import tgstore
from svod_concurrency import Switches, generate
from svod_runners import (
    ASSERT_AT,
    NEXTEST_ERAS,
    assertion_panic,
    beam_log,
    libtest_capture,
    libtest_nocapture,
    nextest,
    run_test,
)

from tgstore.svod.readers import read_runs
from tgstore.svod.readers.model import strip_ansi

ONE = Switches("trace", True, True, None, None, 1)  # SVOD_THREADS=1
DEFAULT = Switches("trace", True, True, None, None, 4)  # Svod's default thread count on a 4-core machine
EVENT = ('{"timestamp":"2026-05-07T18:07:43.000137Z","level":"DEBUG","fields":{"message":"after pm_reduce",'
         '"ast.optimized":"[7] SINK[KERNEL] : Scalar(Void)\\n","node_count":1,"elapsed_ms":0},'
         '"target":"svod_schedule::optimizer"}')


def read(text: str, name: str = "t.log", stated: int | None = None):
    """The runs, read as `ingest-svod` reads them (`stated`: its --svod-threads; a log of ONE is read with 1)."""
    return read_runs([(name, text)], threads_stated=stated)


# ------------------------------------------------------------------------------------ point 2: lines cut in two


@pytest.mark.parametrize("cut", [
    ["[per-stage] ", EVENT, "00-initial : node_count=20"],
    ["[per-stage] 00-initial", EVENT, " : node_count=20"],
    ["[per-stage] 00-initial : node_count=", EVENT, "20"],
    ["[per-stage] 00-initial : node_count=20", EVENT, ""],
])
def test_a_per_stage_line_cut_by_another_threads_event_is_put_back(cut: list[str]) -> None:
    """`print_stage`'s `eprintln!("[per-stage] {} : node_count={}", ...)` (schedule/src/optimizer/mod.rs at
    npatsakula/svod@3e06443b463c0ad45124ec0214be4d6166821082) writes `[per-stage] `, the label, ` : node_count=`, the
    count and the newline one by one to unbuffered stderr; tracing's `TestWriter` prints a whole event to stdout
    between any two: both the event and the count are read, at the line they start on."""
    text = "test t::llvm ... " + cut[0] + cut[1] + "\n" + cut[2] + "\nok\n"
    (run,) = read(text)
    assert [e.line for e in run.events] == [1]
    (count,) = [s for s in run.kernels[0].stages + run.unattributed if s.source == "per-stage"] if run.kernels else \
        [s for s in run.unattributed if s.source == "per-stage"]
    assert (count.label, count.node_count, count.line) == ("00-initial", 20, 1)
    assert not run.problems


def test_a_cut_line_that_never_ends_is_a_problem_at_its_line() -> None:
    text = "test t::llvm ... [per-stage] 00-init" + EVENT + "\n[dump-stage] 09-pre_expand :\nok\n"
    (run,) = read(text)
    assert any(p.line == 1 and "could not be put back together" in p.message for p in run.problems)


def test_a_dump_closed_after_other_threads_lines_is_closed() -> None:
    """`print_stage`'s dump is three `eprintln!`s: header, tree, end. Another thread's event and `[per-stage]`
    line fall between them; the block is still one stage, its tree the one between."""
    tree = "[9] SINK[KERNEL] : Scalar(Void)\n└── [8] CONST(Int(1)) : Scalar(Int32) shape=[]\n"
    text = ("test t::llvm ... [dump-stage] 09-pre_expand :\n" + EVENT + "\n[per-stage] 10-pm_reduce : node_count=3\n"
            + tree + "\n" + EVENT + "\n[dump-stage] 09-pre_expand : end\nok\n")
    (run,) = read(text)
    stages = [s for k in run.kernels for s in k.stages] + run.unattributed
    (dump,) = [s for s in stages if s.source == "dump-stage"]
    assert dump.label == "09-pre_expand" and dump.tree is not None and dump.tree.roots == [9] and dump.line == 4
    assert not any("never closed" in p.message for p in run.problems)


def test_two_threads_dumps_of_one_label_open_at_once_are_not_paired() -> None:
    """Two threads print `[dump-stage] 09-pre_expand :` (lines 3 and 5) before either tree (print_stage's three
    `eprintln!`s, schedule/src/optimizer/mod.rs at npatsakula/svod@3e06443b): nothing in the text says which tree ends
    which block, so neither is filed on a kernel or a fragment, neither row carries a node count (the trees do), and
    each has a problem at its line naming both headers. A block alone in its label later is paired again."""
    small = "[11] SINK[KERNEL] : Scalar(Void)\n└── [10] CONST(Int(2)) : Scalar(Int32) shape=[]\n"
    big = ("[22] SINK[KERNEL] : Scalar(Void)\n└── [21] END : Scalar(Void) shape=[]\n"
           "    └── [20] CONST(Int(1)) : Scalar(Int32) shape=[]\n")
    text = ("test t::llvm ... \n[per-stage] 09-pre_expand : node_count=3\n[dump-stage] 09-pre_expand :\n"
            "[per-stage] 09-pre_expand : node_count=2\n[dump-stage] 09-pre_expand :\n" + small +
            "\n[dump-stage] 09-pre_expand : end\n" + big + "\n[dump-stage] 09-pre_expand : end\n"
            "[dump-stage] 09-pre_expand :\n" + small + "\n[dump-stage] 09-pre_expand : end\nok\n")
    (run,) = read(text)
    filed = {id(s) for k in run.kernels for s in k.stages}
    dumps = sorted((s for s in [*(s for k in run.kernels for s in k.stages), *run.unattributed]
                    if s.source == "dump-stage"), key=lambda s: s.line)
    assert [(s.line, s.tree.node_count) for s in dumps] == [(6, 2), (10, 3), (16, 2)]
    first, second, alone = dumps
    for dump in (first, second):
        assert dump.unpaired and dump.node_count is None and dump.fragment is None and id(dump) not in filed
        (problem,) = [p for p in run.problems if p.line == dump.line]
        assert "headers at lines 3, 5" in problem.message and "which block" in problem.message
    assert not alone.unpaired and alone.node_count == 2 and not any(p.line == 16 for p in run.problems)


def test_the_emission_model_cuts_lines_and_every_piece_is_read() -> None:
    """Under Svod's default threads the model cuts `[per-stage]` lines as Rust does; every cut one is read whole."""
    cut = 0
    for seed in range(40):
        text, truth = generate(seed, Switches("trace", True, True, None, None, 4), kernels=4)
        (run,) = read(text)
        lines = text.split("\n")
        cut += sum(1 for line in truth.per_stage if EVENT[:13] in lines[line - 1])
        stored = {s.line: s for s in [*(s for k in run.kernels for s in k.stages), *run.unattributed]
                  if s.source == "per-stage"}
        assert all((stored[line].label, stored[line].node_count) == (label, count)
                   for line, (label, count) in truth.per_stage.items()), seed
        assert {e.line for e in run.events} >= truth.events, seed
    assert cut > 20  # the model does cut lines, and every one was put back


# ------------------------------------------------------------------------------------ point 3: a killed job


def test_a_killed_serial_job_is_serial_and_its_cut_is_reported() -> None:
    """SVOD_THREADS=1, the job killed mid-event in its third kernel: the two whole kernels and the cut one's stages
    are filed in program order, the cut line and the missing result are problems, nothing blames threads."""
    test = run_test("ops::killed::llvm", 5, ONE, 3)
    text = libtest_nocapture([test])
    third = [m.start() for m in re.finditer('"after pm_reduce"', text)][2]  # inside kernel 2's post-optimization
    (run,) = read(text[:third], stated=1)
    assert run.serial and len(run.kernels) == 3 and not run.unattributed
    messages = " ".join(p.message for p in run.problems)
    assert "ends mid-line" in messages and "no result line" in messages and "SVOD_THREADS" not in messages
    assert [s.label for s in run.kernels[2].stages][:2] == ["kernel-initial", "pre-movement"]


# ------------------------------------------------------------------------------------ point 4: cargo nextest


@pytest.mark.parametrize("era", NEXTEST_ERAS)
@pytest.mark.parametrize("switches", [ONE, DEFAULT], ids=["SVOD_THREADS=1", "default threads"])
def test_nextest_runs_one_process_per_test(switches: Switches, era: str) -> None:
    """`cargo nextest run --success-output immediate`: a run per test in the order nextest reported them; names
    restart in each (one process per test); stdout (events) and stderr (`[per-stage]`) are read each in its own
    order: with one optimizing thread every stage is filed, with Svod's default threads only what is proven. Both
    eras of nextest's output blocks (the current `  stdout ───` with the output indented four spaces, and
    `--no-output-indent`; the older `──── STDOUT:  BINARY TEST`) are read alike."""
    tests = [run_test(f"ops::t{n}::llvm", 20 + n, switches, 2 + n % 2) for n in range(3)]
    runs = read(nextest(tests, era=era), "nextest.log", 1 if switches is ONE else None)
    assert [r.test for r in runs] == [t.name for t in tests]
    assert [sorted(k.name for k in r.kernels) for r in runs] == [sorted(t.names()) for t in tests]
    assert all(not k.name.endswith("n1") or k.name.startswith(("r_4_4_4", "r_8_2_4", "r_8_16_4", "r_16_8_4"))
               for r in runs for k in r.kernels)
    for run, test in zip(runs, tests, strict=True):
        assert run.outcome == "ok" and not run.captured
        per_stage = [s for k in run.kernels for s in k.stages if s.source == "per-stage"]
        if switches.threads == 1:
            assert not run.unattributed and len(per_stage) == 20 * len(test.names())
        assert all(k.code for k in run.kernels)


def test_nextest_immediate_final_output_is_read_once() -> None:
    """`--success-output immediate-final`: each test's output again after the summary, under its status line again;
    the repeat is not read a second time (no doubled stages)."""
    tests = [run_test(f"ops::t{n}::llvm", 40 + n, ONE, 2) for n in range(2)]
    once, twice = (read(nextest(tests, final=final), "nextest.log", 1) for final in (False, True))
    assert [(r.test, [k.name for k in r.kernels], r.stage_count) for r in twice] == \
        [(r.test, [k.name for k in r.kernels], r.stage_count) for r in once]
    assert all(r.stage_count > 0 and not r.problems for r in twice)


def test_nextest_without_output_is_captured_and_no_capture_is_one_stream() -> None:
    tests = [run_test(f"ops::t{n}::llvm", 30 + n, ONE, 2) for n in range(2)]
    shown = read(nextest(tests, success_output=False), "nextest.log")
    assert [(r.test, r.outcome, r.captured, r.kernels) for r in shown] == [(t.name, "ok", True, []) for t in tests]
    live = read(nextest(tests, no_capture=True), "nextest.log")
    assert [[k.name for k in r.kernels] for r in live] == [t.names() for t in tests]
    assert all(not r.unattributed and not r.captured for r in live)


# ------------------------------------------------------------------------------------ point 5: BEAM


BEAM_SHAPES = {
    "events and BEAM_DEBUG": {},
    "BEAM_DEBUG lines only": {"events": False},
    # RUST_LOG=svod_schedule::optimizer=trace alone: no `[beam]` lines, no `beam_search_optimize: completed`
    "optimizer trace, no markers": {"beam_debug": False, "completed": False},
    "optimizer debug, no markers": {"beam_debug": False, "completed": False, "level": "debug"},
    "a candidate that failed": {"beam_debug": False, "completed": False, "fail_at": 7},
    "GPU: three workers cut each other's lines": {"beam_debug": False, "completed": False, "workers": 3},
}


@pytest.mark.parametrize("shape", BEAM_SHAPES)
def test_beam_candidates_are_set_aside_never_kernels(shape: str) -> None:
    """BEAM's candidates are compiled in `svod-beam-worker` processes (tensor/src/beam_worker.rs at npatsakula/svod@
    3e06443b: `prepare_scheduler` then `apply_post_optimization_with_config`, no tracing set up) that print their
    `[per-stage]` blocks on the inherited stderr: they are set aside with one note, in every shape Svod prints them
    (with or without BEAM_DEBUG's `[beam]` lines and `svod_tensor::realize`'s `beam_search_optimize: completed`, at
    the optimizer's trace or debug level, a candidate stopping part way, GPU workers printing at once); the kernel's
    own stages are the chosen kernel's post-optimization (`beam_search_optimize`, tensor/src/realize.rs)."""
    options = BEAM_SHAPES[shape]
    text, names = beam_log(3, kernels=2, candidates=3, **options)
    (run,) = read(text)
    assert [k.name for k in run.kernels] == names and not run.unattributed
    if options.get("workers", 1) == 1:
        stopped = 20 - options["fail_at"] if "fail_at" in options else 0
        assert run.beam_candidates == 2 * (2 * 3 * 20 - stopped)  # kernels, waves, candidates, stages
    else:  # every line holding a candidate's piece, however cut, is one of them
        body = text.split("... ", 1)[1].rsplit("\nok\n", 1)[0].split("\n")
        assert run.beam_candidates == sum(bool(line) and line[0] != "{" for line in body) - 2 * 20
    (note,) = run.problems
    assert "BEAM candidates" in note.message and "svod-beam-worker" in note.message
    for kernel in run.kernels:
        counts = [s for s in kernel.stages if s.source == "per-stage"]
        assert len(counts) == 20 and len({s.label for s in counts}) == 20
        if options.get("events", True):
            by_label = {s.label: s.node_count for s in kernel.stages if s.source == "event"}
            assert all(by_label[s.label] == s.node_count for s in counts if s.label in by_label)
            assert len(by_label) == (26 if options.get("level", "trace") == "trace" else 24)  # pre- and post-opt


def test_beam_under_nextest_sets_every_stderr_stage_aside() -> None:
    """nextest keeps a test's stdout and stderr apart: BEAM's candidates (more `[per-stage]` lines than the
    optimizer's events account for) cannot be told from the kernels' own lines, so all are set aside, and the kernels
    keep their events and code."""
    text, names = beam_log(5, kernels=2, candidates=2, beam_debug=False, completed=False)
    body = text.split("... ", 1)[1].rsplit("\nok\n", 1)[0].split("\n")
    out = [line for line in body if not line.startswith("[per-stage]")]
    err = [line for line in body if line.startswith("[per-stage]")]
    log = ["    Starting 1 test across 1 binary (800 tests skipped)",
           "        PASS [   0.451s] (1/1) svod-tensor ops::beam_reduce::llvm", "  stdout ───", "",
           "    running 1 test", *("    " + line for line in out), "  stderr ───", *("    " + line for line in err), "",
           "     Summary [   1.001s] 1 test run: 1 passed, 800 skipped"]
    (run,) = read("\n".join(log) + "\n", "nextest.log")
    assert [k.name for k in run.kernels] == names
    assert run.beam_candidates == len(err) and not any(s.source == "per-stage" for k in run.kernels for s in k.stages)
    assert all(len([s for s in k.stages if s.source == "event"]) == 26 for k in run.kernels)


def test_beam_blocks_beyond_the_compiled_kernels_are_not_kernels() -> None:
    """`BEAM=2 SVOD_PER_STAGE_UOPS=1` with only `svod_codegen=trace`: no optimizer event says which `[per-stage]`
    block is a kernel's own; the blocks outnumber the kernels compiled, so none is filed on a kernel (the kernels are
    the compile phase's, named) and one problem says why."""
    text, names = beam_log(7, kernels=2, candidates=2, beam_debug=False, events=False, completed=False)
    (run,) = read(text)
    assert [k.name for k in run.kernels] == names
    assert not any(s.source == "per-stage" for k in run.kernels for s in k.stages)
    assert any("BEAM" in p.message and "blocks" in p.message for p in run.problems)


# ------------------------------------------------------------------------------------ point 6: libtest's capture


def test_captured_tests_are_unknown_and_a_failing_tests_output_is_its_run(tmp_path: Path) -> None:
    """`cargo test` with libtest's capture: passing tests print only `test NAME ... ok` (their kernels are unknown,
    not none); the failing test's output is in the `failures:` block (`---- NAME stdout ----`,
    library/test/src/formatters/pretty.rs `write_results`), and an `assert_eq!` in the test body fails the test,
    not a kernel."""
    counter: dict[str, int] = {}
    tests = [run_test("ops::a::llvm", 41, ONE, 2, counter=counter, whole_lines=True),
             run_test("ops::b::llvm", 42, ONE, 2, counter=counter, whole_lines=True,
                      panic=assertion_panic("ops::b::llvm")),
             run_test("ops::c::llvm", 43, ONE, 1, counter=counter, whole_lines=True)]
    runs = {r.test: r for r in read(libtest_capture(tests), stated=1)}
    assert {t: (r.outcome, r.captured, len(r.kernels)) for t, r in runs.items()} == {
        "ops::a::llvm": ("ok", True, 0), "ops::b::llvm": ("FAILED", False, 2), "ops::c::llvm": ("ok", True, 0)}
    failed = runs["ops::b::llvm"]
    assert [k.name for k in failed.kernels] == tests[1].names() and not failed.unattributed
    assert failed.panic.location == ASSERT_AT and failed.failed_kernel is None and failed.last_stage is None
    log = tmp_path / "capture.log"
    log.write_text(libtest_capture(tests), encoding="utf-8")
    proc = tgstore("ingest-svod", log, "--case", "sum_rows", "--db", tmp_path / "c.db", "--json")
    assert proc.returncode == 0, proc.stderr
    summaries = {s["test"]: s for s in map(json.loads, proc.stdout.splitlines())}
    assert summaries["ops::a::llvm"]["output_captured"] and summaries["ops::a::llvm"]["kernels"] is None
    assert len(summaries["ops::b::llvm"]["kernels"]) == 2 and summaries["ops::b::llvm"]["failed_kernel"] is None


def test_an_assertion_in_the_test_body_fails_the_test_not_a_kernel() -> None:
    """`--nocapture`: the kernels printed everything, then the test's `assert_eq!` (its own file's location,
    `left`/`right`) failed: no kernel failed, every kernel is whole; a panic in Svod's code names its kernel."""
    body = run_test("ops::b::llvm", 7, ONE, 2, panic=assertion_panic("ops::b::llvm"))
    (run,) = read(libtest_nocapture([body]))
    assert run.outcome == "FAILED" and run.failed_kernel is None and len(run.kernels) == 2
    assert all(len([s for s in k.stages if s.source == "event"]) == 26 for k in run.kernels)  # 2 + 5 + 19
    svod = run_test("ops::b::llvm", 7, ONE, 2, panic="thread 'ops::b::llvm' panicked at schedule/src/optimizer/"
                    "mod.rs:412:13:\nREDUCE without a matching RANGE\n")
    (run,) = read(libtest_nocapture([svod]))
    assert run.failed_kernel == 1 and run.last_stage is not None


# ------------------------------------------------------------------------------------ point 7


ESCAPES = ["\x1b[32mok\x1b(B\x1b[m", "\x1b[1;32mok\x1b[0m", "\x1b]0;cargo test\x07ok", "\x1b]8;;file:///x\x1b\\ok",
           "\x1b7ok\x1b8", "\x9b32mok\x9b0m"]


@pytest.mark.parametrize("word", ESCAPES, ids=["terminfo sgr0", "CSI", "OSC BEL", "OSC ST", "DECSC/DECRC", "C1 CSI"])
def test_every_escape_kind_is_stripped_before_a_line_is_read(word: str) -> None:
    """`--color=always` or `script`: libtest colours `ok` through terminfo (`setaf`, `sgr0`: `ESC ( B ESC [ m` on
    xterm); terminals and runners add OSC titles and hyperlinks."""
    assert strip_ansi(word) == "ok"
    test = run_test("ops::a::llvm", 3, ONE, 1)
    text = libtest_nocapture([test]).replace("\nok\n", f"\n{word}\n")
    (run,) = read(text)
    assert run.outcome == "ok" and run.kernels and not run.problems


def test_metal_code_is_metal() -> None:
    """The C renderer's Metal dialect (`CDialect::Metal`, codegen/src/c/metal.rs at npatsakula/svod@16730a5b): the
    same `c codegen: final generated code` event and `generated_c` field, MSL inside: stored as Metal, compared with
    tinygrad's Metal renderer."""
    from tgstore.spelling.svod import kernel_renderer

    test = run_test("ops::sum_rows::metal", 9, ONE, 2, backend="metal")
    (run,) = read(libtest_nocapture([test]))
    assert [(k.name, k.code_kind) for k in run.kernels] == [(n, "metal") for n in test.names()]
    assert all("kernel void" in k.code for k in run.kernels)
    assert kernel_renderer("metal", "metal") == kernel_renderer(None, "metal") == "METAL"


def test_two_programs_in_one_test_are_two_schedules_of_one_run() -> None:
    """A test that realizes twice prints two schedules (a rangeify event each, `realize complete` after each,
    tensor/src/realize.rs): one run, its kernels filed by schedule, the counter's names going on."""
    test = run_test("ops::twice::llvm", 11, ONE, [2, 3], realize_events=True)
    (run,) = read(libtest_nocapture([test]), stated=1)
    assert run.schedules == 2 and not run.problems
    assert [(k.name, k.schedule) for k in run.kernels] == [(n, s) for s, t in enumerate(test.truth) for n in t.kernels]
    assert [s.schedule for s in run.schedule_stages] == [0, 1]


def test_escape_stripping_keeps_text() -> None:
    assert re.sub(r"\s", "", strip_ansi("plain [per-stage] 00-initial : node_count=1")) == \
        "plain[per-stage]00-initial:node_count=1"


# ------------------------------------------------------------------------------ events stored as the log has them
def test_stored_event_fields_are_the_logs_own(tmp_path: Path) -> None:
    """An event in tracing's compact layout keeps an offset into the file instead of its record (a 300-kernel trace
    log held 60 MB of tree strings otherwise): what is stored for every event is what its line says, whether it
    was left in the file, cut after a `[per-stage]` piece, or read from its record (escapes, another layout)."""
    import sqlite3

    from tgstore.db.engine import open_engine
    from tgstore.db.migrate import upgrade
    from tgstore.svod.store import ingest_svod_runs

    text, _truth = generate(11, Switches("trace", True, True, "", None, 4, patterns=2), kernels=3)
    odd = ['{"timestamp":"2026-05-07T18:07:44.000001Z","level":"DEBUG","fields":{"message":"say \\"hi\\"",'
           '"elapsed_ms":1},"target":"svod_schedule::optimizer"}',
           '{"level":"DEBUG","timestamp":"2026-05-07T18:07:44.000002Z","fields":{"message":"keys reordered"},'
           '"target":"svod_schedule::optimizer"}',
           "\x1b[2m" + EVENT]
    lines = text.split("\n")
    at = lines.index("ok")
    text = "\n".join([*lines[:at], *odd, *lines[at:]])
    path = tmp_path / "events.log"
    path.write_text(text, encoding="utf-8")
    engine = open_engine(tmp_path / "e.db")
    upgrade(engine)
    (report,) = ingest_svod_runs(engine, path, "sum_rows")
    assert sum(e.source is not None for e in report.log.events) > len(report.log.events) // 2  # most left in file
    file_lines = text.split("\n")
    with sqlite3.connect(tmp_path / "e.db") as conn:
        rows = conn.execute("SELECT line_no, timestamp, level, target, message, fields FROM svod_events "
                            "ORDER BY line_no").fetchall()
    assert len(rows) == len(report.log.events) >= 100
    for line_no, stamp, level, target, message, fields in rows:
        line = strip_ansi(file_lines[line_no - 1])
        record = json.loads(line[line.index('{"'):])
        assert json.loads(fields) == record["fields"], line_no
        assert (stamp, level, target, message) == (record["timestamp"], record["level"], record["target"],
                                                   record["fields"]["message"]), line_no
    assert {r[4] for r in rows} >= {'say "hi"', "keys reordered", "after pm_reduce"}


@pytest.mark.parametrize("variant", ["llvm", "cuda"])
def test_the_threads_advice_says_what_else_it_changes(variant: str) -> None:
    """`SVOD_THREADS` is also the number of core_id chunks a CPU kernel is split into (`HeuristicsConfig.thread_count`,
    schedule/src/optimizer/config.rs at npatsakula/svod@3e06443b): for a CPU backend's run the advice says the rerun's
    kernels can differ; a GPU backend's kernels are not split by it, and the advice says nothing of the kind."""
    test = run_test(f"ops::t::{variant}", 9, DEFAULT, 4)
    (run,) = read(libtest_nocapture([test]))
    (advice,) = [p.message for p in run.problems if "hold no proof of their kernel" in p.message]
    assert "Rerun with SVOD_THREADS=1" in advice
    assert ("core_id chunks a CPU kernel" in advice) == (variant == "llvm")
    assert "SVOD_DUMP_CANONICAL_STAGE=" in advice  # the kernels have bare names of their own: documents tell them
