"""Two graphs printed as trees and diffed so that only structure can show as a change.

`tgstore.compare.graphs.tree_lines` prints a node reached again as `(line N)`; one inserted node moves every N below
it and the diff fills with changes that are not there. Here a node reached again is named by a short hash of its
subtree's structure (op, dtype, arg, sources' hashes), which is the same on both sides whatever came before it, and
difflib aligns the lines."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence

from tgstore.compare.graphs import Node, label, roots


def signatures(nodes: Sequence[Node]) -> list[str]:
    sig: list[str] = []
    for node in nodes:  # sources come first in a stored graph
        sig.append(hashlib.sha1(json.dumps([node[0], node[1], node[2], [sig[s] for s in node[3]]],
                                           default=str).encode()).hexdigest()[:8])
    return sig


def tree_lines(nodes: Sequence[Node], limit: int = 20_000) -> list[str]:
    sig = signatures(nodes)
    lines: list[str] = []
    printed: set[int] = set()
    for root in roots(nodes):
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            i, depth = stack.pop()
            indent = "  " * depth
            if i in printed:
                lines.append(f"{indent}^ {label(nodes[i])} (#{sig[i]})")
                continue
            printed.add(i)
            lines.append(f"{indent}{label(nodes[i])}")
            if len(lines) >= limit:
                return [*lines, f"... ({len(nodes)} nodes; cut at {limit} lines)"]
            stack += [(s, depth + 1) for s in reversed(nodes[i][3])]
    return lines


def tree_diff(a: Sequence[Node], b: Sequence[Node], label_a: str, label_b: str, context: int = 3) -> list[str]:
    return list(difflib.unified_diff(tree_lines(a), tree_lines(b), label_a, label_b, n=context, lineterm=""))
