"""`cargo nextest run` logs (Svod's CI runs `crane.cargoNextest`): one process per test, so one run per test, in the
order the tests completed, each test's kernel names counted from scratch (`KERNEL_NAME_COUNTS` is per process).

What nextest prints (nextest-rs/nextest, `nextest-runner/src/reporter/displayer/`; facts, not code): `Starting N
tests across M binaries` (RunStarted); per test a status line `{status:>12} [{secs:>8.3}s] ({n}/{total}) BINARY TEST`
(`status_str`: PASS, FAIL, SIGSEGV, TIMEOUT, LEAK, ...; the counter only without a progress bar) when it finishes,
then, with `--success-output immediate` or on failure, its captured output, in one of two eras:
* current (`imp.rs`@bdb177eb `output_spec_for_finished`): headers without the test's name, `  stdout ───` /
  `  stderr ───` (`  output ───` when both streams went to one pipe), the output indented four spaces by
  `indenter.rs` (which writes no indent on an empty line); `--no-output-indent` gives `── stdout ──` and no indent;
  the output belongs to the status line just above it;
* older (`output_spec_for_test`, e.g. the copy at nextest-runner's displayer of 2024): `──── STDOUT:{:19} BINARY
  TEST` / `──── STDERR: ...`, the label padded to 19, the output unindented;
then a blank line (`unit_output.rs` `write_child_execution_output`); `Summary [...] N tests run: ...`, after which
failed tests' status lines (and, with `--*-output final`, their output) are printed again. With `immediate-final`
the output is printed twice: the repeat is the same text and is not read again. Captured output keeps stdout and
stderr apart, so the order between an event (stdout) and a `[per-stage]` line (stderr) is lost; each stream alone is
in order. The test binary runs as libtest (`BIN --exact NAME --nocapture`), so stdout holds libtest's own lines
(`running 1 test`, `test NAME ... ` joined to the first output line, `ok`, `test result:`). With `--no-capture` the
output is not captured: it precedes the test's status line, both streams in one.
"""

from __future__ import annotations

import re

from tgstore.svod.drawing import RULE
from tgstore.svod.readers import outcomes
from tgstore.svod.readers.grammar import TEST_START
from tgstore.svod.readers.lines import FileText, Lines
from tgstore.svod.readers.model import SvodLog, strip_ansi
from tgstore.svod.readers.panics import find_panic
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import TestPart, skip_of, unknown_skip_of
from tgstore.svod.readers.test_log import read_lines

KIND = "nextest"
STATUS = re.compile(r"^\s*(?P<status>[A-Z][A-Z0-9 +/-]*?)\s+\[\s*(?:[\d.]+s)?\s*\]\s+(?:\(\s*\d+/\s*\d+\)\s+)?"
                    r"(?P<binary>\S+)\s+(?P<test>\S+)\s*$")
HEADER = re.compile(rf"^(?:{RULE}{{4}}|-{{4}}) (?:TRY \d+ )?(?P<stream>STDOUT|STDERR|OUTPUT):\s+(?P<binary>\S+)"
                    r"\s+(?P<test>\S+)\s*$")
_RULE_OR_DASH = f"(?:{RULE}|-)"
BLOCK = re.compile(rf"^\s*(?:{_RULE_OR_DASH}{{1,2}} )?(?P<stream>stdout|stderr|output|execfail) {_RULE_OR_DASH}{{1,3}}"
                   r"\s*$")  # current era
STARTING = re.compile(r"^\s*Starting \d+ tests? across \d+ binar(?:y|ies)")
SUMMARY = re.compile(r"^\s*Summary \[")
HBAR = re.compile(rf"^(?:{RULE}{{12}}|-{{12}})\s*$|^\s*Nextest run ID \S+ with nextest profile: ")
LIBTEST = re.compile(r"^(running \d+ tests?|test result: .*|failures:|successes:|    \S+|ok|FAILED|ignored)$")


def sniff_text(text: str) -> bool:
    """Whether a log is nextest's: its `Starting N tests across M binaries` line."""
    head = strip_ansi(text[:20000])
    return any(STARTING.match(line) for line in head.split("\n"))


outcome_of = outcomes.nextest_outcome


def split_tests(text: str) -> list[TestPart]:
    """The log's tests, one part each, in the order nextest reported them; each part's `lines` is its stdout (and
    `stderr` its stderr) when nextest captured them, or both as one stream with `--no-capture`."""
    file = FileText(text)
    outside = TestPart(None, Lines(file))
    parts: dict[str, TestPart] = {}
    block: tuple[TestPart, str] | None = None  # the test and stream whose captured output is being read
    indented = False  # the block's lines are indented four spaces (current era): an unindented line ends it
    loose = Lines(file)  # output before a status line (--no-capture): that test's
    summary = False
    last: str | None = None  # the test of the last status line: a current-era block's test
    read: set[tuple[str, str]] = set()  # (test, stream) blocks read: a repeat (immediate-final) is not read again
    for number in range(1, len(file.starts) + 1):
        raw = file.line(number)
        line = strip_ansi(raw).rstrip("\r") if "\x1b" in raw or raw.endswith("\r") else raw
        header = HEADER.match(line)
        bare = None if header else BLOCK.match(line)
        status = None if header or bare or block and not line.strip() else STATUS.match(line)
        if header or bare:
            test = header.group("test") if header else last
            stream = (header or bare).group("stream").upper()
            if test is None or stream == "EXECFAIL" or (test, stream) in read:
                block = (SINK, stream) if test is not None and stream != "EXECFAIL" else None
                if block is None:
                    outside.lines.add(number, None if line == raw else line)
                continue
            read.add((test, stream))
            part = parts.get(test) or _part(parts, test, file)
            block, indented = (part, stream), bare is not None and line.startswith(" ")
            if stream == "STDERR":
                part.stderr = part.stderr or Lines(file)
            continue
        if status:
            last = status.group("test")
        if status and not summary:
            test = status.group("test")
            if test in parts and parts[test].outcome is not None:
                block = None
                continue  # a retried or repeated status line: the run is the first report's
            part = parts.get(test) or _part(parts, test, file)
            part.outcome = outcome_of(status.group("status"))
            part.result_line = number
            if loose.any_starts(("{", "[per-stage]", "[dump-", "thread '")):  # --no-capture: this test's output
                part.lines = loose
                loose = Lines(file)
            block = None
            continue
        if SUMMARY.match(line) or HBAR.match(line) or STARTING.match(line):
            summary = summary or bool(SUMMARY.match(line))
            block = None
            outside.lines.add(number, None if line == raw else line)
            continue
        if status and summary:
            block = None  # a failed test's status line again after the summary; its output may follow (final)
            outside.lines.add(number, None if line == raw else line)
            continue
        if block is not None and indented and line and not line.startswith("    "):
            block = None  # nextest's own line after an indented block (`Canceling ...`)
        if block is not None:
            part, stream = block
            if part is SINK:
                continue  # the same output printed again (immediate-final): read once
            target = part.stderr if stream == "STDERR" else part.lines
            target.add(number, None if line == raw else line)
            continue
        if summary:
            outside.lines.add(number, None if line == raw else line)
        else:
            loose.add(number, None if line == raw else line)
    for part in parts.values():
        _clean(part)
    if len(loose):
        outside.lines = outside.lines.merged(loose)
    tests = list(parts.values())
    return ([outside] if outside.lines.any_starts(("{", "[per-stage]", "[dump-")) or not tests else []) + tests


SINK = TestPart(None)  # where a repeated block's lines go: nowhere


def _part(parts: dict[str, TestPart], test: str, file: FileText) -> TestPart:
    part = parts[test] = TestPart(test, Lines(file))
    return part


def _clean(part: TestPart) -> None:
    """A test's captured stdout is a libtest session of one test: its lines are kept but libtest's own (`running 1
    test`, `test NAME ... ` before the first output line, `ok`, `test result:`) are dropped; a four-space indent
    (older nextest) is undone; a test that printed nothing nextest showed is `captured` (kernels unknown)."""
    for which in ("lines", "stderr"):
        lines = getattr(part, which)
        if lines is None:
            continue
        texts = [text for _n, text in lines]
        indent = bool(texts) and all(t.startswith("    ") or not t.strip() for t in texts)
        out = Lines(lines.file)
        for number, text in lines:
            text = text[4:] if indent else text
            start = TEST_START.match(text)
            if start:
                text = start.group("tail")
                if not text.strip() or text.strip() in ("ok", "FAILED", "ignored"):
                    continue
            elif which == "lines" and LIBTEST.match(text):
                continue
            out.add(number, text)
        setattr(part, which, out)
    part.captured = not len(part.lines) and not (part.stderr is not None and len(part.stderr))
    panic_lines = part.stderr if part.stderr is not None else part.lines
    part.panic = find_panic(panic_lines)
    skip = skip_of(part)
    if skip:
        part.outcome, part.skip_reason = outcomes.SKIPPED, skip
    else:
        part.unknown_skip = unknown_skip_of(part.stderr) or unknown_skip_of(part.lines)


def sniff(name: str, text: str) -> bool:
    return sniff_text(text)


def parts(text: str) -> list[TestPart]:
    return split_tests(text)


def read_part(log: SvodLog, tracker: Segmenter, file: int, part: TestPart) -> None:
    """Captured output: stdout (stream 1) and stderr (stream 2) each in its own order; `--no-capture`: one stream."""
    if part.stderr is None:
        read_lines(log, tracker, file, part.lines)
        return
    read_lines(log, tracker, file, part.lines, stream=1)
    read_lines(log, tracker, file, part.stderr, stream=2)
