"""The stderr lines Svod's optimizer prints, and how `eprintln!` writes them: piece by piece (Rust's std writes each
literal and each argument of the format string to unbuffered stderr in turn), so a line another thread's stdout
event cut in two is put back together from its pieces (tgstore.svod.readers.test_log).

    eprintln!("[per-stage] {} : node_count={}", label, n)   pieces: "[per-stage] ", label, " : node_count=", n, "\\n"
    eprintln!("[dump-stage] {} :", label)                   pieces: "[dump-stage] ", label, " :\\n"
    eprintln!("[dump-stage] {} : end", label)               pieces: "[dump-stage] ", label, " : end\\n"
    eprintln!("[dump-canonical] {stage} :")                 (ir/src/uop/canonical.rs) likewise

A label and a count are each one write, so a line is whole exactly when it reads as one of these.
"""

from __future__ import annotations

import re

from tgstore.svod.drawing import INDENT

EVENT_START = '{"timestamp"'  # tracing-subscriber's JSON formatter writes `timestamp` first (schedule/src/testing.rs)
PIECE_STARTS = ("[per-stage] ", "[dump-stage] ", "[dump-canonical] ")
TEXT_EVENT_START = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z +(?:TRACE|DEBUG|INFO|WARN|ERROR) ")
# a label is one word (schedule/src/optimizer/mod.rs, canonical.rs): one holding `[` is two writers' pieces run together
PER_STAGE = re.compile(r"^\[per-stage\] (?P<label>[^\s\[\]]+) : node_count=(?P<count>\d+)\s*$")
DUMP = re.compile(r"^\[dump-(?P<kind>stage|canonical)\] (?P<label>[^\s\[\]]+) :(?P<rest>.*)$")
TREE_LINE = re.compile(rf"^{INDENT}*\[\d+\] ")  # ir/src/uop/tree.rs


def complete_piece(text: str) -> bool:
    """Whether `text` is a whole `[per-stage]` / `[dump-...]` line."""
    if PER_STAGE.match(text):
        return True
    m = DUMP.match(text)
    return m is not None and (m.group("rest") in ("", " end") or len(m.group("rest")) > 1)


def parse_piece(text: str) -> tuple:
    """A whole line as ("per-stage", label, count) | ("header", kind, label) | ("end", kind, label) |
    ("error", kind, label): the last for `[dump-canonical] S : JSON error: ...` and the like."""
    m = PER_STAGE.match(text)
    if m:
        return "per-stage", m.group("label"), int(m.group("count"))
    m = DUMP.match(text)
    if m is None:
        raise ValueError(text)
    rest = m.group("rest")
    what = "header" if rest == "" else "end" if rest == " end" else "error"
    return what, m.group("kind"), m.group("label")


def piece_kinds(text: str) -> set[tuple[str, str]]:
    """What a stderr line that could not be read whole may have been: its label's kind when the label survived."""
    for start, source in (("[per-stage] ", "per-stage"), ("[dump-stage] ", "dump-stage"),
                          ("[dump-canonical] ", "dump-canonical")):
        if text.startswith(start):
            rest = text[len(start):]
            label = rest.split(" :", 1)[0] if rest else None
            return {(label, source)} if label else {("*", source)}
    return {("*", "per-stage"), ("*", "dump-stage"), ("*", "dump-canonical")}


def event_at(line: str) -> int:
    """Where another thread's event starts inside a `[per-stage]`/dump line: JSON's `{"timestamp"` or a text
    format's timestamp; -1 when none does."""
    cut = line.find(EVENT_START)
    if cut < 0 and "Z " in line:
        m = TEXT_EVENT_START.search(line, 1)
        cut = m.start() if m else -1
    return cut
