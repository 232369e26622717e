"""Test logs (`RUST_LOG=... cargo test ... -- --nocapture 2>&1`): JSON tracing events (tracing-subscriber's JSON
formatter, `schedule/src/testing.rs`), one object per line, mixed with cargo's and libtest's lines;
`[per-stage] L : node_count=N` lines, `[dump-stage] L :` ... `[dump-stage] L : end` tree blocks and
`[dump-canonical] S :` ... `: end` JSON blocks on stderr (`schedule/src/optimizer/mod.rs`,
`ir/src/uop/canonical.rs`). The fallback reader: whatever no other reader claims is read as a log."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tgstore.spelling.svod import maps
from tgstore.svod.readers.model import Event, Problem, Stage, SvodLog, load_json, strip_ansi, tree_stage
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import Lines

KIND = "log"
PER_STAGE = re.compile(r"^\[per-stage\] (?P<label>.+?) : node_count=(?P<count>\d+)\s*$")
DUMP = re.compile(r"^\[dump-(?P<kind>stage|canonical)\] (?P<label>.+?) :(?P<rest>.*)$")
FOREIGN = ('{"timestamp"', "[per-stage] ", "[dump-stage] ", "[dump-canonical] ")  # what _foreign finds, or more
TREE_FIELDS = ("ast.initial", "ast.pre", "ast.optimized", "uop.tree", "tree")
CODE_FIELDS = {"generated_c": "c", "generated_code": "llvm"}


def sniff(name: str, text: str) -> bool:
    return True


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    read_lines(log, tracker, file, list(enumerate(text.split("\n"), start=1)))


def read_lines(log: SvodLog, tracker: Segmenter, file: int, lines: list[tuple[int, str]]) -> None:
    """Read one program's (one test's) lines, each with its number in the file."""
    n = 0
    while n < len(lines):
        line_no, raw = lines[n]
        line = strip_ansi(raw).rstrip("\r")
        n += 1
        if not line.strip():
            continue
        if line.startswith("{"):
            _event(log, tracker, file, line_no, line)
            continue
        m = PER_STAGE.match(line)
        if m:
            tracker.add(Stage(m.group("label"), "per-stage", file, line_no, node_count=int(m.group("count"))))
            continue
        m = DUMP.match(line)
        if m and not m.group("rest").strip():
            n = _dump_block(log, tracker, file, lines, n, m.group("kind"), m.group("label"))
            continue
        if m:  # `[dump-canonical] S : JSON error: ...` and the like
            log.problems.append(Problem(file, line_no, f"Svod could not dump {m.group('label')!r}:"
                                        f"{m.group('rest')}", line))
            continue
        log.raw_lines += 1


def _foreign(line: str) -> bool:
    """A line another thread printed inside a dump block: `print_stage` writes a block's header, tree and end with
    three `eprintln!` calls (schedule/src/optimizer/mod.rs), so with SVOD_THREADS > 1 whole lines of other kernels
    can fall between them; a tree or pretty-printed JSON never has such a line."""
    return line.startswith(('{"timestamp"', "[per-stage] ")) or (DUMP.match(line) is not None)


def _dump_block(log: SvodLog, tracker: Segmenter, file: int, lines: list[tuple[int, str]], n: int, kind: str,
                label: str) -> int:
    """Read a [dump-stage]/[dump-canonical] block whose opening line was lines[n-1]; returns the next index."""
    start = lines[n - 1][0]
    end_marker = f"[dump-{kind}] {label} : end"
    body: list[str] = []
    foreign: list[tuple[int, str]] = []
    whole = lines.block_until(n, end_marker, FOREIGN) if isinstance(lines, Lines) else None
    if whole is not None:  # the common case, read at once: the block's lines as the file has them
        n, block = whole
        body.append(block)
    while whole is None and n < len(lines) and strip_ansi(lines[n][1]).rstrip("\r") != end_marker:
        text = lines[n][1].rstrip("\r")
        if _foreign(strip_ansi(text)):
            foreign.append((lines[n][0], text))
        else:
            body.append(text)
        n += 1
    closed = n < len(lines)
    if not closed:
        log.problems.append(Problem(file, start, f"[dump-{kind}] {label} is never closed (no '{end_marker}'); "
                                    "its text is kept", None))
    if foreign:  # other threads' lines inside the block (or, unclosed, after it): read as they are
        read_lines(log, tracker, file, foreign)
    text = "\n".join(body).strip("\n") + "\n"
    if kind == "stage":
        stage = Stage(label, "dump-stage", file, start)
        if closed:
            tree_stage(stage, text, log, start + 1)
        else:
            stage.tree_text = text
        tracker.add(stage)
    else:
        stage = Stage(label, "dump-canonical", file, start)
        try:
            stage.canonical = load_json(text)
        except ValueError as e:
            stage.tree_text = text
            log.problems.append(Problem(file, start + 1, f"canonical dump {label!r} is not JSON ({e}); kept as text"))
        tracker.add(stage)
    return n + 1 if closed else n


def _pattern_matched(tracker: Segmenter, record: dict[str, Any], file: int, line_no: int) -> bool:
    """`tracing::trace!(op_key = ?key, "pattern matched")` in `SimplifiedPatternMatcher::rewrite`
    (ir/src/pattern/simplified.rs:252, target `svod_ir::pattern::simplified`): one event per rewrite, the matched
    node's OpKey in Debug (`Binary(Add)`, `Load`); no rule name, no pass."""
    op_key = record["fields"].get("op_key")
    if not str(record.get("target", "")).endswith("::pattern::simplified") or not isinstance(op_key, str):
        return False
    tracker.fire(op_key, file, line_no)
    return True


def _kernel_split(tracker: Segmenter, record: dict[str, Any], file: int, line_no: int) -> bool:
    """`tracing::debug!(elapsed_ms, "kernel split: ... complete")` in `kernel_graph_pre_cut` (pm_add_buffers
    schedule/src/rangeify/kernel.rs:539, pm_flatten_range pre-pass :550) and `try_get_kernel_graph` (split_all_stores
    :487, fix_assign :493), target `svod_schedule::rangeify::kernel`: a schedule stage without a tree, the matches
    printed before it its pass's."""
    fields = record["fields"]
    elapsed = fields.get("elapsed_ms")
    tracker.schedule(Stage(str(fields["message"]), "event", file, line_no, message=str(fields["message"]),
                           elapsed_ms=elapsed if isinstance(elapsed, int) else None))
    return True


# events read as what they are, by message: a handler returns False when the event is not the kind after all
EVENT_KINDS: dict[str, Callable[[Segmenter, dict[str, Any], int, int], bool]] = {
    "pattern matched": _pattern_matched,
    **{entry["message"]: _kernel_split for entry in maps()["rules"]["kernel_split"]},
}


def _event(log: SvodLog, tracker: Segmenter, file: int, line_no: int, line: str) -> None:
    try:
        record = load_json(line)
    except ValueError as e:
        where = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        log.problems.append(Problem(file, line_no, f"not a JSON tracing event ({where})", line[:2000]))
        return
    if not isinstance(record, dict) or not isinstance(record.get("fields"), dict):
        log.problems.append(Problem(file, line_no, "a JSON line without the tracing `fields` object", line))
        return
    log.events.append(Event(file, line_no, record))
    fields = record["fields"]
    message = str(fields.get("message", ""))
    kind = EVENT_KINDS.get(message)
    if kind is not None and kind(tracker, record, file, line_no):
        return
    for key, kind in CODE_FIELDS.items():
        if isinstance(fields.get(key), str):
            tracker.code_text(fields[key], kind, file, line_no)
            return
    if "kernel.name" in fields and isinstance(fields["kernel.name"], str):
        tracker.code_name(fields["kernel.name"], file, line_no)
        return
    tree_field = next((f for f in TREE_FIELDS if isinstance(fields.get(f), str)), None)
    label = "kernel-initial-or-00" if message == "kernel initial" else tracker.labels.get(message)
    if tree_field is None and label is None:
        return
    stage = Stage(label or message, "event", file, line_no, message=message,
                  node_count=fields.get("node_count") if isinstance(fields.get("node_count"), int) else None,
                  elapsed_ms=fields.get("elapsed_ms") if isinstance(fields.get("elapsed_ms"), int) else None)
    if tree_field is not None:
        tree_stage(stage, fields[tree_field], log, line_no, inline=True)
    if label is None and tree_field in ("uop.tree", "tree"):  # a rangeify/kernel-split tree tgstore has no label for
        tracker.schedule(stage)
    elif label is None:
        log.problems.append(Problem(file, line_no, f"an event with a tree but a message Svod's optimizer does not "
                                    f"emit ({message!r}); kept apart from every kernel", None))
        log.unplaced.append(stage)
    else:
        tracker.add(stage)
