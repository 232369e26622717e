"""What the readers produce: a Svod run's kernels, stages, events and problems (no database here), and the helpers
every reader shares: JSON with bounded nesting, a tree that does not parse kept as text, a kernel's name in its
code."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tgstore.svod.drawing import widen
from tgstore.svod.tree import Tree, TreeError, parse_tree

# Every escape a terminal writer puts in a line (ECMA-48): CSI (`ESC [ ... final`, colours), OSC (`ESC ] ... BEL|ST`,
# titles, hyperlinks, nextest's progress), the other string controls (DCS, SOS, PM, APC up to ST), charset
# selection (`ESC ( B`, which terminfo's sgr0 writes after libtest's coloured `ok`), and the two-byte escapes
# (`ESC 7`, `ESC =`, ...); a C1 CSI (0x9b) too.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b[\]PX^_].*?(?:\x07|\x1b\\|$)"
                  r"|\x1b[ -/]+[0-~]|\x1b[0-~]")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if "\x1b" in text or "\x9b" in text else text


@dataclass(slots=True)
class Stage:
    label: str
    source: str  # event | per-stage | dump-stage | dump-canonical | extract-ir | capture | linear | llvm-ir
    file: int
    line: int
    node_count: int | None = None
    tree: Tree | None = None
    tree_text: str | None = None  # set when the text is not a tree (it is kept, with a problem)
    canonical: dict[str, Any] | None = None
    message: str | None = None
    elapsed_ms: int | None = None
    fires: Fires | None = None  # the `pattern matched` events printed since the previous pass's event
    order: int = -1  # reading order in its program (a dump block is placed at its header)
    stream: int = 0  # 0: the log's one stream; 1 stdout, 2 stderr where a runner kept them apart (nextest)
    fragment: int | None = None  # unattributed stages proven to be one kernel's share a fragment number
    schedule: int = 0  # a schedule stage's schedule (a test realizing twice prints two)
    counted: bool = False  # node_count is Svod's own number (a `node_count` field, a [per-stage] line)
    unpaired: bool = False  # a dump body whose block (of several of its label open at once) is not proven
    moved: bool = False  # a document stored a line below its own, off a header it may not answer (dumps.py)
    thread: str | None = None  # an event's thread as its subscriber printed it (`threadId`, `threadName`); None: not


@dataclass
class Fires:
    """Svod's `pattern matched` TRACE events (target `svod_ir::pattern::simplified`, field `op_key` only: Svod's
    event names no rule, ir/src/pattern/simplified.rs:252) between two pass-completion events of one program: they
    are the rewrites of the passes after `since` up to the stage they precede (Svod prints a pass's event after its
    graph_rewrite returns, schedule/src/optimizer/mod.rs)."""

    file: int
    first_line: int
    last_line: int
    counts: dict[str, int] = field(default_factory=dict)  # op_key (OpKey's Debug, e.g. `Binary(Add)`) -> matches
    since: str | None = None  # the label of the previous pass event of the same kernel or schedule (None: none)

    def add(self, op_key: str, line: int) -> None:
        self.counts[op_key] = self.counts.get(op_key, 0) + 1
        self.last_line = line


@dataclass
class Kernel:
    index: int
    file: int
    line: int
    test: str | None = None
    name: str | None = None
    code: str | None = None
    code_kind: str | None = None
    stages: list[Stage] = field(default_factory=list)
    code_fires: Fires | None = None  # matches after its last optimize-phase stage, up to its generated code
    schedule: int = 0  # which of its run's schedules (a test realizing twice prints two) it belongs to


@dataclass
class Problem:
    file: int
    line: int
    message: str
    text: str | None = None


class Event:
    """A tracing event: its file and line, and its record. An event read from a file in tracing's own JSON layout
    (`{"timestamp":..,"level":..,"fields":{..},"target":..}`, compact) keeps where it is in the file's text instead
    of its parsed record: `record` parses it again when asked, the stored `fields` are the file's own text. A
    300-kernel trace log's 30,000 records held 60 MB of tree strings and 30 MB of small objects otherwise."""

    __slots__ = ("file", "line", "_record", "source", "timestamp", "level", "target", "message")

    def __init__(self, file: int, line: int, record: dict[str, Any]) -> None:
        self.file, self.line, self._record = file, line, record
        self.source: tuple[Any, int, int, int, int] | None = None  # (FileText, start, fields start, end, end)
        fields = record.get("fields")
        stamp = record.get("timestamp")
        self.timestamp = stamp if type(stamp) is str or stamp is None else str(stamp)
        self.level, self.target = _scalar(record.get("level")), _scalar(record.get("target"))
        self.message = _scalar(fields.get("message")) if type(fields) is dict else None

    @property
    def record(self) -> dict[str, Any]:
        if self._record is None:
            text, start, _fields_start, _fields_end, end = self.source
            return json.loads(widen(text.text[start:end]) if text.narrowed else text.text[start:end])
        return self._record

    def keep_in_file(self, file_text: Any, start: int, fields_start: int, fields_end: int, end: int) -> None:
        """The event is text[start:end] of the file, its fields text[fields_start:fields_end]: the parsed record is
        dropped."""
        self.source = (file_text, start, fields_start, fields_end, end)
        self._record = None

    def fields_json(self) -> str:
        """The `fields` object as JSON: the file's own text where it is known, else the parsed fields again."""
        if self.source is not None:
            text, _start, fields_start, fields_end, _end = self.source
            fields = text.text[fields_start:fields_end]
            return widen(fields) if text.narrowed else fields
        return json.dumps(self._record["fields"], ensure_ascii=False, default=str, separators=(",", ":"))


def _scalar(value: Any) -> str | None:
    """A level, target or message: the few a log repeats 30,000 times are one string each."""
    if type(value) is str:
        return sys.intern(value) if len(value) < 100 else value
    return None if value is None else str(value)


@dataclass
class SvodLog:
    files: list[tuple[str, str, str]] = field(default_factory=list)  # (path, kind, text)
    kernels: list[Kernel] = field(default_factory=list)
    schedule_stages: list[Stage] = field(default_factory=list)  # rangeify, tensor: before any kernel
    events: list[Event] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    raw_lines: int = 0
    tests: list[str] = field(default_factory=list)
    unplaced: list[Stage] = field(default_factory=list)  # stages no kernel or schedule can hold (with a problem)
    pending: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)  # dump files placed after the logs
    unattributed: list[Stage] = field(default_factory=list)  # stages of parallel kernels no evidence ties to one
    test: str | None = None  # the libtest test this run is (tgstore.svod.readers.sessions)
    outcome: str | None = None  # ok | FAILED | ignored | skipped | None (the log ends inside the test)
    panic: Any = None  # panics.Panic
    torn_panic: int | None = None  # the line of a panic whose first line was torn past reading
    failed_kernel: int | None = None
    last_stage: str | None = None
    loose_fires: list[Fires] = field(default_factory=list)  # matches no pass event ties to a kernel and pass
    captured: bool = False  # libtest or nextest kept the test's output: what its kernels did is unknown, not empty
    serial: bool | None = None  # kernels optimized one after another (whole blocks, dated); None: no kernels
    threads_stated: int | None = None  # the SVOD_THREADS the user says the run had (ingest-svod --svod-threads)
    order_proven: bool = True  # kernels are numbered in schedule order by proof (names, one thread)
    schedules: int = 0  # how many schedules (realizes) the run printed
    beam_candidates: int = 0  # BEAM worker output set aside (not the kernel's stages)
    fragments: int = 0  # groups of unattributed stages proven to be one kernel's each
    dump_headers: int = 0  # `[dump-*]` headers read: Svod's own marker, even where nothing after it was a body
    tests_unproven: bool = False  # the output of tests run in libtest's threads that no proof tells apart

    @property
    def pattern_matches(self) -> tuple[int, int]:
        """`pattern matched` events read: (tied to a kernel or the schedule and a pass, loose)."""
        tied = [s.fires for s in [*self.schedule_stages, *(s for k in self.kernels for s in k.stages)] if s.fires]
        tied += [k.code_fires for k in self.kernels if k.code_fires]
        return sum(sum(f.counts.values()) for f in tied), sum(sum(f.counts.values()) for f in self.loose_fires)

    @property
    def stage_count(self) -> int:
        return len(self.schedule_stages) + len(self.unplaced) + len(self.unattributed) + \
            sum(len(k.stages) for k in self.kernels)


SUFFIX = re.compile(r"n(\d+)$")


def document_name(document: dict[str, Any] | None) -> str | None:
    """The kernel name a canonical document carries (its SINK's `name`), if any."""
    if not isinstance(document, dict):
        return None
    for node in document.get("nodes") or []:
        arg = node.get("arg") if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("op") == "SINK" and isinstance(arg, dict) \
                and isinstance(arg.get("name"), str) and arg["name"]:
            return arg["name"]
    return None


def bare_name(name: str) -> str:
    """The name before the process-wide counter's suffix (`r_8_16_4n1` -> `r_8_16_4`)."""
    return SUFFIX.sub("", name) if SUFFIX.search(name) and not name.endswith("_n1") else name


def suffix_of(name: str) -> int:
    """The counter's number in a final name: 0 for the first kernel of its name (no suffix)."""
    m = SUFFIX.search(name)
    return int(m.group(1)) if m and bare_name(name) != name else 0


def has_events(events: Iterable[tuple[str | None, str | None]], target: str, level: str | None = None) -> bool:
    """Whether a log's events (target, level) show RUST_LOG enabled `target` (a prefix) at `level`: a hint checks
    the log's own switches before suggesting one."""
    return any(str(t or "").startswith(target) and (level is None or lv == level) for t, lv in events)


def event_switches(log: SvodLog) -> list[tuple[str | None, str | None]]:
    return [(e.target, e.level) for e in log.events]


def kernel_name_of(code: str) -> str | None:
    """The kernel's function name in generated code (LLVM `define ... @name(`, `; ModuleID = 'name'`, C `void
    name(`, Metal `kernel void name(`)."""
    for pattern in (r"^define [^@\n]*@([\w.$]+)\(", r"^; ModuleID = '([^']+)'", r"^(?:kernel |extern \"C\" )?void "
                    r"([A-Za-z_]\w*)\(", r"\bvoid ([A-Za-z_]\w*)\("):
        m = re.search(pattern, code, re.M)
        if m:
            return m.group(1)
    return None


def tree_stage(stage: Stage, text: str, log: SvodLog, first_line: int, inline: bool = False) -> Stage:
    """Parse `text` into the stage's tree; a text that is not a tree is kept, with a problem at its line (`inline`:
    the tree is one field of the JSON event at `first_line`, so the problem is at that line, the tree's line said)."""
    try:
        stage.tree = _parse(text)
        if stage.node_count is None:
            stage.node_count = stage.tree.node_count
    except TreeError as e:
        stage.tree_text = text
        where = f" (line {e.line + 1} of the tree)" if inline else ""
        log.problems.append(Problem(stage.file, first_line if inline else first_line + e.line,
                                    f"tree of {stage.label!r} kept as text{where}: {e}",
                                    text.split("\n")[e.line] if e.line < len(text.split("\n")) else None))
    return stage


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> Tree:
    """A tree printed twice (its event and its [dump-stage] block, a stage that changed nothing) is parsed once; the
    Tree is only read after parsing, so stages may share it."""
    return parse_tree(text)


MAX_JSON_DEPTH = 200  # deeper JSON is refused as a problem of its line, not a RecursionError later


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # one decoder: json.loads with an option makes one a call


def _too_deep(value: Any) -> bool:
    """Whether the parsed value nests deeper than MAX_JSON_DEPTH (walked over its containers only: a tracing
    event's long tree strings are not scanned again)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def load_json(text: str) -> Any:
    """json.loads, but nesting is bounded and NaN/Infinity refused (ValueError for both): what is stored as JSON
    stays valid JSON, and no reader recurses without bound."""
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if text.count("{") + text.count("[") > MAX_JSON_DEPTH and _too_deep(value):  # fewer brackets: not so deep
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value
