"""Svod's tree text (`UOp::tree()`, ir/src/uop/tree.rs): parsing, and the graph it describes in tinygrad's spelling.

    [135] SINK[KERNEL] : Scalar(Void)
    └── [131] END : Scalar(Void) shape=[]
        ├── [130] STORE : Scalar(Void) shape=[]
        │   └── [89] → (see above)

A line is `[id] OP(args) : dtype` plus ` shape=[..]` (` shape=?` when Svod could not infer it, nothing when there is
none); children are indented by four columns (`├── `, `└── `, `│   `, four spaces); a node printed before is
`[id] → (see above)` with no children. Ids are allocation order and differ from run to run, also inside args
(`REDUCE(Add, num_axes=0, ranges=[118, 117])`): the graph tgstore keeps has none of them. A tree with a line that
does not parse is not a tree: `TreeError` names the line, and the caller keeps the text.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from tgstore.spelling.svod import Speller

LINE = re.compile(r"^(?P<prefix>(?:│   |    |├── |└── )*)\[(?P<id>\d+)\] (?P<body>.*)$")
# the common line in one match, args nested two parentheses deep, no quote: the whole tree's lines at once
_ARGS = r"[^()'\n]*(?:\([^()'\n]*(?:\([^()'\n]*\)[^()'\n]*)*\)[^()'\n]*)*"
FAST_LINE = re.compile(r"^((?:│   |    |├── |└── )*)\[(\d+)\] (?:(?:→|->) \(see above\)|"
                       r"([A-Z][A-Za-z0-9_]*)(\[KERNEL\])?(\((" + _ARGS + r")\))? : ([^\n]+?)"
                       r"(?: shape=(\[[^\n]*\]|\?))?)$", re.M)
BACKREF = re.compile(r"^(?:→|->) \(see above\)$")
OP = re.compile(r"[A-Z][A-Za-z0-9_]*(?:\[KERNEL\])?")


class TreeError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line  # 0-based line within the tree text


@dataclass(slots=True)
class Node:
    id: int
    op: str  # as Svod printed it (SINK[KERNEL] -> SINK)
    kernel_sink: bool
    args: str | None
    dtype: str | None
    shape: str | None
    children: list[int] = field(default_factory=list)  # ids, in printed order


@dataclass
class Tree:
    roots: list[int]
    nodes: dict[int, Node]  # by id, in first-printed order

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    def graph(self, speller: Speller | None = None) -> list[list]:
        """The graph in tinygrad's spelling as compact nodes [op, dtype, arg, [source positions]], in the toposort
        order tgstore's extractor uses (sources first, in order), so that equal structures give equal lists."""
        speller = speller or Speller()
        order: list[int] = []
        seen: set[int] = set()
        for root in self.roots:
            stack: list[tuple[int, bool]] = [(root, False)]
            while stack:
                nid, expanded = stack.pop()
                if expanded:
                    order.append(nid)
                    continue
                if nid in seen:
                    continue
                seen.add(nid)
                stack.append((nid, True))
                stack += [(c, False) for c in reversed(self.nodes[nid].children) if c not in seen]
        position = {nid: i for i, nid in enumerate(order)}
        out = []
        for nid in order:
            node = self.nodes[nid]
            op = speller.svod_op(node.op)
            out.append([op, speller.svod_dtype(node.dtype), speller.svod_arg(op, node.op, node.args, node.kernel_sink),
                        [position[c] for c in node.children]])
        return out


def _split_body(body: str, line: int) -> tuple[str, bool, str | None, str | None, str | None]:
    """`OP(args) : dtype shape=[..]` -> (op, kernel sink, args, dtype, shape)."""
    m = OP.match(body)
    if not m:
        raise TreeError(line, f"expected an op name, found {body[:40]!r}")
    op, i = m.group(0), m.end()
    kernel_sink = op.endswith("[KERNEL]")
    op = op.removesuffix("[KERNEL]")
    args = None
    if i < len(body) and body[i] == "(":
        depth, quote = 0, False
        for j in range(i, len(body)):
            ch = body[j]
            if ch == "'" and body[j - 1] != "\\":
                quote = not quote
            elif not quote and ch in "([{":
                depth += 1
            elif not quote and ch in ")]}":
                depth -= 1
                if depth == 0:
                    args, i = body[i + 1:j], j + 1
                    break
        else:
            raise TreeError(line, f"unbalanced parentheses after {op}")
    rest = body[i:]
    if not rest.startswith(" : "):
        raise TreeError(line, f"expected ' : dtype' after {op}, found {rest[:40]!r}")
    rest = rest[3:]
    shape = None
    m = re.search(r" shape=(\[.*\]|\?)$", rest)
    if m:
        shape, rest = m.group(1), rest[:m.start()]
    if not rest:
        raise TreeError(line, f"{op} has no dtype")
    return op, kernel_sink, args, rest, shape


def parse_tree(text: str) -> Tree:
    """Parse Svod's tree text (one or more roots, e.g. the fragments some docs print); TreeError on any line that
    does not fit, with nothing kept."""
    fast = _parse_fast(text)
    return fast if fast is not None else _parse_lines(text)


def _parse_fast(text: str) -> Tree | None:
    """The tree read with one regular expression over all its lines; None when a line is not the common form (the
    line-by-line reader then reads it, and names the line that does not fit)."""
    body = text[:-1] if text.endswith("\n") else text
    if not body:
        return None
    matches = FAST_LINE.findall(body)
    if len(matches) != body.count("\n") + 1:
        return None
    nodes: dict[int, Node] = {}
    roots: list[int] = []
    stack: list[Node] = []
    for prefix, nid_text, op, kernel, parens, args, dtype, shape in matches:
        nid = int(nid_text)
        if prefix:
            depth = len(prefix) >> 2
            if depth > len(stack) or prefix[-4] not in "├└":
                return None
            del stack[depth:]
            parent: Node | None = stack[-1]
        else:
            stack.clear()
            parent = None
        if op:
            if nid in nodes:
                return None
            node = Node(nid, op, kernel != "", args if parens else None, dtype, shape or None, [])
            nodes[nid] = node
            stack.append(node)
        elif nid not in nodes:
            return None
        if parent is None:
            roots.append(nid)
        else:
            parent.children.append(nid)
    return Tree(roots, nodes)


def _parse_lines(text: str) -> Tree:
    nodes: dict[int, Node] = {}
    roots: list[int] = []
    stack: list[tuple[int, int]] = []  # (depth, id) of the open ancestors
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the tree ends with a newline
    if not lines:
        raise TreeError(0, "empty tree")
    for n, raw in enumerate(lines):
        m = LINE.match(raw)
        if not m:
            raise TreeError(n, f"not a tree line: {raw[:60]!r}")
        prefix = m.group("prefix")
        depth = len(prefix) // 4
        if depth > len(stack):
            raise TreeError(n, f"indented {depth} levels below a line {len(stack)} deep")
        del stack[depth:]
        if depth and prefix[-4:] not in ("├── ", "└── "):
            raise TreeError(n, "a child line must end its indentation with '├── ' or '└── '")
        nid, body = int(m.group("id")), m.group("body")
        if BACKREF.match(body):
            if nid not in nodes:
                raise TreeError(n, f"[{nid}] refers back to a node not printed above")
        else:
            if nid in nodes:
                raise TreeError(n, f"[{nid}] is printed twice in full")
            op, kernel_sink, args, dtype, shape = _split_body(body, n)
            nodes[nid] = Node(nid, op, kernel_sink, args, dtype, shape)
        if depth == 0:
            roots.append(nid)
        else:
            nodes[stack[-1][1]].children.append(nid)
        if not BACKREF.match(body):
            stack.append((depth, nid))
    return Tree(roots, nodes)


def graph_text(graph: list[list]) -> str:
    return json.dumps(graph, ensure_ascii=False, separators=(",", ":"))


def graph_hash(graph: list[list]) -> str:
    return hashlib.sha256(graph_text(graph).encode("utf-8")).hexdigest()
