"""tracing-subscriber's Full and Compact text formats, written from its JSON records as its formatters write them
(tracing-subscriber 0.3.16 `src/fmt/format/mod.rs`: `Format<Full>` / `Format<Compact>` `format_event`,
`DefaultVisitor::record_debug`, `FmtLevel`, `format_timestamp`; ANSI styles from ansi_term: dimmed `ESC[2m`, bold
`ESC[1m`, italic `ESC[3m`, level colours TRACE purple, DEBUG blue, INFO green, WARN yellow, ERROR red, each reset with
`ESC[0m`). Used to check that every text layout reads as its JSON twin does (tests/test_svod_formats.py); the real
emitter crate (tests/svod_emitter/) prints them through the real subscriber."""

from __future__ import annotations

import json

LEVEL_COLOUR = {"TRACE": "35", "DEBUG": "34", "INFO": "32", "WARN": "33", "ERROR": "31"}
PADDED = {"TRACE": "TRACE", "DEBUG": "DEBUG", "INFO": " INFO", "WARN": " WARN", "ERROR": "ERROR"}


def rust_debug_str(value: str) -> str:
    """`format!("{:?}", s)` for a str: quoted, `\\`, `"`, `\\n`, `\\r`, `\\t`, `\\0` escaped, other control
    characters as `\\u{..}`; printable Unicode (the trees' box drawing) kept."""
    out = ['"']
    for char in value:
        code = ord(char)
        out.append({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}.get(char)
                   or (f"\\u{{{code:x}}}" if code < 0x20 or code == 0x7f else char))
    out.append('"')
    return "".join(out)


def _value(value: object) -> str:
    if isinstance(value, str):
        return rust_debug_str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _paint(code: str, text: str, ansi: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if ansi else text


def text_line(record: dict, layout: str = "full", ansi: bool = False, timestamp: bool = True,
              thread_name: str | None = None, thread_id: int | None = None) -> str:
    """One JSON record as Full or Compact writes it (one line, no newline)."""
    out = []
    if timestamp:
        out.append(_paint("2", record["timestamp"], ansi) + " ")
    level = record["level"]
    out.append((_paint(LEVEL_COLOUR[level], level, True) if ansi else PADDED[level]) + " ")
    if thread_name is not None:
        out.append(thread_name + " ")
    if thread_id is not None:
        out.append(f"ThreadId({thread_id:02}) ")
    target = record["target"]
    if layout == "full":
        out.append(_paint("2", target, ansi) + _paint("2", ":", ansi) + " ")
    else:
        out.append(_paint("1", target, ansi) + _paint("2", ":", ansi) + " ")
    fields = []
    for name, value in record["fields"].items():
        if name == "message":
            fields.append(str(value))
        else:
            fields.append(_paint("3", name, ansi) + _paint("2", "=", ansi) + _value(value))
    out.append(" ".join(fields))
    return "".join(out)


def to_text(log: str, layout: str = "full", ansi: bool = False, **options: object) -> str:
    """A log with every JSON tracing event line rewritten in a text layout; every other line as it was."""
    lines = []
    for line in log.split("\n"):
        start = line.find('{"timestamp"')
        if start >= 0 and (start == 0 or line.startswith("test ")):
            try:
                record = json.loads(line[start:])
            except ValueError:
                lines.append(line)
                continue
            lines.append(line[:start] + text_line(record, layout, ansi, **options))
        else:
            lines.append(line)
    return "\n".join(lines)
