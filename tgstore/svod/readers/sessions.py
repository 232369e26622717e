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

Output that belongs to no test (cargo's lines, a program run outside libtest) is one part with no test name. Tests
interleaved by libtest's threads are split only where the evidence allows: when one test alone could have printed
Svod output (the others printed nothing, or only their skip line); otherwise `InterleavedTests` is raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tgstore.svod.readers.model import strip_ansi

TEST_START = re.compile(r"^test (?P<name>\S+) \.\.\. ?(?P<tail>.*)$")
RESULTS = ("ok", "FAILED", "ignored")
SKIP = re.compile(r"^(?P<variant>amd|metal|cuda) codegen_tests variant: skipped \((?P<why>[^)]*)\)\s*$")
PANIC = re.compile(r"^thread '(?P<thread>[^']*)' panicked at (?P<location>[^\s]+:\d+:\d+):\s*(?P<rest>.*)$")
PANIC_END = re.compile(r"^(note: run with `RUST_BACKTRACE|stack backtrace:|\{|\[per-stage\]|\[dump-)")
LIBTEST_TAIL = re.compile(r"^(failures:|test result: |running \d+ tests?$|---- \S+ stdout ----$)")
VARIANTS = ("clang", "llvm", "amd", "metal", "cuda")


class InterleavedTests(ValueError):
    """Several tests ran in libtest's threads and the log cannot tell their output apart."""


@dataclass
class Panic:
    line: int
    thread: str
    location: str
    message: str
    message_lines: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class TestPart:
    """What one test (or no test: name None) printed, with each line's number in the file."""

    name: str | None
    lines: list[tuple[int, str]] = field(default_factory=list)
    outcome: str | None = None  # ok | FAILED | ignored | skipped; None: never finished (a cut log)
    result_line: int | None = None
    panic: Panic | None = None
    skip_reason: str | None = None

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


def split_tests(text: str) -> list[TestPart]:
    """The parts of a log, in order: output outside any test first, then one part per test."""
    outside = TestPart(None)
    parts: list[TestPart] = [outside]
    current: TestPart | None = None
    finished: dict[str, TestPart] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = strip_ansi(raw).rstrip("\r")
        if current is not None and line.strip() in RESULTS:  # --test-threads=1: the result after the output
            current.outcome = current.outcome if current.outcome == "skipped" else line.strip()
            current.result_line, current = number, None
            continue
        start = TEST_START.match(line)
        if start:
            name, tail = start.group("name"), start.group("tail")
            if tail.strip() in RESULTS:  # a whole result line: a test with no output, or libtest's threads
                part = finished.get(name) or TestPart(name)
                part.outcome = part.outcome if part.outcome == "skipped" else tail.strip()
                part.result_line = number
                if name not in finished:
                    finished[name] = part
                    parts.append(part)
                current = None if current is part else current
                continue
            current = TestPart(name)
            finished[name] = current
            parts.append(current)
            if not tail.strip():
                continue
            line = tail  # the test's first output line joins libtest's `test NAME ... `
        owner = current if current is not None else outside
        skip = SKIP.match(line)
        if skip and owner.name is not None and variant_of(owner.name) == skip.group("variant"):
            owner.outcome, owner.skip_reason = "skipped", skip.group("why")
        owner.lines.append((number, line))
    for part in parts:
        part.panic = _panic(part)
    _assign_outside(outside, [p for p in parts if p.name is not None])
    tests = [p for p in parts if p.name is not None]
    return [p for p in parts if p.name is not None or _has_output(p) or not tests]


def _panic(part: TestPart) -> Panic | None:
    for i, (number, line) in enumerate(part.lines):
        m = PANIC.match(line)
        if not m:
            continue
        message = [(number, m.group("rest"))] if m.group("rest") else []
        for later_number, later in part.lines[i + 1:]:
            if PANIC_END.match(later) or later.strip() in RESULTS or LIBTEST_TAIL.match(later):
                break
            message.append((later_number, later))
        while message and not message[-1][1].strip():
            message.pop()
        return Panic(number, m.group("thread"), m.group("location"), "\n".join(t for _n, t in message), message)
    return None


def _has_output(part: TestPart) -> bool:
    return any(line.startswith("{") or line.startswith("[per-stage]") or line.startswith("[dump-")
               for _n, line in part.lines)


def _assign_outside(outside: TestPart, tests: list[TestPart]) -> None:
    """Svod output outside every test's own lines: libtest's threads. It goes to the one test that can have printed
    it: a panic naming its thread, the only test that was not skipped, or the only one that printed no lines of its
    own between `test NAME ... ` and its result."""
    if not _has_output(outside) or not tests:
        return
    skipped_variants = {m.group("variant") for _n, line in outside.lines if (m := SKIP.match(line))}
    for test in tests:
        if test.outcome == "ok" and test.variant in skipped_variants and \
                sum(t.variant == test.variant for t in tests) == 1:
            test.outcome, test.skip_reason = "skipped", "its skip line"
    panic = _panic(outside)
    named = [t for t in tests if panic is not None and t.name == panic.thread]
    running = [t for t in tests if t.outcome not in ("skipped", "ignored")]
    candidates = named or (running if len(running) == 1 else [t for t in running if not t.lines])
    if len(candidates) != 1:
        names = ", ".join(t.name or "?" for t in tests[:4]) + (" ..." if len(tests) > 4 else "")
        raise InterleavedTests(f"the output of {len(tests)} tests run in libtest's threads ({names}) is interleaved "
                               "and nothing in it names its test; rerun with `-- --test-threads=1`")
    owner = candidates[0]
    owner.lines = sorted(owner.lines + outside.lines)
    owner.panic = owner.panic or panic
    outside.lines = []
