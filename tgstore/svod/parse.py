"""Parser for Svod test-run logs (stdlib only, no DB).

Svod is a Rust port of tinygrad. A test run (``RUST_LOG=...=debug cargo test NAME -- --nocapture``) prints,
mixed with ordinary cargo output:

* JSON-lines tracing events (one object per line, starting with ``{``);
* ``[per-stage] LABEL : node_count=N`` lines;
* tree dumps between ``[dump-stage] LABEL :`` and ``[dump-stage] LABEL : end``.

Trees are printed as ``[id] OP(args) : dtype shape=[..]`` lines with box-drawing indentation; ``[id] → (see above)``
marks a node that was already printed. Ids are allocation order and differ between runs, so
:meth:`Tree.structure_text` renders a canonical id-free form for comparisons.

The parser never drops input silently: every non-blank line ends up in an event, a per-stage record, a stage dump or
``raw_lines``; anything malformed is additionally reported in ``problems`` with its 1-based line number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TREE_FIELDS",
    "CODE_FIELDS",
    "TreeNode",
    "Tree",
    "SvodEvent",
    "StageDump",
    "PerStage",
    "Kernel",
    "ParseProblem",
    "SvodLog",
    "parse_svod_log",
    "parse_tree",
    "strip_ansi",
]

# Event fields holding tree text, in the order used to pick SvodEvent.tree.
TREE_FIELDS: tuple[str, ...] = ("uop.tree", "ast.initial", "ast.pre", "ast.optimized")
# Event fields holding rendered kernel source, in order of preference.
CODE_FIELDS: tuple[str, ...] = ("generated_c", "generated_code")

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# Indentation prefix: unicode box drawing (├── │   └── ), plain spaces, or ASCII fallbacks (|-- `-- +--).
_TREE_LINE_RE = re.compile(r"^(?P<prefix>[ \t│├└─|`+-]*)\[(?P<id>\d+)\]\s*(?P<body>.*)$")
_SHARED_RE = re.compile(r"^(?:→|->)\s*\(see above\)\s*$")
_OP_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")
_SHAPE_RE = re.compile(r"(?:^|\s)shape=(?P<shape>\[.*\])\s*$")
_PER_STAGE_RE = re.compile(r"^\[per-stage\]\s*(?P<label>.*?)\s*:\s*node_count\s*=\s*(?P<count>\d+)\b")
_DUMP_RE = re.compile(r"^\[dump-stage\]\s*(?P<label>.*?)\s*:\s*(?P<rest>.*?)\s*$")
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (cargo colours its output)."""
    return _ANSI_RE.sub("", text)


# --------------------------------------------------------------------------------------------------------------------
# Trees
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class TreeNode:
    """One line of a tree dump."""

    position: int  # 0-based order in the dump
    log_id: int  # the [id] as printed (allocation order; differs between runs)
    op: str  # e.g. "SINK", "ADD", "CONST"; for shared refs: the referenced node's op ("?" if never printed)
    args: str | None  # text inside OP(...) or None
    dtype: str | None
    shape: str | None  # text of shape=[..] including the brackets, e.g. "[16]" / "[]"; None if absent
    depth: int  # indentation depth (0 = root)
    parent: int | None  # position of the parent node in this dump
    shared_ref: bool  # True for "[id] → (see above)" lines (refers to log_id already printed)
    ref_position: int | None = None  # for shared refs: position of the referenced node (None if never printed)

    def label(self) -> str:
        """``OP(args) : dtype shape=[..]`` without the id."""
        text = self.op if self.args is None else f"{self.op}({self.args})"
        if self.dtype:
            text += f" : {self.dtype}"
        if self.shape is not None:
            text += f" shape={self.shape}"
        return text


@dataclass
class Tree:
    nodes: list[TreeNode]

    def structure_text(self) -> str:
        """Canonical indented text without ids, so trees from two runs compare equal.

        One line per node: four spaces per depth level, then ``OP(args) : dtype shape=[..]``. A shared reference is
        rendered as ``→ OP(args) #P`` where P is the position of the referenced node in this dump (positions do not
        depend on ids); references to nodes that were never printed render as ``→ ?N`` (N numbers them by first
        appearance).
        """
        unknown: dict[int, int] = {}
        out: list[str] = []
        for node in self.nodes:
            indent = "    " * node.depth
            if not node.shared_ref:
                out.append(indent + node.label())
            elif node.ref_position is not None:
                ref = self.nodes[node.ref_position]
                head = ref.op if ref.args is None else f"{ref.op}({ref.args})"
                out.append(f"{indent}→ {head} #{node.ref_position}")
            else:
                out.append(f"{indent}→ ?{unknown.setdefault(node.log_id, len(unknown))}")
        return "\n".join(out)

    def node_count(self) -> int:
        """Number of distinct nodes (shared refs are not double counted)."""
        return len({node.log_id for node in self.nodes})

    @property
    def root(self) -> TreeNode | None:
        return self.nodes[0] if self.nodes else None


def _split_parens(body: str) -> tuple[str, str | None, str]:
    """Split ``OP(args) rest`` into (op, args, rest); raises ValueError."""
    m = _OP_RE.match(body)
    if not m:
        raise ValueError(f"expected an op name, got {body[:40]!r}")
    op, i = m.group(0), m.end()
    if i >= len(body) or body[i] != "(":
        return op, None, body[i:]
    depth = 0
    for j in range(i, len(body)):
        ch = body[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return op, body[i + 1 : j], body[j + 1 :]
    raise ValueError(f"unbalanced parentheses after {op}")


def _parse_body(body: str) -> tuple[str, str | None, str | None, str | None]:
    """Parse ``OP(args) : dtype shape=[..]`` into (op, args, dtype, shape); raises ValueError."""
    op, args, rest = _split_parens(body.strip())
    rest = rest.strip()
    if rest and not rest.startswith(":") and not rest.startswith("shape="):
        raise ValueError(f"unexpected text after {op}: {rest[:40]!r}")
    if rest.startswith(":"):
        rest = rest[1:].strip()
    shape = None
    m = _SHAPE_RE.search(rest)
    if m:
        shape = m.group("shape")
        rest = rest[: m.start()].strip()
    return op, args, (rest or None), shape


@dataclass
class _TreeLine:
    line_no: int  # line number used in error messages (1-based within the tree text, or within the log)
    text: str


def _build_tree(lines: list[_TreeLine], strict: bool) -> tuple[Tree, list[tuple[int, str, str]]]:
    """Build a Tree from tree lines.

    In strict mode the first error raises ValueError. Otherwise bad lines are skipped (bad indentation is clamped)
    and reported as (line_no, message, text) tuples.
    """
    errors: list[tuple[int, str, str]] = []

    def fail(line: _TreeLine, message: str) -> None:
        if strict:
            raise ValueError(f"tree line {line.line_no}: {message}: {line.text.strip()[:120]!r}")
        errors.append((line.line_no, message, line.text))

    parsed: list[tuple[_TreeLine, str, int, str]] = []  # (line, prefix, log_id, body)
    for line in lines:
        text = strip_ansi(line.text).rstrip()
        if not text.strip():
            continue
        m = _TREE_LINE_RE.match(text)
        if not m:
            fail(line, "not a tree line (expected '[id] OP(args) : dtype shape=[..]')")
            continue
        prefix = m.group("prefix").replace("\t", "    ")
        parsed.append((line, prefix, int(m.group("id")), m.group("body")))

    nodes: list[TreeNode] = []
    if not parsed:
        return Tree(nodes), errors
    base = len(parsed[0][1])
    # Box-drawing trees indent 4 columns per level. Plain-space trees: in pre-order the first indented line is at
    # depth 1, so its width is the indent unit (normally 4).
    unit = 4
    if not any(ch in "│├└─|`+" for _, prefix, _, _ in parsed for ch in prefix):
        unit = next((len(p) - base for _, p, _, _ in parsed if len(p) > base), 4)
    stack: list[int] = []  # stack[d] = position of the latest node at depth d
    by_id: dict[int, int] = {}
    for line, prefix, log_id, body in parsed:
        width = len(prefix)
        rel = width - base
        if rel < 0:
            fail(line, f"indented {width} columns, less than the first line ({base})")
        elif rel % unit:
            fail(line, f"indentation of {width} columns is not a multiple of {unit}")
            rel = max(rel, 0)
        depth = rel // unit
        if depth > len(stack):
            fail(line, f"indentation jumps to depth {depth} from depth {len(stack) - 1}")
            depth = len(stack)
        if _SHARED_RE.match(body.strip()):
            ref_pos = by_id.get(log_id)
            if ref_pos is not None:
                ref = nodes[ref_pos]
                op, args, dtype, shape = ref.op, ref.args, ref.dtype, ref.shape
            else:
                op, args, dtype, shape = "?", None, None, None
            shared = True
        else:
            try:
                op, args, dtype, shape = _parse_body(body)
            except ValueError as exc:
                fail(line, str(exc))
                continue
            ref_pos, shared = None, False
        del stack[depth:]
        position = len(nodes)
        nodes.append(
            TreeNode(
                position=position,
                log_id=log_id,
                op=op,
                args=args,
                dtype=dtype,
                shape=shape,
                depth=depth,
                parent=stack[-1] if stack else None,
                shared_ref=shared,
                ref_position=ref_pos,
            )
        )
        stack.append(position)
        if not shared:
            by_id.setdefault(log_id, position)
    return Tree(nodes), errors


def parse_tree(text: str) -> Tree:
    """Parse tree text (``[id] OP(args) : dtype shape=[..]`` lines with box-drawing or 4-space indentation).

    Raises ValueError with the offending line on unparsable text (including empty text).
    """
    if not isinstance(text, str):
        raise ValueError(f"tree text must be a string, got {type(text).__name__}")
    lines = [_TreeLine(i, t.rstrip("\r")) for i, t in enumerate(text.split("\n"), 1)]
    tree, _ = _build_tree(lines, strict=True)
    if not tree.nodes:
        raise ValueError("tree text is empty")
    return tree


# --------------------------------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class SvodEvent:
    """One JSON tracing event."""

    line_no: int
    timestamp: str | None
    level: str | None
    target: str | None
    message: str | None
    fields: dict[str, Any]  # all fields (raw)
    elapsed_ms: float | None
    node_count: int | None
    tree: Tree | None  # first parsable of TREE_FIELDS present
    trees: dict[str, Tree] = field(default_factory=dict)  # every parsable tree field, by field name
    kernel_index: int | None = None  # kernel this event belongs to (None before the first kernel)
    extra: dict[str, Any] = field(default_factory=dict)  # other top-level keys (span, spans, ...)


@dataclass
class StageDump:
    """A ``[dump-stage] LABEL :`` ... ``[dump-stage] LABEL : end`` block."""

    label: str
    line_no: int  # line of the opening marker
    tree: Tree
    end_line_no: int | None = None  # line of the end marker; None when unterminated
    kernel_index: int | None = None


@dataclass
class PerStage:
    """``[per-stage] 13-pm_add_loads : node_count=30``."""

    label: str
    line_no: int
    node_count: int
    kernel_index: int | None = None


@dataclass
class Kernel:
    """A kernel starts at each event carrying ``ast.initial``; later events, dumps and code belong to it until the
    next one."""

    index: int
    initial: Tree | None
    pre: Tree | None
    optimized: Tree | None
    generated_code: str | None  # from generated_c or generated_code
    line_no: int = 0  # line of the event that started the kernel
    event_lines: list[int] = field(default_factory=list)  # line numbers of its events
    stage_dumps: list[StageDump] = field(default_factory=list)
    per_stage: list[PerStage] = field(default_factory=list)


@dataclass
class ParseProblem:
    line_no: int
    message: str
    text: str


@dataclass
class SvodLog:
    events: list[SvodEvent] = field(default_factory=list)
    stage_dumps: list[StageDump] = field(default_factory=list)
    per_stage: list[PerStage] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    pattern_matches: dict[str, int] = field(default_factory=dict)  # op_key -> count from "pattern matched" events
    raw_lines: list[tuple[int, str]] = field(default_factory=list)  # lines that are none of the above, verbatim
    problems: list[ParseProblem] = field(default_factory=list)


def _to_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = _NUMBER_RE.search(value)
        return float(m.group(0)) if m else None
    return None


def _to_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


_TOP_LEVEL_KEYS = ("timestamp", "level", "target", "fields")


class _Parser:
    def __init__(self) -> None:
        self.log = SvodLog()
        self.kernel: Kernel | None = None
        self.dump: tuple[str, int, str, list[_TreeLine]] | None = None  # (label, line_no, header text, lines)

    # -- helpers ---------------------------------------------------------------------------------------------------
    def problem(self, line_no: int, message: str, text: str) -> None:
        self.log.problems.append(ParseProblem(line_no, message, text))

    def raw(self, line_no: int, text: str) -> None:
        self.log.raw_lines.append((line_no, text))

    def kernel_index(self) -> int | None:
        return self.kernel.index if self.kernel is not None else None

    # -- dumps -----------------------------------------------------------------------------------------------------
    def close_dump(self, end_line_no: int | None) -> None:
        assert self.dump is not None
        label, line_no, _, lines = self.dump
        self.dump = None
        tree, errors = _build_tree(lines, strict=False)
        for err_line, message, text in errors:
            self.problem(err_line, f"dump-stage {label!r}: {message}", text)
        dump = StageDump(label, line_no, tree, end_line_no, self.kernel_index())
        self.log.stage_dumps.append(dump)
        if self.kernel is not None:
            self.kernel.stage_dumps.append(dump)

    def dump_marker(self, line_no: int, raw: str, clean: str) -> None:
        m = _DUMP_RE.match(clean)
        if not m:
            self.problem(line_no, "malformed [dump-stage] marker (expected '[dump-stage] LABEL :')", raw)
            self.raw(line_no, raw)
            return
        label, rest = m.group("label"), m.group("rest")
        if rest.lower() == "end":
            if self.dump is None:
                self.problem(line_no, f"[dump-stage] end marker for {label!r} without a matching start", raw)
                self.raw(line_no, raw)
                return
            if self.dump[0] != label:
                self.problem(
                    line_no,
                    f"[dump-stage] end marker for {label!r} closes dump {self.dump[0]!r} "
                    f"(started at line {self.dump[1]})",
                    raw,
                )
            self.close_dump(line_no)
            return
        if self.dump is not None:
            self.problem(
                self.dump[1],
                f"unterminated [dump-stage] block {self.dump[0]!r}: new dump {label!r} started at "
                f"line {line_no} before its end marker",
                self.dump[2],
            )
            self.close_dump(None)
        self.dump = (label, line_no, raw, [])
        if _TREE_LINE_RE.match(rest):  # tree starting on the marker line
            self.dump[3].append(_TreeLine(line_no, rest))

    # -- events ----------------------------------------------------------------------------------------------------
    def event(self, line_no: int, raw: str, obj: dict[str, Any]) -> None:
        fields = obj.get("fields")
        if isinstance(fields, dict):
            extra = {k: v for k, v in obj.items() if k not in _TOP_LEVEL_KEYS}
        else:  # flattened events (tracing-subscriber's flatten_event) keep fields at the top level
            fields = {k: v for k, v in obj.items() if k not in _TOP_LEVEL_KEYS and k not in ("span", "spans")}
            extra = {k: obj[k] for k in ("span", "spans") if k in obj}
            if "fields" in obj:
                extra["fields"] = obj["fields"]

        def opt_str(value: Any) -> str | None:
            return None if value is None else value if isinstance(value, str) else str(value)

        trees: dict[str, Tree] = {}
        for name in TREE_FIELDS:
            if name not in fields:
                continue
            value = fields[name]
            try:
                trees[name] = parse_tree(value)
            except ValueError as exc:
                self.problem(line_no, f"unparsable tree in field {name!r}: {exc}", opt_str(value) or "")

        ev = SvodEvent(
            line_no=line_no,
            timestamp=opt_str(obj.get("timestamp")),
            level=opt_str(obj.get("level")),
            target=opt_str(obj.get("target")),
            message=opt_str(fields.get("message")),
            fields=fields,
            elapsed_ms=_to_float(fields.get("elapsed_ms")),
            node_count=_to_int(fields.get("node_count")),
            tree=next((trees[n] for n in TREE_FIELDS if n in trees), None),
            trees=trees,
            extra=extra,
        )

        kernel_fields = ("ast.pre", "ast.optimized", *CODE_FIELDS)
        if "ast.initial" in fields:
            self.kernel = Kernel(len(self.log.kernels), trees.get("ast.initial"), None, None, None, line_no)
            self.log.kernels.append(self.kernel)
        elif self.kernel is None and any(n in fields for n in kernel_fields):
            self.problem(
                line_no,
                "kernel data (ast.pre/ast.optimized/generated code) before any ast.initial event; "
                "starting a kernel without an initial AST",
                raw,
            )
            self.kernel = Kernel(len(self.log.kernels), None, None, None, None, line_no)
            self.log.kernels.append(self.kernel)
        if self.kernel is not None:
            k = self.kernel
            k.event_lines.append(line_no)
            k.pre = trees.get("ast.pre", k.pre)
            k.optimized = trees.get("ast.optimized", k.optimized)
            code = next((fields[n] for n in CODE_FIELDS if isinstance(fields.get(n), str)), None)
            if code is not None:
                k.generated_code = code
            ev.kernel_index = k.index

        if ev.message is not None and ev.message.strip().lower() == "pattern matched" and "op_key" in fields:
            key = opt_str(fields["op_key"]) or ""
            self.log.pattern_matches[key] = self.log.pattern_matches.get(key, 0) + 1
        self.log.events.append(ev)

    # -- main loop -------------------------------------------------------------------------------------------------
    def line(self, line_no: int, raw: str) -> None:
        clean = strip_ansi(raw).rstrip()
        stripped = clean.lstrip()
        if not stripped:
            return
        if stripped.startswith("[dump-stage]"):
            self.dump_marker(line_no, raw, stripped)
        elif stripped.startswith("[per-stage]"):
            m = _PER_STAGE_RE.match(stripped)
            if not m:
                self.problem(line_no, "malformed [per-stage] line (expected '[per-stage] LABEL : node_count=N')", raw)
                self.raw(line_no, raw)
                return
            ps = PerStage(m.group("label"), line_no, int(m.group("count")), self.kernel_index())
            self.log.per_stage.append(ps)
            if self.kernel is not None:
                self.kernel.per_stage.append(ps)
        elif stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except ValueError as exc:
                msg = getattr(exc, "msg", str(exc))
                col = getattr(exc, "colno", None)
                where = f", column {col}" if col is not None else ""
                self.problem(line_no, f"malformed JSON event ({msg}{where})", raw)
                self.raw(line_no, raw)
                return
            if not isinstance(obj, dict):  # pragma: no cover - a line starting with '{' is an object if valid
                self.problem(line_no, "JSON line is not an object", raw)
                self.raw(line_no, raw)
                return
            self.event(line_no, raw, obj)
        elif self.dump is not None and _TREE_LINE_RE.match(clean):
            self.dump[3].append(_TreeLine(line_no, clean))
        else:
            self.raw(line_no, raw)

    def finish(self, last_line: int) -> SvodLog:
        if self.dump is not None:
            label, line_no, header, lines = self.dump
            self.problem(
                line_no,
                f"unterminated [dump-stage] block {label!r}: no end marker before end of input "
                f"(line {last_line}); tree kept with {len(lines)} line(s)",
                header,
            )
            self.close_dump(None)
        self.log.problems.sort(key=lambda p: p.line_no)
        return self.log


def parse_svod_log(text: str) -> SvodLog:
    """Parse a Svod test-run log (tolerates CRLF line endings, ANSI colour codes and blank lines)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parser = _Parser()
    for line_no, raw in enumerate(lines, 1):
        parser.line(line_no, raw.rstrip("\r"))
    return parser.finish(len(lines))
