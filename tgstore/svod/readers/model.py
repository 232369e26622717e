"""What the readers produce: a Svod run's kernels, stages, events and problems (no database here), and the helpers
every reader shares: JSON with bounded nesting, a tree that does not parse kept as text, a kernel's name in its
code."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tgstore.svod.tree import Tree, TreeError, parse_tree

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if "\x1b" in text else text


@dataclass
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


@dataclass
class Problem:
    file: int
    line: int
    message: str
    text: str | None = None


@dataclass
class Event:
    file: int
    line: int
    record: dict[str, Any]


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
    panic: Any = None  # sessions.Panic
    failed_kernel: int | None = None
    last_stage: str | None = None
    loose_fires: list[Fires] = field(default_factory=list)  # matches no pass event ties to a kernel and pass

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
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _too_deep(value):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value
