"""A run's outcome, from one table: the words each runner prints for it, and every skip line Svod prints.

Stored values (`svod_runs.outcome`, `SvodLog.outcome`): `ok`, `FAILED`, `skipped`, `ignored`, and None for a test
the log ends inside (the job was killed or the log cut: a problem says so). "Output captured" is not an outcome but
a mark beside one (`SvodLog.captured`): the runner kept the test's output, its outcome is known, its kernels not.

Skip lines are Svod's own text, each family its own (read in npatsakula/svod):
* `codegen_tests!` (`tensor/src/config.rs`, every form of the macro): `amd codegen_tests variant: skipped (no
  supported AMD GPU)`, `metal codegen_tests variant: skipped (no Metal device)`, `cuda codegen_tests variant:
  skipped (no CUDA device)`;
* the ONNX node and light-model tests (`onnx/build.rs`, `write_backend_test`): `AMD ONNX variant skipped: no active
  supported AMD device`, `CUDA ONNX variant skipped: no active CUDA device`.
Each is `eprintln!` then `return`: the test passes in libtest's eyes. A line that says a variant was skipped in a
form not listed here is read as a skip too, with a problem naming the line (never as `ok` with no kernels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OK, FAILED, SKIPPED, IGNORED = "ok", "FAILED", "skipped", "ignored"
KILLED = None  # the log ends inside the test
OUTCOMES = {OK: "ok", FAILED: "failed", SKIPPED: "skipped", IGNORED: "ignored", KILLED: "killed (the log ends "
            "inside it)"}

# libtest's result words (library/test/src/formatters/pretty.rs: `ok`, `FAILED`, `ignored`, `ignored, REASON`,
# `FAILED (time limit exceeded)`)
LIBTEST_RESULTS = {"ok": OK, "FAILED": FAILED, "ignored": IGNORED}
# nextest's status words (nextest-runner/src/reporter/displayer: `status_str`): any failure kind is FAILED
NEXTEST_FAILED = ("FAIL", "SIG", "TIMEOUT", "ABORT", "XFAIL", "TMT", "LKFAIL", "FL+LK")
NEXTEST_SKIP = "SKIP"


@dataclass(frozen=True)
class SkipLine:
    family: str  # codegen_tests | onnx
    variant: str  # the test-name segment it skips (`amd`, `cuda`, `metal`)
    pattern: re.Pattern[str]
    source: str


SKIP_LINES: tuple[SkipLine, ...] = (
    *(SkipLine("codegen_tests", v, re.compile(rf"^{v} codegen_tests variant: skipped \((?P<why>[^)]*)\)\s*$"),
               "tensor/src/config.rs") for v in ("amd", "metal", "cuda")),
    SkipLine("onnx", "amd", re.compile(r"^AMD ONNX variant skipped: (?P<why>.+?)\s*$"), "onnx/build.rs"),
    SkipLine("onnx", "cuda", re.compile(r"^CUDA ONNX variant skipped: (?P<why>.+?)\s*$"), "onnx/build.rs"),
)
# a skip line of a form none of SKIP_LINES has: `... skipped ...` (or `skipping`) in a short line of plain words
UNKNOWN_SKIP = re.compile(r"^(?!\{|\[|test |thread |\s)(?=[^\n]{0,200}$)(?P<head>[\w .:-]*?)\b"
                          r"(?:skipped|skipping|SKIPPED)\b(?P<why>.*)$")


@dataclass(frozen=True)
class Skip:
    variant: str | None  # None: a form not in SKIP_LINES
    why: str
    known: bool


def skip_line(line: str) -> Skip | None:
    """The skip a line says, if it is one: a known line with its variant, or an unknown `... skipped ...` line."""
    if "kip" not in line and "KIP" not in line:
        return None
    for entry in SKIP_LINES:
        m = entry.pattern.match(line)
        if m:
            return Skip(entry.variant, m.group("why"), True)
    m = UNKNOWN_SKIP.match(line)
    if m:
        return Skip(None, line.strip(), False)
    return None


def libtest_result(text: str) -> str | None:
    """libtest's result word (`ok`, `FAILED`, `ignored`; `ignored, REASON` and `FAILED (time limit exceeded)` too)."""
    word = text.strip()
    if word in LIBTEST_RESULTS:
        return LIBTEST_RESULTS[word]
    head = word.split(",", 1)[0].split(" (", 1)[0]
    return LIBTEST_RESULTS[head] if head in LIBTEST_RESULTS and word != head else None


def nextest_outcome(status: str) -> str:
    if status == NEXTEST_SKIP:
        return IGNORED
    return FAILED if any(word in status for word in NEXTEST_FAILED) and "PASS" not in status else OK
