"""Graphs compared by structure, ids ignored.

A stored graph is a list of nodes [op, dtype, arg, [source positions]] in toposort order (what the extractor writes
and `graphs.nodes` holds). `tree_lines` prints it as an indented tree from its root, children in source order, a
node reached a second time printed as a back-reference to the line that first printed it, so two graphs with the
same structure print the same lines whatever their node numbering. `structural_diff` is the unified diff of two
such printings.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

from tgstore.spelling.eras import roots

Node = Sequence[Any]  # [op, dtype, arg, [src positions]]


def load_nodes(text: str) -> list[list[Any]]:
    return json.loads(text)


def label(node: Node) -> str:
    op, dtype, arg = node[0], node[1], node[2]
    parts = [str(op)]
    if dtype not in (None, "", "dtypes.void"):
        parts.append(str(dtype))
    if arg not in (None, "", "None"):
        parts.append(f"arg={arg}")
    return " ".join(parts)


def tree_lines(nodes: Sequence[Node], limit: int = 20_000) -> list[str]:
    """The graph as indented lines; a repeated node is `^ <label> (line N)` with N its first line's number."""
    lines: list[str] = []
    first_line: dict[int, int] = {}
    for root in roots(nodes):
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            i, depth = stack.pop()
            indent = "  " * depth
            if i in first_line:
                lines.append(f"{indent}^ {label(nodes[i])} (line {first_line[i]})")
                continue
            first_line[i] = len(lines) + 1
            lines.append(indent + label(nodes[i]))
            if len(lines) >= limit:
                return [*lines, f"... ({len(nodes)} nodes; cut at {limit} lines)"]
            stack += [(s, depth + 1) for s in reversed(nodes[i][3])]
    return lines


def same_structure(a: Sequence[Node], b: Sequence[Node]) -> bool:
    return tree_lines(a) == tree_lines(b)


def structural_diff(a: Sequence[Node], b: Sequence[Node], label_a: str, label_b: str, context: int = 3) -> list[str]:
    return list(difflib.unified_diff(tree_lines(a), tree_lines(b), label_a, label_b, n=context, lineterm=""))
