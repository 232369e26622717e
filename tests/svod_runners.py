"""Whole test sessions around Svod programs (tests/svod_concurrency.py), laid out as the test runners print them.

From the runners' source (facts, not code):
* libtest, rust-lang/rust `library/test/src/formatters/pretty.rs` at 0ca3758da72649509a7c1f8fcf00134195f3da8a:
  `running N tests`; `test NAME ... ` before a test when one test thread runs (`write_test_start`), the result word
  after (`ok`, `FAILED`, `ignored`), coloured through terminfo (`setaf`, then `sgr0`, which xterm spells
  `ESC ( B ESC [ m`); `write_results`: `\\nfailures:\\n`, then for each failed test with captured output
  `---- NAME stdout ----` and the text, then `\\nfailures:\\n` and `    NAME` per test; `\\ntest result: ...`.
  Without `--nocapture` a test's output goes into its capture buffer (one lock per `print!`/`eprintln!`, so its
  lines stay whole) and a passing test shows none.
* cargo-nextest, nextest-rs/nextest `nextest-runner/src/reporter/displayer/imp.rs`: `Starting N tests across M
  binaries`, `status_str`, and the status-line snapshot at 98965789c9816d55dbbf184722a2ac4841e77a4c (`        PASS
  [   1.000s] (  1/100) my-binary-id test_name`); the output blocks in two eras: current (bdb177eb9b314648ca3271d2
  536f28b6dfec12c2, `output_spec_for_finished`: `  stdout ───` / `  stderr ───`, the output indented four spaces by
  `indenter.rs`, which writes no indent on an empty line; `--no-output-indent`: `── stdout ──`, unindented) and older
  (000c2a46343cfcdb57732d6c404f7ebaae9dd610b, `output_spec_for_test`: a four-wide bar, `STDOUT:` padded to 19, the
  test named, no indent); a blank line after (`unit_output.rs` `write_child_execution_output`); `immediate-final`
  prints the output again after the summary. One process per test (`BIN --exact NAME --nocapture`), stdout and
  stderr captured apart.
* Svod's panics: `thread 'NAME' panicked at FILE:LINE:COL:` and the message; an `assert_eq!` in a test body
  (`tensor/src/test/unit/*.rs`) prints ``assertion `left == right` failed`` with `  left:` / ` right:` lines.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from svod_concurrency import (
    PREAMBLE,
    Interner,
    KernelPlan,
    Printer,
    Switches,
    Truth,
    _event,
    emit_program,
    plan_program,
)

GREEN, RED, RESET = "\x1b[32m", "\x1b[31m", "\x1b(B\x1b[m"  # terminfo's setaf 2 / 1 and xterm's sgr0
PASS_LINE = "test result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 800 filtered out; finished in 0.93s"
ASSERT_AT = "tensor/src/test/unit/reduce.rs:42:5"
PANIC_AT = "schedule/src/optimizer/mod.rs:412:13"


@dataclass
class TestRun:
    """One test: its name, the programs it ran (their writes, stream by stream), how it ended."""

    name: str
    printer: Printer
    truth: list[Truth] = field(default_factory=list)
    outcome: str = "ok"
    panic: str | None = None  # the panic's text (stderr), printed after the programs

    def names(self) -> list[str]:
        return [name for truth in self.truth for name in truth.kernels]


def run_test(name: str, seed: int, switches: Switches, kernels: int | list[int], *, counter: dict[str, int] | None
             = None, backend: str = "llvm", whole_lines: bool = False, realize_events: bool = False,
             panic: str | None = None) -> TestRun:
    """A test realizing one program per entry of `kernels` (each its own schedule), names from a process-wide counter
    (`counter`, shared by the tests of one `cargo test` process; nextest's are one process each)."""
    rng = random.Random(seed)
    interner = Interner(rng.randrange(0, 5000))
    clock = [rng.randrange(1000)]
    printer = Printer(1)
    run = TestRun(name, printer, panic=panic, outcome="FAILED" if panic else "ok")
    counter = {} if counter is None else counter
    for n in [kernels] if isinstance(kernels, int) else kernels:
        plans = plan_program(rng, n)
        _rename(plans, counter)
        truth = Truth([p.name for p in plans], {}, {}, set(), switches.threads)
        if realize_events:  # the schedule's rangeify event starts the realize (schedule/src/rangeify/transforms.rs)
            graph = plans[0].stages[0][2]
            interner.intern(graph)
            tree, count = interner.tree(graph)
            printer.write(_event(clock, "DEBUG", "svod_schedule::rangeify::transforms", "Stage 0: range assignment "
                                 "+ apply rangeify complete", **{"uop.tree": tree}, node_count=count, elapsed_ms=0))
        emit_program(rng, switches, plans, printer, truth, interner, clock, backend=backend, whole_lines=whole_lines)
        if realize_events:  # tensor/src/realize.rs: `debug!(prep_ms, exec_ms, "realize complete")`
            printer.write(_event(clock, "DEBUG", "svod_tensor::realize", "realize complete", prep_ms=3, exec_ms=0))
        run.truth.append(truth)
    if panic:
        printer.write(panic, "err")
    return run


def _rename(plans: list[KernelPlan], counter: dict[str, int]) -> None:
    """`finalize_kernel_name` in schedule order with the process's `KERNEL_NAME_COUNTS`."""
    for plan in plans:
        counter[plan.bare] = counter.get(plan.bare, 0) + 1
        plan.name = plan.bare if counter[plan.bare] == 1 else f"{plan.bare}n{counter[plan.bare] - 1}"


def assertion_panic(test: str) -> str:
    return (f"thread '{test}' panicked at {ASSERT_AT}:\nassertion `left == right` failed\n  left: [1.0, 2.0]\n"
            " right: [1.0, 3.0]\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")


def libtest_nocapture(tests: list[TestRun], ansi: bool = False) -> str:
    """`cargo test -- --nocapture --test-threads=1 2>&1`: each test's output between `test NAME ... ` and its result."""
    out = [*PREAMBLE[:-1], f"running {len(tests)} tests"]
    for test in tests:
        body = test.printer.text()
        result = _coloured(test.outcome, ansi)
        out.append(f"test {test.name} ... {body}{'' if body.endswith(chr(10)) or not body else chr(10)}{result}")
    failed = [t for t in tests if t.outcome == "FAILED"]
    if failed:
        out += ["", "failures:", "", "failures:", *[f"    {t.name}" for t in failed]]
    out += ["", _summary(tests, ansi), ""]
    return "\n".join(out)


def libtest_capture(tests: list[TestRun], ansi: bool = False) -> str:
    """`cargo test` with libtest's capture (no `--nocapture`, its threads): results as tests end, a failing test's
    captured output after all of them in the failures block."""
    out = [*PREAMBLE[:-1], f"running {len(tests)} tests"]
    out += [f"test {t.name} ... {_coloured(t.outcome, ansi)}" for t in tests]
    failed = [t for t in tests if t.outcome == "FAILED"]
    if failed:
        out += ["", "failures:", ""]
        for test in failed:
            out += [f"---- {test.name} stdout ----", test.printer.text().rstrip("\n"), ""]
        out += ["", "failures:", *[f"    {t.name}" for t in sorted(failed, key=lambda t: t.name)]]
    out += ["", _summary(tests, ansi), ""]
    return "\n".join(out)


def _coloured(word: str, ansi: bool) -> str:
    return f"{GREEN if word == 'ok' else RED}{word}{RESET}" if ansi else word


def _summary(tests: list[TestRun], ansi: bool) -> str:
    failed = sum(t.outcome == "FAILED" for t in tests)
    word = _coloured("FAILED" if failed else "ok", ansi)
    return f"test result: {word}. {len(tests) - failed} passed; {failed} failed; 0 ignored; 0 measured; 800 filtered " \
        "out; finished in 0.93s"


NEXTEST_ERAS = ("current", "no-indent", "old")


def _nextest_block(era: str, stream: str, binary: str, test: str, text: str) -> list[str]:
    """One captured stream as nextest shows it (see the module's docstring for each era's source)."""
    if era == "old":
        return [f"──── {stream.upper() + ':':<19} {binary} {test}", text.rstrip("\n")]
    if era == "no-indent":
        return [f"── {stream} ──", text.rstrip("\n")]
    return [f"  {stream} ───", *("    " + line if line else "" for line in text.rstrip("\n").split("\n"))]


def nextest(tests: list[TestRun], success_output: bool = True, no_capture: bool = False,
            binary: str = "svod-tensor", era: str = "current", final: bool = False) -> str:
    """`cargo nextest run` (`--success-output immediate` to show passing tests' output; `final`: immediate-final,
    each output again after the summary; `--no-capture` runs the tests one at a time with their output passed
    through, before each status line); `era`: the output blocks' layout, one of NEXTEST_ERAS."""
    width = len(str(len(tests)))
    out = ["────────────", "    Nextest run ID 3f0c6a1e-2b7d-4c55-9a61-0d8e2c1f7b44 with nextest profile: default",
           f"    Starting {len(tests)} tests across 1 binary (800 tests skipped)"]
    for n, test in enumerate(tests, start=1):
        status = "PASS" if test.outcome == "ok" else "FAIL"
        line = f"{status:>12} [   0.{450 + n:03d}s] ({n:>{width}}/{len(tests)}) {binary} {test.name}"
        stdout = f"\nrunning 1 test\ntest {test.name} ... " + test.printer.text("out") + \
            f"{test.outcome}\n\ntest result: {test.outcome}. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered " \
            "out; finished in 0.10s\n"
        if no_capture:
            out += [test.printer.text().rstrip("\n"), line]
            continue
        out.append(line)
        if success_output or test.outcome != "ok":
            out += [*_nextest_block(era, "stdout", binary, test.name, stdout),
                    *_nextest_block(era, "stderr", binary, test.name, test.printer.text("err")), ""]
    passed = sum(t.outcome == "ok" for t in tests)
    out += ["────────────", f"     Summary [   1.{len(tests):03d}s] {len(tests)} tests run: {passed} passed, "
            f"{len(tests) - passed} failed, 800 skipped"]
    for n, test in enumerate(tests, start=1):
        if test.outcome != "ok" or final:
            status = "PASS" if test.outcome == "ok" else "FAIL"
            out.append(f"{status:>12} [   0.451s] ({n:>{width}}/{len(tests)}) {binary} {test.name}")
        if final:
            out += [*_nextest_block(era, "stdout", binary, test.name, "running 1 test\n" + test.printer.text("out")),
                    *_nextest_block(era, "stderr", binary, test.name, test.printer.text("err")), ""]
    return "\n".join(out) + "\n"


def beam_log(seed: int, kernels: int = 2, candidates: int = 3, beam_debug: bool = True, events: bool = True, *,
             level: str = "trace", completed: bool | None = None, workers: int = 1, fail_at: int | None = None,
             codegen: bool = True) -> tuple[str, list[str]]:
    """`BEAM=2 SVOD_PER_STAGE_UOPS=1 cargo test ... -- --nocapture` (tensor/src/realize.rs `beam_search_optimize`,
    tensor/src/beam_worker.rs): one optimizing thread (BEAM forces it); per kernel its pre-optimization (events), the
    `svod-beam-worker` processes' candidates (each a whole post-optimization printing `[per-stage]` lines, no tracing:
    the worker sets none up), `beam_search_optimize: completed` (`completed`: with `svod_tensor::realize=debug`; by
    default when `events`), then the chosen kernel's post-optimization (events and `[per-stage]` lines, no
    `optimized`/`postrange` documents). `beam_debug`: the `[beam]` lines (BEAM_DEBUG=1); `events`: the optimizer's
    events at `level` (`trace`: with `kernel initial`; `debug`: without); `workers`: worker processes printing at once
    (CUDA/AMD/Metal: `compile_workers` is the thread budget), each `eprintln!` piece a write of its own and no lock
    between processes, so their lines cut each other; `fail_at`: the first candidate stops after that many stages (a
    candidate that failed to compile). Returns the log and the kernels' names."""
    rng = random.Random(seed)
    plans = plan_program(rng, kernels)
    interner = Interner(rng.randrange(0, 5000))
    clock = [rng.randrange(1000)]
    completed = events if completed is None else completed
    lines: list[str] = []
    for plan in plans:
        interner.intern(plan.stages[0][2])
    for plan in plans:
        for _label, message, graph in plan.stages[:6]:
            interner.intern(graph)
            if events and (message != "kernel initial" or level == "trace"):
                kind = "TRACE" if message == "kernel initial" else "DEBUG"
                field = "ast.initial" if message == "kernel initial" else "ast.pre"
                tree, count = interner.tree(graph)
                lines.append(_event(clock, kind, "svod_schedule::optimizer", message, **{field: tree},
                                    node_count=count).rstrip("\n"))
        if beam_debug:
            lines.append(f"[beam] start device=CPU width=2 parallel={workers if workers > 1 else 0} "
                         f"spawn_workers={workers} max_tasks_per_child=16 timeout=10s")
        for wave in range(2):
            if beam_debug:
                lines.append(f"[beam] compile wave: {candidates} candidates")
            blocks = []
            for candidate in range(candidates):  # the worker's own post-optimization: `[per-stage]` lines only
                stop = fail_at if fail_at is not None and wave == 0 and candidate == 0 else None
                blocks.append([["[per-stage] ", label, " : node_count=", str(rng.randint(15, 60)), "\n"]
                               for label, _message, _graph in plan.stages[6:][:stop]])
            lines += _workers_write(blocks, workers, rng)
        if beam_debug:
            lines.append("[beam] final timing=Some(12.5µs) iterations=2 generated=9 compiled=6 unique_binary=5 "
                         "benchmarked=5 opts=[Opt { op: Upcast, axis: Some(0), arg: Int(4) }]")
        if completed:
            lines.append(_event(clock, "DEBUG", "svod_tensor::realize", "beam_search_optimize: completed",
                                opts="[Upcast(0, 4)]", iterations=2).rstrip("\n"))
        for label, message, graph in plan.stages[6:]:  # apply_post_optimization_with_config on the chosen opts
            interner.intern(graph)
            tree, count = interner.tree(graph)
            if events and (message != "kernel initial" or level == "trace"):
                field = "ast.initial" if message == "kernel initial" else "ast.optimized"
                lines.append(_event(clock, "TRACE" if message == "kernel initial" else "DEBUG",
                                    "svod_schedule::optimizer", message, **{field: tree},
                                    node_count=count).rstrip("\n"))
            lines.append(f"[per-stage] {label} : node_count={count}")
    for plan in plans if codegen else []:
        lines.append(_event(clock, "TRACE", "svod_codegen::llvm::text", "llvm codegen: final generated code",
                            generated_code=f"define void @{plan.name}(ptr %data0) {{\n  ret void\n}}\n").rstrip("\n"))
    test = "ops::beam_reduce::llvm"
    text = "\n".join([*PREAMBLE, f"test {test} ... {lines[0]}", *lines[1:], "ok", "", PASS_LINE.format(n=1), ""])
    return text, [p.name for p in plans]


def _workers_write(blocks: list[list[list[str]]], workers: int, rng: random.Random) -> list[str]:
    """Candidates' `eprintln!` pieces as `workers` processes write them to one stderr: each process its candidates in
    turn, piece by piece; which process writes next is the scheduler's. Returns the file's lines."""
    queues = [[piece for block in blocks[w::workers] for line in block for piece in line] for w in range(workers)]
    out: list[str] = []
    while any(queues):
        live = [q for q in queues if q]
        queue = live[rng.randrange(len(live))] if workers > 1 else live[0]
        out.append(queue.pop(0))
    return "".join(out).rstrip("\n").split("\n") if out else []
