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

from tgstore.spelling.svod import Speller, svod_node
from tgstore.svod.drawing import ARROW, BACKREFS, CHILD_ENDS, CHILD_MARKS, INDENT

LINE = re.compile(rf"^(?P<prefix>{INDENT}*)\[(?P<id>\d+)\] (?P<body>.*)$")  # either spelling (drawing.py)
# every line at once: indentation, id, and the rest, which is read once per distinct text (a log's trees repeat
# their lines, ids aside)
FAST_LINE = re.compile(rf"^({INDENT}*)\[(\d+)\] ([^\n]*)$", re.M)
BACKREF = re.compile(rf"^(?:{ARROW}|->) \(see above\)$")
OP = re.compile(r"[A-Z][A-Za-z0-9_]*(?:\[KERNEL\])?")


class TreeError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line  # 0-based line within the tree text


class Node:
    """One node of a tree: its id, what its line says (`head`: op as Svod printed it (SINK[KERNEL] -> SINK), kernel
    sink, args, dtype, shape; equal lines share one head, so a log's many equal lines cost one), and its children's
    ids in printed order."""

    __slots__ = ("id", "head", "children")

    def __init__(self, id: int, head: tuple, children: list[int]) -> None:
        self.id, self.head, self.children = id, head, children

    @classmethod
    def of(cls, id: int, op: str, kernel_sink: bool, args: str | None, dtype: str | None, shape: str | None
           ) -> Node:
        return cls(id, (op, kernel_sink, args, dtype, shape), [])

    op = property(lambda self: self.head[0])
    kernel_sink = property(lambda self: self.head[1])
    args = property(lambda self: self.head[2])
    dtype = property(lambda self: self.head[3])
    shape = property(lambda self: self.head[4])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and (self.id, self.head, self.children) == (other.id, other.head,
                                                                                    other.children)

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.head!r}, {self.children!r})"


# a line's head by its text after the id: shared by every tree of a log (bounded: cleared when it grows past this)
_HEADS: dict[str, tuple] = {}
_NODES: dict[int, Node] = {}  # id -> the node of an earlier tree with it, shared when its line and children are alike
_SPELLED: dict[tuple, tuple] = {}  # a head in tinygrad's spelling (spelling.svod.svod_node), and what was unknown
_PREFIXES: dict[tuple, str] = {}  # a spelled head's JSON, `["OP","dtype","arg",[`
MAX_HEADS = 200_000


@dataclass
class Tree:
    roots: list[int]
    nodes: dict[int, Node]  # by id, in first-printed order
    # the ids sources first (the order `graph` needs), when the parser saw it: the printed tree is a depth-first walk
    # that prints a node once, children in order, so a node's subtree ends where graph's walk finishes it
    order: list[int] | None = None
    # every line's text after its id is ASCII (readers/widen.py has nothing to put back); not part of equality
    plain: bool = field(default=False, compare=False)

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    def graph(self, speller: Speller | None = None) -> list[list]:
        """The graph in tinygrad's spelling as compact nodes [op, dtype, arg, [source positions]], in the toposort
        order tgstore's extractor uses (sources first, in order), so that equal structures give equal lists."""
        order, heads = self._spelled(speller or Speller())
        position = dict(zip(order, range(len(order)), strict=True))
        nodes = self.nodes
        return [[found[0], found[1], found[2], list(map(position.__getitem__, nodes[nid].children))]
                for nid, found in zip(order, heads, strict=True)]

    def graph_text(self, speller: Speller | None = None) -> tuple[str, int, str | None]:
        """`graph_text(self.graph(speller))`, its node count and root op, made as text at once: each distinct line's
        JSON head is made once per log (the store's part of reading a 300-kernel log)."""
        order, heads = self._spelled(speller or Speller())
        position = dict(zip(order, map(str, range(len(order))), strict=True))
        parts = []
        nodes = self.nodes
        for nid, found in zip(order, heads, strict=True):
            prefix = _PREFIXES.get(found)
            if prefix is None:
                prefix = _PREFIXES[found] = graph_text(list(found[:3]))[:-1] + ",["
            parts.append(prefix + ",".join(map(position.__getitem__, nodes[nid].children)) + "]]")
        return "[" + ",".join(parts) + "]", len(order), heads[-1][0] if heads else None

    def _spelled(self, speller: Speller) -> tuple[list[int], list[tuple]]:
        """The graph's order and each node's head in tinygrad's spelling (op, dtype, arg, what was not mapped), each
        distinct head spelled once per process (a node keeps its line for life); what was not mapped is noted."""
        order = self.order if self.order is not None else self._order()
        spelled = _SPELLED
        if len(spelled) > MAX_HEADS:
            spelled.clear()
            _PREFIXES.clear()
        nodes = self.nodes
        heads = []
        for nid in order:
            head = nodes[nid].head
            found = spelled.get(head)
            if found is None:
                found = spelled[head] = svod_node(*head[:4])
            if found[3]:
                for what in found[3]:
                    speller.note(what)
            heads.append(found)
        return order, heads

    def _order(self) -> list[int]:
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
        return order


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
    order: list[int] = []  # finished: a node is when the walk leaves its subtree
    heads, shared = _HEADS, _NODES
    if len(heads) > MAX_HEADS or len(shared) > MAX_HEADS:  # together: a shared node's head is one of heads
        heads.clear()
        shared.clear()
    pop, push, finish, get, remember = stack.pop, stack.append, order.append, shared.get, shared.__setitem__

    def leave(depth: int) -> None:
        """Finish the open nodes deeper than `depth`. A node is finished when the walk leaves its subtree; a node
        printed alike in an earlier tree (same id, line and children: Svod's hash-consing keeps a node's id for life)
        is that one, so a log's trees share what they share."""
        while len(stack) > depth:
            node = pop()
            same = get(node.id)
            if same is None:
                remember(node.id, node)
            elif same.head is node.head and same.children == node.children:
                nodes[node.id] = same
            finish(node.id)

    for prefix, nid_text, body in matches:
        nid = int(nid_text)
        depth = len(prefix) >> 2
        if depth:
            if depth > len(stack) or prefix[-4] not in CHILD_MARKS:
                return None
        if len(stack) > depth:
            leave(depth)
        head = heads.get(body)
        if head is None and body not in BACKREFS:
            try:  # a text not seen before: read as the line-by-line reader reads it
                head = heads[body] = _split_body(body, 0)
            except TreeError:
                return None
        if head is not None:
            if nid in nodes:
                return None
            node = nodes[nid] = Node(nid, head, [])
            if depth:
                stack[-1].children.append(nid)
            else:
                roots.append(nid)
            push(node)
        elif nid not in nodes:
            return None
        elif depth:
            stack[-1].children.append(nid)
        else:
            roots.append(nid)
    leave(0)
    return Tree(roots, nodes, order, all(body.isascii() for _prefix, _nid, body in matches))


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
        if depth and prefix[-4:] not in CHILD_ENDS:
            raise TreeError(n, "a child line must end its indentation with '├── ' or '└── '")
        nid, body = int(m.group("id")), m.group("body")
        if BACKREF.match(body):
            if nid not in nodes:
                raise TreeError(n, f"[{nid}] refers back to a node not printed above")
        else:
            if nid in nodes:
                raise TreeError(n, f"[{nid}] is printed twice in full")
            op, kernel_sink, args, dtype, shape = _split_body(body, n)
            nodes[nid] = Node.of(nid, op, kernel_sink, args, dtype, shape)
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
    return text_hash(graph_text(graph))


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
