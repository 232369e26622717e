"""A `cargo test` log is a test session: cutting it into one part per libtest test, with the test's outcome.

What libtest and Svod print, read from their source (facts, not code):
* libtest with `--test-threads=1` prints `test NAME ... ` before the test runs, so the test's first output line
  follows on the same line, and its result (`ok`, `FAILED`, `ignored`) on a line of its own after the output. With
  libtest's threads it prints `test NAME ... RESULT` whole, when the test ends; the tests' output interleaves and no
  output line names its test (tracing's JSON has no span or thread fields, `schedule/src/testing.rs`).
* `codegen_tests!` (`tensor/src/config.rs`) makes `NAME::clang`, `::llvm`, `::amd`, `::metal`, `::cuda` (parameterized:
  `NAME::llvm::NAME::case`); a GPU variant without its device prints `amd codegen_tests variant: skipped (no supported
  AMD GPU)` (likewise `metal ... (no Metal device)`, `cuda ... (no CUDA device)`) on stderr and passes.
* a panic prints `thread 'NAME' panicked at FILE:LINE:COL:` then its message (any number of lines, a UOp tree
  included) and `note: run with `RUST_BACKTRACE=1` ...`; libtest then prints `FAILED`, a `failures:` block and
  `test result: FAILED. ...`.
* without `--nocapture` libtest keeps each test's output (rust-lang/rust `library/test/src/formatters/pretty.rs`,
  `write_results`): a passing test shows only `test NAME ... ok` (what its kernels did is unknown, not empty), a
  failing test's output comes after all results, `---- NAME stdout ----` then the text, in the `failures:` block
  (`--show-output` prints passing tests' the same way under `successes:`). The capture buffer is written under one
  lock per `print!`/`eprintln!`, so a captured line is never cut by another thread. Caveat: threads inherit the
  capture of the thread that spawns them, so the kernels Svod optimizes on its rayon pool print into the capture of
  the test that started the pool, not their own test's.

Output that belongs to no test (cargo's lines, a program run outside libtest) is one part with no test name. Tests
interleaved by libtest's threads are split only where the evidence allows: when one test alone could have printed
Svod output (the others printed nothing, or only their skip line), and a panic naming its thread is its test's.
Otherwise the log is still read, never refused: each test keeps its outcome and panic, and the Svod output no proof
ties to a test stays in the part with no test name, marked `unproven` with what would prove it (issue 44 point 3).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from tgstore.svod.drawing import TREE_STARTS
from tgstore.svod.readers import outcomes, tracing_text
from tgstore.svod.readers.grammar import (
    CARGO_EXIT,
    CARGO_RUNNING,
    PANIC,
    SECTION,
    SECTION_ENDS,
    TEST_START,
    THREAD_NAME,
    program_name,
)
from tgstore.svod.readers.lines import FileText, Lines, find_all
from tgstore.svod.readers.model import strip_ansi
from tgstore.svod.readers.panics import Panic, panic_at, panicked_near, torn_at
from tgstore.svod.readers.pieces import EVENT_START
from tgstore.svod.readers.unshuffle import unshuffle
from tgstore.svod.readers.untangle import untangle

RESULTS = tuple(outcomes.LIBTEST_RESULTS)
VARIANTS = ("clang", "llvm", "amd", "metal", "cuda")
# JSON events and documents, stage lines, trees: no test, skip, result line
PLAIN_STARTS = frozenset("{}[] " + TREE_STARTS)





@dataclass
class TestPart:
    """What one test (or no test: name None) printed, with each line's number in the file."""

    name: str | None
    lines: Lines = field(default_factory=lambda: Lines(FileText("")))
    outcome: str | None = None  # ok | FAILED | ignored | skipped; None: never finished (a cut log)
    result_line: int | None = None
    panic: Panic | None = None
    panic_at: int | None = None  # the index in `lines` of the first `thread '...' panicked at` line
    torn_panic: int | None = None  # the file line of a panic's first line too torn to read (no Panic proven)
    skip_reason: str | None = None
    stderr: Lines | None = None  # its stderr, where the runner kept the streams apart (nextest); else in `lines`
    captured: bool = False  # the runner kept its output and showed none: what its kernels did is unknown
    sectioned: bool = False  # its output came from libtest's `---- NAME stdout ----` section
    live: bool = False  # it printed while it ran (`--nocapture`)
    unknown_skip: tuple[int, str] | None = None  # a `... skipped ...` line of a form outcomes.SKIP_LINES lacks
    stream: int = 0  # 0: the log's one stream; 1 stdout, 2 stderr where they were written to two files
    program: bool = False  # no test harness: a program's one run, named after it (cargo's `Running` line)
    unproven: str | None = None  # the part with no test name holds Svod output of tests no proof tells apart: why

    @property
    def variant(self) -> str | None:
        return variant_of(self.name)


def variant_of(test: str | None) -> str | None:
    """The codegen_tests! backend of a test name: the last of its path segments that is one."""
    if not test:
        return None
    found = [segment for segment in test.split("::") if segment in VARIANTS]
    return found[-1] if found else None


def case_from_test(test: str) -> str:
    """`--case-from-test`: the path segment just before the backend variant (the `codegen_tests!` function name;
    the last segment when there is no variant), with a `test_` prefix removed: `tensor::reduce::sum_rows::llvm` and
    `test_sum_rows::clang::test_sum_rows::_8x64` are both `sum_rows`."""
    segments = test.split("::")
    at = next((i for i, s in enumerate(segments) if s in VARIANTS and i > 0), len(segments))
    return segments[at - 1].removeprefix("test_")


# a line split_tests must look at: one that does not start like a JSON event or document, a stage line or a tree
# line, or a short indented one that may be a padded result, or cargo's `Running `PROGRAM`` line
SPECIAL = re.compile(rf"\n(?:[^{{}}\[\]{TREE_STARTS} \n]"
                     r"|[ ]{1,20}(?:ok|FAILED|ignored)[^\n]{0,4}(?:\n|$)|[ ]{1,20}Running `)")


def _special_lines(file: FileText) -> Iterator[int]:
    """The numbers of the lines split_tests must look at: any that a test, result or skip line can be, or that has
    ANSI or CR in it; the rest (JSON events, stage lines, trees) go to the part being printed as they are."""
    text = file.text
    numbers = {file.number_at(m.start() + 1) for m in SPECIAL.finditer(text)}
    if text and SPECIAL.match("\n" + text[:40]):
        numbers.add(1)
    numbers |= {file.number_at(at) for char in "\x1b\r" for at in find_all(text, char)}
    yield from sorted(numbers)


def split_tests(text: str) -> list[TestPart]:
    """The parts of a log, in order: output outside any test first, then one part per test."""
    # libtest's threads: its result lines torn by Svod's stderr, put back apart; a panic's first line likewise
    file = FileText(unshuffle(untangle(text)))
    outside = TestPart(None, Lines(file))
    parts: list[TestPart] = [outside]
    current: TestPart | None = None
    finished: dict[str, TestPart] = {}
    plain_from = 1  # the first line not yet given to a part
    section: TestPart | None = None  # the test whose captured output (failures block) is being read
    program: str | None = None  # the program `cargo run` ran (its `Running` line)
    exit_status: str | None = None  # cargo's `process didn't exit successfully: ... (HOW)`
    for number in _special_lines(file):
        (section or current or outside).lines.add_range(plain_from, number)
        plain_from = number + 1
        raw = file.line(number)
        line = strip_ansi(raw).rstrip("\r")
        heading = SECTION.match(line)
        if heading:
            section = finished.get(heading.group("name"))
            if section is None:
                section = finished[heading.group("name")] = TestPart(heading.group("name"), Lines(file))
                parts.append(section)
            section.sectioned = True
            continue
        if section is not None and SECTION_ENDS.match(line):
            section = None
        result = _result(line)
        if section is None and current is not None and result:  # --test-threads=1: the result after the output
            current.outcome = current.outcome if current.outcome == "skipped" else result
            current.result_line, current = number, None
            continue
        start = TEST_START.match(line) if section is None else None
        if start:
            name, tail = start.group("name"), start.group("tail")
            if _result(tail):  # a whole result line: a test with no output, or libtest's threads
                part = finished.get(name) or TestPart(name, Lines(file))
                part.outcome = part.outcome if part.outcome == "skipped" else _result(tail)
                part.result_line = number
                if name not in finished:
                    finished[name] = part
                    parts.append(part)
                current = None if current is part else current
                continue
            else:
                current = TestPart(name, Lines(file), live=True)  # started, its result to come: not captured
                finished[name] = current
                parts.append(current)
                if not tail.strip():
                    continue
                line = tail  # the test's first output line joins libtest's `test NAME ... `
        owner = section if section is not None else current if current is not None else outside
        skip = outcomes.skip_line(line) if owner.name is not None else None
        if skip is not None and skip.known and variant_of(owner.name) == skip.variant:
            owner.outcome, owner.skip_reason = outcomes.SKIPPED, skip.why
        elif skip is not None and not skip.known and owner.unknown_skip is None \
                and not tracing_text.maybe_event(line):
            owner.unknown_skip = (number, line)
        if owner is outside and (running := CARGO_RUNNING.match(line)) and program is None:
            program = program_name(running.group("path"))
        if owner is outside and (exited := CARGO_EXIT.match(line)):
            exit_status = exited.group("how")
        if owner.panic_at is None and (PANIC.match(line) or line.startswith("thread '") and
                                       (torn_at(line) > 0 or panicked_near(file, number))):
            owner.panic_at = len(owner.lines)
        owner.lines.add(number, None if line == raw else line)
    (section or current or outside).lines.add_range(plain_from, len(file.starts) + 1)
    for part in parts:
        part.panic = _panic(part)
        if part.panic is None and part.panic_at is not None:
            part.torn_panic = part.lines[part.panic_at][0]
    _torn_panics(file, parts)
    tests = [p for p in parts if p.name is not None]
    if not tests and program is not None:
        _program_run(outside, program, exit_status, text)
        return [outside]
    live = _has_output(outside) or any(p.live or (p.lines and not p.sectioned) for p in tests)
    _assign_outside(outside, tests)
    for test in tests:
        test.captured = not live and not test.sectioned and test.outcome in ("ok", "FAILED")
    return [p for p in parts if p.name is not None or _has_output(p) or not tests]


_result = outcomes.libtest_result


def _torn_panics(file: FileText, parts: list[TestPart]) -> None:
    """A ` panicked at ` in no panic read (the hook's first line torn past its `thread '` line, e.g. by another
    thread's whole tree written between its pieces): the part holding it panicked, its panic not proven."""
    read = {p.panic.line for p in parts if p.panic} | {p.torn_panic for p in parts if p.torn_panic}
    for at in find_all(file.text, " panicked at "):
        number = file.number_at(at)
        if read & set(range(number - 3, number + 1)):
            continue  # the panic read there (its first line put back together from up to three lines)
        line = file.line(number)
        if line.startswith(EVENT_START) or tracing_text.maybe_event(strip_ansi(line)):
            continue  # an event's text
        owner = next((p for p in parts if number in p.lines.numbers), None)
        if owner is not None and owner.panic is None and owner.torn_panic is None:
            owner.torn_panic = number
            read.add(number)


def _program_run(part: TestPart, program: str, exit_status: str | None, text: str) -> None:
    """A program run without a test harness (`cargo run --example NAME`): one run named after it. It failed when it
    panicked or cargo says it exited unsuccessfully; a signal (a killed job), or a log cut mid-line, leaves it
    unfinished (outcome None, as a test the log ends inside); else it ran to its end."""
    part.name, part.program = program, True
    part.panic = _panic(part)
    if part.panic is None and part.panic_at is not None:
        part.torn_panic = part.lines[part.panic_at][0]
    if exit_status is not None and exit_status.startswith("signal"):
        part.outcome = outcomes.KILLED
    elif part.panic is not None or part.torn_panic is not None or exit_status is not None:
        part.outcome = outcomes.FAILED
    elif text and not text.endswith("\n"):
        part.outcome = outcomes.KILLED
    else:
        part.outcome = outcomes.OK


def _panic(part: TestPart) -> Panic | None:
    """The part's first panic (a panic line never starts like a JSON event, stage or tree line: split_tests looks
    at it and notes where it is)."""
    return None if part.panic_at is None else panic_at(part.lines, part.panic_at)


def skip_of(part: TestPart) -> str | None:
    """The reason a GPU variant skipped, from its skip line (`tensor/src/config.rs`), if it printed one."""
    for lines in (part.lines, part.stderr):
        for _n, text in lines or []:
            skip = outcomes.skip_line(text)
            if skip is not None and skip.known and variant_of(part.name) == skip.variant:
                return skip.why
    return None


def unknown_skip_of(lines: Lines | None) -> tuple[int, str] | None:
    """The first line saying something was skipped in a form outcomes.SKIP_LINES lacks (no tracing event)."""
    for number, text in lines or []:
        skip = outcomes.skip_line(text)
        if skip is not None and not skip.known and not tracing_text.maybe_event(text):
            return number, text
    return None


def has_output(part: TestPart) -> bool:
    return part.lines.any_starts(("{", "[per-stage]", "[dump-"))


_has_output = has_output


def _assign_outside(outside: TestPart, tests: list[TestPart]) -> None:
    """Svod output outside every test's own lines: libtest's threads. It goes to the one test that can have printed
    it: the only test that was not skipped, or the only one that printed no lines of its own between `test NAME ... `
    and its result. A panic naming its thread proves that panic's test only (_leave_unproven)."""
    if not _has_output(outside) or not tests:
        return
    # a GPU variant without its device prints one skip line and passes: as many skip lines of a variant outside as
    # its tests not yet skipped prove every one of them skipped (one test of it is the case of one line)
    skip_lines = Counter(skip.variant for _n, line in outside.lines
                         if (skip := outcomes.skip_line(line)) is not None and skip.known)
    for variant, count in skip_lines.items():
        open_tests = [t for t in tests if t.variant == variant and t.outcome != "skipped"]
        if open_tests and count >= len(open_tests) and all(t.outcome == "ok" for t in open_tests):
            for test in open_tests:
                test.outcome, test.skip_reason = "skipped", "its skip line"
    if _by_thread_name(outside, tests):  # proof for the named lines; the rest no proof ties to a test
        if _has_output(outside):
            _leave_unproven(outside, tests)
        return
    panic = _panic(outside)
    running = [t for t in tests if t.outcome not in ("skipped", "ignored")]
    candidates = running if len(running) == 1 else [t for t in running if not t.lines]
    if len(candidates) != 1 or (panic is not None and panic.thread != candidates[0].name and panic.thread in
                                {t.name for t in tests}):  # a panic naming another test: not one test's output
        _leave_unproven(outside, tests)
        return
    owner = candidates[0]
    owner.lines = owner.lines.merged(outside.lines)
    owner.panic = owner.panic or panic
    outside.lines = Lines(outside.lines.file)


def _by_thread_name(outside: TestPart, tests: list[TestPart]) -> bool:
    """tracing's JSON with thread names (`.with_thread_names(true)`): libtest names each test's thread after the
    test, so an event whose `threadName` is a test's name is that test's. Those lines go to their tests (rayon's
    workers are unnamed: their lines stay outside). True when any line was moved."""
    by_name = {t.name: t for t in tests}
    moved: dict[str, Lines] = {}
    rest = Lines(outside.lines.file)
    for i, (number, line) in enumerate(outside.lines):
        named = THREAD_NAME.search(line) if line.startswith("{") else None
        owner = by_name.get(named.group(1)) if named else None
        into = rest if owner is None else moved.setdefault(owner.name or "", Lines(outside.lines.file))
        into.add(number, outside.lines.changed.get(i))
    if not moved:
        return False
    for name, lines in moved.items():
        by_name[name].lines = by_name[name].lines.merged(lines)
    outside.lines = rest
    return True


def _leave_unproven(outside: TestPart, tests: list[TestPart]) -> None:
    """Tests interleaved by libtest's threads, their output naming none of them: each panic naming its thread goes
    to that test (the hook prints the thread's name, libtest's test name); the rest stays outside, marked unproven."""
    by_name = {t.name: t for t in tests}
    unclaimed: list[Panic] = []  # panics on no test's thread (a rayon worker's: `<unnamed>`)
    for i, (_n, line) in enumerate(outside.lines):
        if not line.startswith("thread '") or (panic := panic_at(outside.lines, i)) is None:
            continue
        owner = by_name.get(panic.thread)
        if owner is None:
            unclaimed.append(panic)
        elif owner.panic is None:
            owner.panic = panic
    failed = [t for t in tests if t.outcome == "FAILED" and t.panic is None]
    if len(unclaimed) == 1 and len(failed) == 1:  # one such panic, one failed test with no panic of its own
        failed[0].panic = unclaimed.pop()
    outside.panic = unclaimed[0] if unclaimed else None
    names = ", ".join(t.name or "?" for t in tests[:4]) + (" ..." if len(tests) > 4 else "")
    outside.unproven = (f"the output of {len(tests)} tests run in libtest's threads ({names}) is interleaved and "
                        "nothing in it names its test: each test's outcome and panic are stored, its events and "
                        "stages unattributed in a run with no test; `-- --test-threads=1`, or tracing's thread names "
                        "(a JSON subscriber's `.with_thread_names(true)` names libtest's test thread), would tie "
                        "them to their tests")
