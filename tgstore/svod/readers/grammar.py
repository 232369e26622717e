"""What each kind of line in a Svod log looks like, per emitter, in one table (`LINE_KINDS`): the readers match
these names, so a new format is one entry here (and one scenario in the emitter corpus, tests/svod_emitter/).

Every line is read after its ANSI escapes are stripped (model.strip_ansi). Where each form is defined:
* libtest (rust-lang/rust `library/test/src/formatters/pretty.rs`, `terse.rs`): `running N tests`, `test NAME ...
  RESULT` (whole, with libtest's threads) or `test NAME ... ` joined to the test's first output line
  (`--test-threads=1 --nocapture`), `---- NAME stdout ----` sections of captured output under `failures:` /
  `successes:`, `test result: ...`;
* Rust's panic hook (`library/std/src/panicking.rs`, `default_hook`): `thread 'NAME' panicked at FILE:L:C:` and,
  since Rust 1.88 (ThreadId printed beside the name), `thread 'NAME' (TID) panicked at FILE:L:C:`, after a blank
  line; the message on the lines after it; then `note: run with `RUST_BACKTRACE=1` ...` or, with RUST_BACKTRACE,
  `stack backtrace:` and its frames. Threads without a name (rayon's workers) are `<unnamed>`; libtest names each
  test's thread after the test;
* cargo: `     Running `target/debug/examples/NAME`` (`cargo run`), `     Running unittests src/lib.rs (...)`;
* nextest (nextest-runner/src/reporter/displayer): see nextest_log.py for its status lines and blocks (both eras);
* tracing-subscriber: JSON (`{"timestamp":...}`, json.rs) and the Full and Compact text formats (tracing_text.py);
* Svod's own stderr lines: `[per-stage]`, `[dump-stage]`, `[dump-canonical]` (pieces.py), trees (tree.py), skip
  lines (outcomes.py), `[beam] ...`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tgstore.svod.readers import outcomes, tracing_text
from tgstore.svod.readers.pieces import DUMP, PER_STAGE, TREE_LINE

# libtest
TEST_START = re.compile(r"^test (?P<name>\S+)(?: - [\w ]+)? \.\.\. ?(?P<tail>.*)$")
RUNNING_TESTS = re.compile(r"^running \d+ tests?$")
SECTION = re.compile(r"^---- (?P<name>\S+) stdout ----$")  # a test's captured output, after all results
SECTION_ENDS = re.compile(r"^(failures:|successes:|failures \(time limit exceeded\):|test result: )")
LIBTEST_TAIL = re.compile(r"^(failures:|test result: |running \d+ tests?$|---- \S+ stdout ----$)")
THREAD_NAME = re.compile(r'"threadName":"((?:[^"\\]|\\.)*)"')  # tracing-subscriber's JSON, thread names on
# Rust's panic hook, both forms: `thread 'main' panicked at ...` and (Rust >= 1.88) `thread 'main' (1234) ...`
PANIC = re.compile(r"^thread '(?P<thread>[^']*)'(?: \((?P<tid>\d+)\))? panicked at (?P<location>[^\s]+:\d+:\d+):"
                   r"\s*(?P<rest>.*)$")
PANIC_END = re.compile(r"^(note: run with `RUST_BACKTRACE|note: Some details are omitted|stack backtrace:|\{|"
                       r"\[per-stage\]|\[dump-|error: test failed|thread '[^']*'(?: \(\d+\))? panicked at )")
BACKTRACE = re.compile(r"^(stack backtrace:$|note: |\s*\d+: \S|\s+at \S.*:\d+(:\d+)?$|\s+\d+: 0x[0-9a-f]+ - )")
# cargo
CARGO_RUNNING = re.compile(r"^\s*Running `(?P<path>[^`\s]+)(?: [^`]*)?`\s*$")  # `cargo run`: the program it runs
CARGO_EXIT = re.compile(r"^error: process didn't exit successfully: `[^`]*` \((?P<how>[^)]*)\)")
CARGO_LINE = re.compile(r"^\s*(Compiling|Finished|Running|Blocking|Downloading|Downloaded|Updating|Locking|"
                        r"Fresh|Checking|Doc-tests|warning|error)\b")


@dataclass(frozen=True)
class LineKind:
    name: str
    emitter: str
    example: str  # one line of this kind, as the emitter prints it (ANSI stripped)


LINE_KINDS: dict[str, tuple[LineKind, re.Pattern[str] | None]] = {
    "libtest-start": (LineKind("libtest-start", "libtest", "test ops::sum::llvm ... ok"), TEST_START),
    "libtest-running": (LineKind("libtest-running", "libtest", "running 4 tests"), RUNNING_TESTS),
    "libtest-section": (LineKind("libtest-section", "libtest", "---- ops::sum::llvm stdout ----"), SECTION),
    "libtest-tail": (LineKind("libtest-tail", "libtest", "test result: ok. 4 passed; 0 failed"), LIBTEST_TAIL),
    "panic": (LineKind("panic", "rust", "thread '<unnamed>' (24331) panicked at src/lib.rs:6:21:"), PANIC),
    "backtrace": (LineKind("backtrace", "rust", "   3: svod_emitter::pipeline::optimize"), BACKTRACE),
    "cargo-running": (LineKind("cargo-running", "cargo", "     Running `target/debug/examples/qwen3`"),
                      CARGO_RUNNING),
    "cargo": (LineKind("cargo", "cargo", "   Compiling svod v0.1.0"), CARGO_LINE),
    "tracing-json": (LineKind("tracing-json", "tracing", '{"timestamp":"...","level":"DEBUG","fields":{},'
                              '"target":"svod"}'), re.compile(r'^\{"timestamp"')),
    "tracing-text": (LineKind("tracing-text", "tracing", "2026-12-06T19:57:38.123456Z DEBUG svod_schedule::"
                              "optimizer: after pm_reduce node_count=20"), tracing_text.HEAD),
    "per-stage": (LineKind("per-stage", "svod", "[per-stage] 08-post_opt_sym : node_count=20"), PER_STAGE),
    "dump": (LineKind("dump", "svod", "[dump-stage] 08-post_opt_sym :"), DUMP),
    "tree": (LineKind("tree", "svod", "[12] SINK : Void"), TREE_LINE),
    "skip": (LineKind("skip", "svod", "AMD ONNX variant skipped: no active supported AMD device"), None),
}


def kind_of(line: str) -> str | None:
    """The first kind in LINE_KINDS whose pattern matches the line (skip lines through outcomes.skip_line)."""
    if outcomes.skip_line(line) is not None and not tracing_text.maybe_event(line):
        return "skip"
    for name, (_kind, pattern) in LINE_KINDS.items():
        if pattern is not None and pattern.match(line):
            if name == "tracing-text" and tracing_text.parse(line) is None:
                continue
            return name
    return None


def program_name(path: str) -> str:
    """`target/debug/examples/qwen3` -> `qwen3` (the run of a program is named after it)."""
    return path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".exe")
