"""The four readings issue 44 found wrong or refused, and tracing's text formats read as their JSON twins: Rust
1.88+'s panic line (`thread 'NAME' (TID) panicked at`), Svod's ONNX skip lines and an unknown skip line, libtest's
capture (runs stored, "output captured"), a program without a test harness (tracing's Full format, ANSI on, from
`fmt::init()`; and Compact). The real emitter crate's scenarios (tests/svod_emitter/) check the same against what
the real libtest, rayon and tracing-subscriber print."""

from __future__ import annotations

import pytest
from svod_concurrency import Switches, generate
from svod_text_formats import text_line, to_text

from tgstore.svod.readers import read_runs
from tgstore.svod.readers.grammar import LINE_KINDS, kind_of
from tgstore.svod.readers.hints import nothing_printed
from tgstore.svod.readers.outcomes import skip_line
from tgstore.svod.readers.tracing_text import parse

ONE = Switches("trace", True, True, None, None, 1)
THREADS = Switches("trace", True, False, None, None, 4)


def read(text: str, name: str = "t.log"):
    return read_runs([(name, text)])


def shape(run) -> list:
    return [(k.name, [(s.label, s.source, s.node_count, s.line) for s in k.stages]) for k in run.kernels]


def test_every_line_kind_reads_its_own_example() -> None:
    for name, (kind, _pattern) in LINE_KINDS.items():
        assert kind_of(kind.example) == name, name


@pytest.mark.parametrize("layout", ["full", "compact"])
@pytest.mark.parametrize("ansi", [False, True], ids=["plain", "ansi"])
@pytest.mark.parametrize("switches", [ONE, THREADS], ids=["SVOD_THREADS=1", "default threads"])
@pytest.mark.parametrize("thread", [None, "name", "id"])
def test_text_formats_read_as_their_json_twin(layout: str, ansi: bool, switches: Switches, thread: str | None
                                             ) -> None:
    """Each JSON event rewritten as Full or Compact writes it (with and without ANSI, thread names and ids): the
    same kernels, stages, node counts and lines, the same events' fields."""
    for seed in (3, 11):
        text, _truth = generate(seed, switches, kernels=3)
        options = {"thread_name": "main"} if thread == "name" else {"thread_id": 3} if thread == "id" else {}
        (json_run,) = read(text)
        (text_run,) = read(to_text(text, layout, ansi, **options))
        assert shape(text_run) == shape(json_run)
        assert len(text_run.unattributed) == len(json_run.unattributed)
        assert [(e.line, e.target, e.message) for e in text_run.events] == \
            [(e.line, e.target, e.message) for e in json_run.events]
        assert [e.record["fields"] for e in text_run.events] == [e.record["fields"] for e in json_run.events]


def test_a_text_line_with_spans_and_a_message_holding_colons() -> None:
    record = parse("2026-12-06T19:57:38.123456Z DEBUG realize{n=2}:optimize: svod_tensor::realize: prepare: total "
                   "elapsed_ms=3")
    assert record == {"timestamp": "2026-12-06T19:57:38.123456Z", "level": "DEBUG", "target": "svod_tensor::realize",
                      "fields": {"message": "prepare: total", "elapsed_ms": 3},
                      "spans": [{"name": "realize"}, {"name": "optimize"}]}
    assert parse(" INFO svod_tensor::realize: prepare: total")["fields"] == {"message": "prepare: total"}
    assert parse("running 4 tests") is None and parse("ERROR nothing here") is None


# ------------------------------------------------------------------------------ (a) Rust 1.88+'s panic line

PANIC_NEW = "\nthread '<unnamed>' (24331) panicked at schedule/src/optimizer/mod.rs:612:9:\nindex out of bounds\n" \
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
BACKTRACE = "\nthread 'ops::t::llvm' (24330) panicked at schedule/src/optimizer/mod.rs:612:9:\nindex out of bounds\n" \
    "stack backtrace:\n   0: __rustc::rust_begin_unwind\n" \
    "             at /rustc/5980/library/std/src/panicking.rs:689:5\n" \
    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"


@pytest.mark.parametrize("panic", [PANIC_NEW, BACKTRACE, PANIC_NEW.replace(" (24331)", "")],
                         ids=["rayon worker, (TID)", "RUST_BACKTRACE=1", "before Rust 1.88"])
def test_a_panic_in_either_form_is_stored_with_thread_location_message_kernel_and_stage(panic: str) -> None:
    """One optimizing thread, the panic in the third kernel's post-optimization: the run failed, at that location,
    with that message, in that kernel, after its last stage printed."""
    text, _truth = generate(7, ONE, kernels=3)
    cut = text.index("ok\n\ntest result")
    body = text[:cut]
    third = body.rfind('"message":"after pm_reduce"')
    line_end = body.index("\n", third)
    failed = body[:line_end + 1] + panic + "FAILED\n\nfailures:\n\nfailures:\n    ops::program_7::llvm\n\n" \
        "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.2s\n"
    (run,) = read(failed)
    assert run.outcome == "FAILED" and run.panic is not None
    assert run.panic.location == "schedule/src/optimizer/mod.rs:612:9" and run.panic.message == "index out of bounds"
    assert run.panic.thread in ("<unnamed>", "ops::t::llvm")
    assert run.failed_kernel == run.kernels[-1].index and run.last_stage == "10-pm_reduce"


def test_a_panic_under_nextest_new_form() -> None:
    """nextest's current era: the panic in the indented stderr block, Rust 1.88+'s form."""
    text = ("    Starting 1 test across 1 binary\n        FAIL [   0.450s] (1/1) svod-tensor ops::t::llvm\n"
            "  stdout ───\n\n    running 1 test\n    test ops::t::llvm ... FAILED\n\n  stderr ───\n\n"
            "    thread 'ops::t::llvm' (4242) panicked at tensor/src/realize.rs:88:13:\n"
            "    called `Option::unwrap()` on a `None` value\n"
            "    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n"
            "     Summary [   0.450s] 1 test run: 0 passed, 1 failed, 0 skipped\n")
    (run,) = read(text, "nextest.log")
    assert run.outcome == "FAILED" and run.panic.location == "tensor/src/realize.rs:88:13"
    assert run.panic.thread == "ops::t::llvm" and run.panic.message.startswith("called `Option::unwrap()`")


# ------------------------------------------------------------------------------ (b) skip lines, one table


@pytest.mark.parametrize("line,variant", [
    ("AMD ONNX variant skipped: no active supported AMD device", "amd"),
    ("CUDA ONNX variant skipped: no active CUDA device", "cuda"),
    ("amd codegen_tests variant: skipped (no supported AMD GPU)", "amd"),
    ("metal codegen_tests variant: skipped (no Metal device)", "metal"),
    ("cuda codegen_tests variant: skipped (no CUDA device)", "cuda"),
])
def test_every_skip_line_svod_prints_is_a_skip(line: str, variant: str) -> None:
    assert skip_line(line).known and skip_line(line).variant == variant
    test = f"onnx::light::light_resnet50::{variant}"
    (run,) = read(f"running 1 test\ntest {test} ... {line}\nok\n\ntest result: ok. 1 passed; 0 failed\n")
    assert run.outcome == "skipped" and not run.problems


def test_an_unknown_skip_line_is_a_skip_with_a_problem_never_ok() -> None:
    line = "ROCm ONNX variant skipped: no HIP runtime"
    (run,) = read(f"running 1 test\ntest onnx::light::light_vgg19::amd ... {line}\nok\n\ntest result: ok. 1 passed\n")
    assert run.outcome == "skipped"
    (problem,) = run.problems
    assert problem.line == 2 and "skip line of a form tgstore does not know" in problem.message


# ------------------------------------------------------------------------------ (c) libtest's capture


def test_a_captured_log_stores_its_runs_marked_output_captured() -> None:
    text = ("\nrunning 3 tests\ntest ops::a::llvm ... ok\ntest ops::b::clang ... ok\ntest ops::c::amd ... ignored\n\n"
            "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.50s\n")
    runs = read(text)
    assert [(r.test, r.outcome, r.captured, r.kernels) for r in runs] == [
        ("ops::a::llvm", "ok", True, []), ("ops::b::clang", "ok", True, []), ("ops::c::amd", "ignored", False, [])]
    assert nothing_printed(runs) is None


def test_a_file_svod_printed_nothing_in_is_refused_with_advice_that_fits_it() -> None:
    runs = read("   Compiling foo v0.1.0\n    Finished dev [unoptimized] target(s) in 0.5s\n")
    why = nothing_printed(runs)
    assert why is not None and "no tracing event" in why and "nocapture" not in why
    other = text_line({"timestamp": "2026-12-06T19:57:38.123456Z", "level": "INFO", "target": "hyper::client",
                       "fields": {"message": "connected"}})
    why = nothing_printed(read(other + "\n"))
    assert "other targets (hyper::client)" in why


# ------------------------------------------------------------------------------ (d) a program without a harness


@pytest.mark.parametrize("layout", ["full", "compact"])
def test_an_example_program_is_one_run_named_after_it(layout: str) -> None:
    """`cargo run --example sum_rows` (Svod's examples call `fmt::init()`: Full, ANSI on): one run, named after the
    program, every kernel read."""
    text, _truth = generate(5, ONE, kernels=2)
    body = text[text.index("test ops::") + len("test ops::program_5::llvm ... "):text.index("ok\n\ntest result")]
    log = ("   Compiling svod v0.1.0\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 9.1s\n"
           "     Running `target/debug/examples/sum_rows`\n" + to_text(body, layout, ansi=True))
    (run,) = read(log)
    (json_run,) = read(text)
    assert run.test == "sum_rows" and run.outcome == "ok"
    assert [k.name for k in run.kernels] == [k.name for k in json_run.kernels] and len(run.kernels) == 2
    assert [len(k.stages) for k in run.kernels] == [len(k.stages) for k in json_run.kernels]
    killed = log + "error: process didn't exit successfully: `target/debug/examples/sum_rows` (signal: 9, SIGKILL: " \
        "kill)\n"
    (run,) = read(killed)
    assert run.outcome is None and any("program sum_rows has no end" in p.message for p in run.problems)


# ------------------------------------------------------------------------------ stdout and stderr in two files


def _apart(text: str) -> tuple[str, str]:
    """A `--test-threads=1` log as `>out.log 2>err.log` writes it: Svod's stderr lines in the second file."""
    out, err = [], []
    for line in text.split("\n"):
        if line.startswith("test ") and " ... " in line and not line.endswith((" ... ok", " ... FAILED")):
            start, _sep, line = line.partition(" ... ")
            out.append(start + " ... ")
            if not line:
                continue
        (err if line.startswith(("[per-stage]", "[dump-", "amd codegen", "thread '", "note: ", "assertion", "  left",
                                 " right")) else out).append(line)
    return "\n".join(out), "\n".join(err) + "\n"


def test_a_session_in_two_files_gives_each_test_its_stderr() -> None:
    """A skipped GPU variant, a test with kernels, and a test whose own assertion failed: the skip line and the panic
    (with its message) anchor the stderr file to their tests; the [per-stage] lines between go to the one test that
    ran there, not to BEAM's candidates or a run of no test."""
    text, _truth = generate(9, ONE, kernels=2)
    head, rest = text.split("test ops::program_9::llvm ... ", 1)
    body = rest[:rest.index("ok\n\ntest result")]
    session = (head + "test ops::p::amd ... amd codegen_tests variant: skipped (no supported AMD GPU)\nok\n"
               "test ops::p::llvm ... " + body + "ok\ntest ops::q::llvm ... \nthread 'ops::q::llvm' (77) panicked at "
               "tests/ops.rs:9:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nFAILED\n\n"
               "test result: FAILED. 2 passed; 1 failed\n")
    out, err = _apart(session)
    runs = read_runs([("out.log", out), ("err.log", err)])
    assert [(r.test, r.outcome) for r in runs] == [("ops::p::amd", "skipped"), ("ops::p::llvm", "ok"),
                                                   ("ops::q::llvm", "FAILED")]
    amd, llvm, failed = runs
    per_stage = [s for k in llvm.kernels for s in k.stages if s.source == "per-stage"]
    assert len(per_stage) == 2 * 20 and all(s.file == 1 for s in per_stage) and llvm.beam_candidates == 0
    assert (failed.panic.thread, failed.panic.location) == ("ops::q::llvm", "tests/ops.rs:9:5")
    assert failed.panic.message == "assertion `left == right` failed\n  left: 1\n right: 2"


@pytest.mark.parametrize("layout", ["json", "compact", "full"])
def test_an_event_glued_to_a_documents_closing_brace_is_read_there(layout: str) -> None:
    """Another thread's event (stdout, one write) can land before the newline of a canonical document's `}` (stderr,
    written piece by piece): the real emitter printed it in the compact format with ANSI (a random draw). The event
    is read at that line, as its JSON twin is, and the document stays whole."""
    text, _truth = generate(5, Switches("trace", True, False, None, "", 1), kernels=2)
    text = text if layout == "json" else to_text(text, layout, ansi=True)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines[:-2]) if line == "}" and lines[i + 1].endswith(" : end")
              and "svod_schedule::optimizer" in lines[i + 2])
    # as the emitter printed it: `}EVENT`, the event's newline, the brace's newline (a blank line), then `: end`
    glued = lines[:at] + ["}" + lines[at + 2], "", lines[at + 1]] + lines[at + 3:]
    (before,) = read_runs([("t.log", text)], threads_stated=1)
    (after,) = read_runs([("t.log", "\n".join(glued))], threads_stated=1)
    moved = {at + 3: at + 1}  # the glued event's line (1-based): two up
    assert [(moved.get(e.line, e.line), e.message) for e in before.events] == \
        [(e.line, e.message) for e in after.events]
    assert [[(s.label, s.source, moved.get(s.line, s.line)) for s in k.stages] for k in before.kernels] == \
        [[(s.label, s.source, s.line) for s in k.stages] for k in after.kernels]
    assert [p.message for p in after.problems] == [p.message for p in before.problems] == []
