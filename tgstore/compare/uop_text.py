"""A stored graph printed as tinygrad prints a UOp (`UOp.__repr__` through `pretty_print`: each node
`UOp(Ops.OP, dtype, arg=..., src=(...))`, its sources indented below it, a node used twice named `x<n>:=` where first
printed and `x<n>` after), and the unified diff of two such printings: what tinygrad's VIZ shows for a rewrite step
(the rewritten UOp before and after; here its recorded neighbourhood, sources cut off below it printed `...`). Nodes
are tgstore's encoding, [op, dtype, arg, [source positions]]."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from typing import Any

Node = Sequence[Any]


# ops that have no sources: any other op drawn without sources had them cut off by the recorded neighbourhood (a
# step keeps its node's sources three levels down, twelve nodes at most) and is printed with `src=(...)`
LEAVES = frozenset({"CONST", "VCONST", "DEFINE_VAR", "DEFINE_GLOBAL", "DEFINE_LOCAL", "DEFINE_REG", "DEVICE", "UNIQUE",
                    "LUNIQUE", "NOOP", "BINARY", "SOURCE"})


def _rep(node: Node, sources: str) -> str:
    """A node as UOp.__repr__ writes it, `sources` its printed sources (an arg may hold any text, `%d` too)."""
    op, dtype, arg = str(node[0]), str(node[1] or "dtypes.void"), node[2]
    cut = not node[3] and op not in LEAVES
    return f"UOp(Ops.{op}, {dtype}, arg={'None' if arg in (None, '') else arg}, src=({'...' if cut else sources}))"


def left_out(node: Sequence[Any]) -> int:
    """How many of a drawn node's sources the drawing leaves out (its 5th element: its own source count)."""
    return max(0, int(node[4]) - len(node[3])) if len(node) > 4 and node[4] is not None else 0


def uop_text(nodes: Sequence[Node], root: int | None = None) -> str:
    """The graph from `root` (default: the last node) as tinygrad's repr prints it."""
    if not nodes:
        return ""
    root = len(nodes) - 1 if root is None else root
    order: dict[int, list[int]] = {}  # node -> [number, uses]

    def count(i: int) -> None:  # pretty_print's dfs: number nodes in first-use order, count their uses
        stack = [i]
        while stack:
            x = stack.pop()
            for s in reversed(list(nodes[x][3])):
                entry = order.setdefault(s, [len(order), 0])
                entry[1] += 1
                if entry[1] == 1:
                    stack.append(s)
    count(root)
    order.setdefault(root, [0, 0])
    printed: set[int] = set()

    def text(i: int, depth: int) -> str:
        number, uses = order.get(i, [0, 0])
        if i in printed:
            return f"{' ' * depth}x{number}"
        printed.add(i)
        sources = "".join(f"\n{text(s, depth + 2)}," for s in nodes[i][3])
        left = left_out(nodes[i])
        if left and nodes[i][3]:  # cut where the drawing is capped: said where it is cut
            sources += f"\n{' ' * (depth + 2)}...,  # {left} of {nodes[i][4]} sources not recorded"
        return f"{' ' * depth}{f'x{number}:=' if uses > 1 else ''}{_rep(nodes[i], sources)}"

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(nodes) + 100))
    try:
        return text(root, 0)
    finally:
        sys.setrecursionlimit(limit)


def uop_diff(before: Sequence[Node] | None, after: Sequence[Node] | None, label_a: str = "before",
             label_b: str = "after", context: int = 3) -> list[str]:
    """The unified diff of the two UOps' printings (VIZ's step diff), without line ends."""
    old = uop_text(before).splitlines() if before else []
    new = uop_text(after).splitlines() if after else []
    return list(difflib.unified_diff(old, new, label_a, label_b, n=context, lineterm=""))
