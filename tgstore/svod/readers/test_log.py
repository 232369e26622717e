"""Test logs (`RUST_LOG=... cargo test ... -- --nocapture 2>&1`): JSON tracing events (tracing-subscriber's JSON
formatter, `schedule/src/testing.rs`), one object per line, mixed with cargo's and libtest's lines;
`[per-stage] L : node_count=N` lines, `[dump-stage] L :` ... `[dump-stage] L : end` tree blocks and
`[dump-canonical] S :` ... `: end` JSON blocks on stderr (`schedule/src/optimizer/mod.rs`,
`ir/src/uop/canonical.rs`). The fallback reader: whatever no other reader claims is read as a log.

How the two streams meet in one file (Rust's std, Svod's source; facts, not code):
* tracing's `TestWriter` prints each formatted event with one `print!` (stdout), so an event is whole on its line;
* `eprintln!` formats piece by piece into unbuffered stderr: `[per-stage] `, the label, ` : node_count=`, the count
  and the newline are separate writes. The stderr lock keeps other `eprintln!`s out, not stdout, so another
  thread's whole event can land between two pieces: `[per-stage] 00-initial{"timestamp":...}` then
  ` : node_count=20`. Both halves are put back together here (tgstore.svod.readers.pieces);
* `print_stage` writes a dump's header, tree and end with three `eprintln!` calls: other threads' lines, and other
  threads' dump headers, can fall between them; each tree (one write) ends with an empty line, each document is one
  pretty JSON object (tgstore.svod.readers.dumps).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from tgstore.spelling.svod import maps
from tgstore.svod.readers import tracing_text
from tgstore.svod.readers.dumps import Dumps
from tgstore.svod.readers.lines import FileText, Lines
from tgstore.svod.readers.model import Event, Problem, Stage, SvodLog, load_json, strip_ansi, tree_stage
from tgstore.svod.readers.pieces import (
    EVENT_START,
    PIECE_STARTS,
    TEXT_EVENT_START,
    TREE_LINE,
    complete_piece,
    event_at,
    parse_piece,
    piece_kinds,
)
from tgstore.svod.readers.program import BEAM_DONE, REALIZE_ENDS
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import TestPart, split_tests

KIND = "log"
TREE_FIELDS = ("ast.initial", "ast.pre", "ast.optimized", "uop.tree", "tree")
CODE_FIELDS = {"generated_c": "c", "generated_code": "llvm"}
MSL = ("#include <metal_stdlib>", "kernel void ")  # CDialect::Metal's prelude and entry (codegen/src/c/metal.rs)
BEAM_LINES = ("[beam] ", "[BEAM drop] ")
# a line made of `[per-stage]` pieces only (labels, counts, ` : node_count=`) that does not start with `[per-stage] `:
# what processes writing the pieces of their `eprintln!`s at once (BEAM's workers on a GPU) leave of a line
PIECES = re.compile(r"^(?:\[per-stage\] |\d{2}[a-e]?-\w+| : node_count=|\d+)+\s*$")


def sniff(name: str, text: str) -> bool:
    return True


def parts(text: str) -> list[TestPart]:
    """The log's tests, one part each (tgstore.svod.readers.sessions)."""
    return split_tests(text)


def read_part(log: SvodLog, tracker: Segmenter, file: int, part: TestPart) -> None:
    read_lines(log, tracker, file, part.lines, stream=part.stream)


class LineReader:
    """Reads one test's lines of one stream (or of both, merged as the file has them)."""

    def __init__(self, log: SvodLog, tracker: Segmenter, file: int, stream: int) -> None:
        self.log, self.tracker, self.file, self.stream = log, tracker, file, stream
        self.dumps = Dumps(log, tracker, file, stream, self.event)
        self.lines: Sequence[tuple[int, str]] = ()
        self.pending: str | None = None  # an eprintln! cut by another thread's event, its first piece(s)
        self.pending_line = 0
        self.torn_before = False  # the line before was a torn stderr line: a bare count after it is its piece

    def read(self, lines: Sequence[tuple[int, str]]) -> None:
        self.lines = lines
        n = 0
        count = len(lines)
        while n < count:
            line_no, raw = lines[n]
            line = strip_ansi(raw).rstrip("\r") if "\x1b" in raw or raw.endswith("\r") else raw
            n += 1
            if self.pending is not None:
                self._continue(line_no, line)
                continue
            if not line:
                continue
            first = line[0]
            if first == "{":
                if line == "{":
                    n = self.dumps.json_body(lines, n)
                else:
                    self.event(line_no, line)
                continue
            if first == "[":
                if line.startswith(PIECE_STARTS):
                    cut = event_at(line)
                    if cut > 0:
                        self._split(line_no, line[:cut], line[cut:])
                    else:
                        n = self._piece(line_no, line, lines, n)
                    continue
                if TREE_LINE.match(line):
                    n = self.dumps.tree_body(lines, n - 1)
                    continue
                if line.startswith(BEAM_LINES):
                    self.tracker.marker(_beam_marker(line))
            elif first == "t" and line.startswith("thread '") and (cut := line.find("[per-stage] ")) > 0:
                n = self._piece(line_no, line[cut:], lines, n)  # a panic's first line another thread cut into
                continue
            elif (record := tracing_text.parse(line)) is not None:  # tracing's Full or Compact text
                self.torn_before = False
                _record_event(self.log, self.tracker, self.file, line_no, record, self.stream)
                continue
            elif PIECES.match(line) and (self.torn_before or not line.strip().isdigit()):
                self.tracker.lost(line_no, {("*", "per-stage")}, Problem(
                    self.file, line_no, "pieces of [per-stage] lines without their start (writes torn by another "
                    "process: BEAM's workers share stderr)", line[:2000]))
                self.torn_before = True
                continue
            self.torn_before = False
            if line.strip():
                self.log.raw_lines += 1

    def _split(self, line_no: int, head: str, event: str) -> None:
        """A piece line another thread's event was glued to: the event is read, the piece waits for the rest."""
        self.pending, self.pending_line = head, line_no
        self.event(line_no, event)
        if complete_piece(head):  # the event landed before the newline only
            self._emit(self.pending_line, head)
            self.pending = None

    def _continue(self, line_no: int, line: str) -> None:
        if line.startswith(EVENT_START) or TEXT_EVENT_START.match(line):
            self.event(line_no, line)  # another thread's whole event between two pieces
            return
        cut = event_at(line)
        self.pending += line[:cut] if cut > 0 else line
        if cut > 0:
            self.event(line_no, line[cut:])
        if complete_piece(self.pending):
            self._emit(self.pending_line, self.pending)
            self.pending = None
        elif cut <= 0:
            self.tracker.lost(self.pending_line, piece_kinds(self.pending), Problem(
                self.file, self.pending_line, "a stderr line cut by another thread's output could not be put back "
                f"together (continued at line {line_no})", self.pending[:2000]))
            self.pending = None

    def _piece(self, line_no: int, line: str, lines: Sequence[tuple[int, str]], n: int) -> int:
        """A whole `[per-stage]` / `[dump-...]` line; a dump header may take its whole block at once."""
        if not complete_piece(line):
            self.torn_before = True
            self.tracker.lost(line_no, piece_kinds(line), Problem(
                self.file, line_no, "a [per-stage]/[dump-...] line cut short (the job killed mid-line, or its pieces "
                "interleaved with another writer's: a panic on another thread, BEAM's workers sharing stderr)",
                line[:2000]))
            return n
        parsed = parse_piece(line)
        if parsed[0] == "header" and isinstance(lines, Lines) and not self.dumps.open:
            whole = lines.block_until(n, f"{line} end", (EVENT_START, *PIECE_STARTS))
            if whole is not None and EVENT_START not in whole[1]:  # the common case, read at once
                end, body = whole
                self.dumps.whole(parsed[1], parsed[2], line_no, body)
                return end + 1
        self._emit(line_no, line)
        return n

    def _emit(self, line_no: int, text: str) -> None:
        kind, *rest = parse_piece(text)
        if kind == "per-stage":
            label, count = rest
            self.tracker.add(Stage(label, "per-stage", self.file, line_no, node_count=count, stream=self.stream,
                                   counted=True))
        elif kind == "header":
            self.dumps.header(rest[0], rest[1], line_no)
        elif kind == "end":
            self.dumps.end(rest[0], rest[1], line_no)
        else:  # `[dump-canonical] S : JSON error: ...` and the like
            self.dumps.error(rest[0], rest[1], line_no, text)

    def close(self) -> None:
        if self.pending is not None:
            self.tracker.lost(self.pending_line, piece_kinds(self.pending), Problem(
                self.file, self.pending_line, "a stderr line cut by another thread's output never got its end (the "
                "log ends first)", self.pending[:2000]))
            self.pending = None
        self.dumps.close()

    def event(self, line_no: int, line: str) -> None:
        if not line.startswith("{"):  # tracing's Full or Compact text, cut into a stderr line
            record = tracing_text.parse(line)
            if record is not None:
                _record_event(self.log, self.tracker, self.file, line_no, record, self.stream)
            else:
                self.log.problems.append(Problem(self.file, line_no, "not a tracing event", line[:2000]))
                self.tracker.lost(line_no, {("*", "event")})
            return
        event = _event(self.log, self.tracker, self.file, line_no, line, self.stream)
        if event is not None and isinstance(self.lines, Lines):
            _keep_in_file(event, line, self.lines.file)


# where a text-format event starts inside a stderr piece line: its timestamp (SystemTime's, tracing_text.HEAD)
def _beam_marker(line: str) -> str:
    """`[beam] start ...` and `[beam] final ...` (BEAM_DEBUG, tensor/src/realize.rs) bound the candidates' output."""
    for what in ("[beam] start", "[beam] final"):
        if line.startswith(what):
            return what
    return "[beam]"


def read_lines(log: SvodLog, tracker: Segmenter, file: int, lines: Sequence[tuple[int, str]], stream: int = 0
               ) -> None:
    """Read one program's (one test's) lines, each with its number in the file."""
    reader = LineReader(log, tracker, file, stream)
    reader.read(lines)
    reader.close()


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
                           elapsed_ms=elapsed if isinstance(elapsed, int) else None, thread=thread_of(record)))
    return True


def thread_of(record: dict[str, Any]) -> str | None:
    """The thread a subscriber printed with the event (`.with_thread_ids`, `.with_thread_names`); None: neither."""
    thread_id, name = record.get("threadId"), record.get("threadName")
    return None if thread_id is None and name is None else f"{thread_id}|{name}"


def _realize_end(tracker: Segmenter, record: dict[str, Any], file: int, line_no: int) -> bool:
    """`realize complete` / `prepare: total` (tensor/src/realize.rs, DEBUG): the realize is over."""
    tracker.boundary()
    return True


def _beam_done(tracker: Segmenter, record: dict[str, Any], file: int, line_no: int) -> bool:
    """`beam_search_optimize: completed` (tensor/src/realize.rs, DEBUG): the candidates are done, the chosen
    kernel's post-optimization follows."""
    tracker.marker(BEAM_DONE)
    return True


# events read as what they are, by message: a handler returns False when the event is not the kind after all
EVENT_KINDS: dict[str, Callable[[Segmenter, dict[str, Any], int, int], bool]] = {
    "pattern matched": _pattern_matched,
    **{entry["message"]: _kernel_split for entry in maps()["rules"]["kernel_split"]},
    **dict.fromkeys(REALIZE_ENDS, _realize_end),
    BEAM_DONE: _beam_done,
}


MESSAGE = re.compile(r'"message":"((?:[^"\\]|\\.)*)"')


def _event_kinds(tracker: Segmenter, line: str) -> set[tuple[str, str]]:
    """What a JSON line that does not parse may have been: the stage its message names if the message survived,
    else any event (never a `[per-stage]` line or a dump: those are stderr's)."""
    m = MESSAGE.search(line)
    if m and m.group(1) == "kernel initial":
        return {("kernel-initial-or-00", "event")}
    if m and m.group(1) in tracker.labels:
        return {(tracker.labels[m.group(1)], "event")}
    if m and ("ast." not in line and "tree" not in line):
        return set()  # a message of no stage, and no tree in what is left: not a stage event
    return {("*", "event")}


def code_kind(field: str, code: str) -> str:
    """The code's kind: LLVM IR, C, or Metal (MSL comes from the C renderer's Metal dialect, same field)."""
    kind = CODE_FIELDS[field]
    if kind == "c" and any(marker in code for marker in MSL):
        return "metal"
    return kind


LAYOUT_KEYS = {"timestamp", "level", "fields", "target"}
LAYOUT_HEAD = re.compile(r'\{"timestamp":"([^"\\\x00-\x1f]*)","level":"([^"\\\x00-\x1f]*)","fields":')
LAYOUT_TAIL = ',"target":"'


def _keep_in_file(event: Event, line: str, file_text: FileText) -> None:
    """Leave the event in the file (Event.keep_in_file) when tracing's JSON layout (`{"timestamp":..,"level":..,
    "fields":{..},"target":..}`, compact, strings without escapes) makes its `fields` text exact and it ends its
    line there."""
    record = event.record
    if record.keys() != LAYOUT_KEYS:
        return
    m = LAYOUT_HEAD.match(line)
    if m is None or m.group(1) != record["timestamp"] or m.group(2) != record["level"]:
        return
    cut = line.rfind(LAYOUT_TAIL)
    target = line[cut + len(LAYOUT_TAIL):-2]
    if cut < 0 or not line.endswith('"}') or target != record["target"] or '"' in target or "\\" in target:
        return
    text, starts = file_text.text, file_text.starts
    end = starts[event.line] - 1 if event.line < len(starts) else len(text)
    start = end - len(line)
    if start < starts[event.line - 1] or not text.startswith(line, start):
        return
    event.keep_in_file(file_text, start, start + m.end(), start + cut, end)


def _event(log: SvodLog, tracker: Segmenter, file: int, line_no: int, line: str, stream: int = 0) -> Event | None:
    try:
        record = load_json(line)
    except ValueError as e:
        where = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        log.problems.append(Problem(file, line_no, f"not a JSON tracing event ({where})", line[:2000]))
        tracker.lost(line_no, _event_kinds(tracker, line))
        return
    if not isinstance(record, dict) or not isinstance(record.get("fields"), dict):
        log.problems.append(Problem(file, line_no, "a JSON line without the tracing `fields` object", line))
        return
    return _record_event(log, tracker, file, line_no, record, stream)


def _record_event(log: SvodLog, tracker: Segmenter, file: int, line_no: int, record: dict[str, Any],
                  stream: int = 0) -> Event:
    """One tracing event, whichever formatter printed it (JSON, or a text format read by tracing_text)."""
    event = Event(file, line_no, record)
    log.events.append(event)
    fields = record["fields"]
    message = str(fields.get("message", ""))
    handler = EVENT_KINDS.get(message)
    if handler is not None and handler(tracker, record, file, line_no):
        return event
    for key in CODE_FIELDS:
        if isinstance(fields.get(key), str):
            tracker.code_text(fields[key], code_kind(key, fields[key]), file, line_no)
            return event
    if "kernel.name" in fields and isinstance(fields["kernel.name"], str):
        tracker.code_name(fields["kernel.name"], file, line_no)
        return event
    tree_field = next((f for f in TREE_FIELDS if isinstance(fields.get(f), str)), None)
    label = "kernel-initial-or-00" if message == "kernel initial" else tracker.labels.get(message)
    if tree_field is None and label is None:
        return event
    count = fields.get("node_count")
    stage = Stage(label or message, "event", file, line_no, message=message,
                  node_count=count if isinstance(count, int) else None, counted=isinstance(count, int),
                  elapsed_ms=fields.get("elapsed_ms") if isinstance(fields.get("elapsed_ms"), int) else None,
                  stream=stream, thread=thread_of(record))
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
    return event
