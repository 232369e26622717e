"""tracing-subscriber's text formats (Full, the default of `fmt::init()`, and Compact) read into the same record the
JSON formatter writes (`{"timestamp", "level", "fields": {"message", ...}, "target"}`, plus `threadName`,
`threadId` and `spans` where the line shows them), so one event reader serves every format.

What the formatters write (tracing-subscriber 0.3.16, `src/fmt/format/mod.rs`, `Format<Full>` and
`Format<Compact>` `format_event`; facts, not code), after every ANSI escape is stripped:

    [TIMESTAMP ]LEVEL [THREAD_NAME ][ThreadId(NN) ][SPANS ]TARGET: [FILE:LINE: ]FIELDS[ SPAN_FIELDS]

* TIMESTAMP: `SystemTime`'s `2026-12-06T19:57:38.123456Z` (`time/datetime.rs`), `uptime()`'s `   0.001234s`, or
  none (`without_time`); dimmed with ANSI.
* LEVEL: `TRACE`, `DEBUG`, ` INFO`, ` WARN`, `ERROR`; with ANSI coloured and not padded (`FmtLevel`).
* THREAD_NAME: right-aligned to the longest name seen (`FmtThreadName`); ThreadId as `ThreadId(02)`.
* SPANS: Full writes `name{fields}:` per span from the root, Compact `name:` (its spans' fields go after the event's
  fields), then one space.
* TARGET: the module path, then `:` and a space.
* FIELDS (`DefaultVisitor`): the message as written (no quotes), then ` name=value` per field, each value in Rust's
  Debug: strings quoted with Debug escapes (`\\n`, `\\"`, `\\\\`, `\\u{1b}`), numbers and bools bare, `?x` as
  Debug (`Binary(Add)`).

A line is read only when the whole of it fits this shape; else it is not an event (the caller keeps it as text).
"""

from __future__ import annotations

import re
from typing import Any

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR")
HEAD = re.compile(r"^\s*(?:(?P<ts>\d{4}-\d\d-\d\dT[\d:.]+Z?|\d+\.\d+s|[\w:.+-]*\d[\w:.+-]*)\s+)?"
                  r"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) +")
THREAD_ID = re.compile(r"ThreadId\(\d+\)$")
MODULE = re.compile(r"[A-Za-z_]\w*(?:::\w+)*")
SPANS = re.compile(r"(?:[A-Za-z_][\w-]*(?:\{[^{}]*\})?:)+")
FIELD_NAME = re.compile(r"(?:r#)?[A-Za-z_][\w.]*=")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|.)")
SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
INTEGER = re.compile(r"-?\d+$")
FLOAT = re.compile(r"-?(?:\d+\.\d*(?:e-?\d+)?|inf|NaN)$")


def maybe_event(line: str) -> bool:
    """Cheap test before `parse`: the line starts like a text event."""
    return HEAD.match(line) is not None


def parse(line: str) -> dict[str, Any] | None:
    """The JSON formatter's record for a Full or Compact line, or None when the line is not one."""
    head = HEAD.match(line)
    if head is None:
        return None
    rest = line[head.end():]
    thread_name = thread_id = None
    spans: list[str] = []
    # up to two leading words before the target may be the thread's name and id
    at = 0
    for _ in range(2):
        word, sep, after = rest[at:].partition(" ")
        if not sep or word.endswith(":"):
            break
        if THREAD_ID.match(word):
            thread_id = word
        elif thread_name is None and thread_id is None:
            thread_name = word
        else:
            break
        at += len(word) + 1
        while rest.startswith(" ", at):
            at += 1
    first, sep, after = rest[at:].partition(": ")
    if not sep:
        return None
    second, sep2, after2 = after.partition(": ")
    if sep2 and " " not in first and MODULE.fullmatch(second) and "::" in second and SPANS.fullmatch(first + ":"):
        spans = [s.split("{", 1)[0] for s in (first + ":").split(":") if s]  # SPANS TARGET: (Full's fields kept out)
        target, body = second, after2
    elif MODULE.fullmatch(first):
        target, body = first, after
    elif SPANS.fullmatch(first + ":") and sep2 and MODULE.fullmatch(second):
        spans = [s.split("{", 1)[0] for s in (first + ":").split(":") if s]
        target, body = second, after2
    else:
        return None
    fields = _fields(body)
    if fields is None:
        return None
    record: dict[str, Any] = {"timestamp": head.group("ts"), "level": head.group("level"), "fields": fields,
                              "target": target}
    if thread_name is not None:
        record["threadName"] = thread_name
    if thread_id is not None:
        record["threadId"] = thread_id
    if spans:
        record["spans"] = [{"name": s} for s in spans]
    return record


def _fields(body: str) -> dict[str, Any] | None:
    """`message name=value ...`: the message is what comes before the first place from which the rest reads as
    fields to the end."""
    if not body:
        return {}
    starts = [0] if FIELD_NAME.match(body) else []
    starts += [m.start() + 1 for m in re.finditer(r" (?=(?:r#)?[A-Za-z_][\w.]*=)", body)]
    for start in starts:
        pairs = _pairs(body, start)
        if pairs is not None:
            fields: dict[str, Any] = {}
            if start:
                fields["message"] = body[:start - 1]
            fields.update(pairs)
            return fields
    return {"message": body}


def _pairs(body: str, at: int) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    n = len(body)
    while at < n:
        name = FIELD_NAME.match(body, at)
        if name is None:
            return None
        key = name.group()[:-1].removeprefix("r#")
        at = name.end()
        if body.startswith('"', at):
            quoted = QUOTED.match(body, at)
            if quoted is None:
                return None
            out[key] = _unescape(quoted.group()[1:-1])
            at = quoted.end()
            if at < n and body[at] != " ":
                return None
            at += 1
            continue
        end = _bare_end(body, at)
        out[key] = _bare(body[at:end])
        at = end + 1
    return out


def _bare_end(body: str, at: int) -> int:
    """Where an unquoted value ends: at the first space after which a field starts and the rest reads as fields."""
    space = body.find(" ", at)
    while space >= 0:
        if FIELD_NAME.match(body, space + 1) and _pairs(body, space + 1) is not None:
            return space
        space = body.find(" ", space + 1)
    return len(body)


def _bare(value: str) -> Any:
    if INTEGER.match(value):
        return int(value)
    if value in ("true", "false"):
        return value == "true"
    if FLOAT.match(value):
        return float(value)
    return value


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.startswith("u{"):
            return chr(int(code[2:-1], 16))
        return SIMPLE_ESCAPES.get(code, "\\" + code)
    return ESCAPE.sub(one, text)
