"""What a pass (or a commit) changed in a graph, node by node: the two graphs matched by structure, then each new
node called unchanged, changed or added, and the old nodes nothing matched called removed.

Matching, in two rounds:
1. equal subtrees: a new node whose whole subtree (op, dtype, arg and sources, recursively) equals an old node's is
   that node, unchanged;
2. from the roots down: a matched pair's sources at the same position, both still unmatched and of the same op,
   are the same node (changed: its arg, dtype or own sources differ);
3. the nodes still unmatched on both sides, aligned in toposort order by (op, dtype) as a sequence diff, then 2.
   again from the new pairs.
So a node whose source was rewritten keeps its identity: an ancestor of a change is not marked unless its own op,
dtype, arg or number of sources changed, or a source now is another old node (rewired). Hash-of-subtree ancestry
would mark every ancestor up to the SINK.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Node = Sequence[Any]  # [op, dtype, arg, [source positions]]


def subtree_keys(nodes: Sequence[Node]) -> list[str]:
    keys: list[str] = []
    for node in nodes:  # sources first
        keys.append(hashlib.sha1(json.dumps([node[0], node[1], node[2], [keys[s] for s in node[3] if s < len(keys)]])
                                 .encode("utf-8", "surrogatepass")).hexdigest())
    return keys


@dataclass
class Comparison:
    new_to_old: dict[int, int]
    added: set[int]  # positions in the new graph
    changed: set[int]
    removed: list[int]  # positions in the old graph, in order
    merged: list[list[Any]] = field(default_factory=list)  # new nodes, then removed ones (sources remapped)
    ghosts: set[int] = field(default_factory=set)  # positions in `merged` of removed nodes
    ghosts_left_out: int = 0


def compare(old: Sequence[Node], new: Sequence[Node], max_ghosts: int = 400) -> Comparison:
    old_keys, new_keys = subtree_keys(old), subtree_keys(new)
    first_old: dict[str, int] = {}
    for i, k in enumerate(old_keys):
        first_old.setdefault(k, i)
    new_to_old: dict[int, int] = {}
    taken: set[int] = set()
    for i in range(len(new) - 1, -1, -1):  # users first, so an equal subtree is matched as a whole
        o = first_old.get(new_keys[i])
        if o is not None and o not in taken:
            new_to_old[i] = o
            taken.add(o)
    # round 2: roots, then sources by position, top-down (new nodes in reverse toposort order)
    new_roots = _roots(new)
    old_roots = [r for r in _roots(old) if r not in taken]
    for n in new_roots:
        if n not in new_to_old:
            o = next((r for r in old_roots if old[r][0] == new[n][0] and r not in taken), None)
            if o is not None:
                new_to_old[n] = o
                taken.add(o)
    _top_down(old, new, new_to_old, taken)
    # round 3: what is left, aligned in toposort order by (op, dtype), then round 2 again from the new pairs
    rest_new = [n for n in range(len(new)) if n not in new_to_old]
    rest_old = [o for o in range(len(old)) if o not in taken]
    matcher = difflib.SequenceMatcher(None, [(new[n][0], new[n][1]) for n in rest_new],
                                      [(old[o][0], old[o][1]) for o in rest_old], autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            new_to_old[rest_new[block.a + k]] = rest_old[block.b + k]
            taken.add(rest_old[block.b + k])
    _top_down(old, new, new_to_old, taken)
    added = {n for n in range(len(new)) if n not in new_to_old}
    changed = set()
    for n, o in new_to_old.items():
        a, b = new[n], old[o]
        if (a[0], a[1], a[2]) != (b[0], b[1], b[2]) or len(a[3]) != len(b[3]):
            changed.add(n)
        elif any(ns in new_to_old and new_to_old[ns] != os for ns, os in zip(a[3], b[3], strict=True)):
            changed.add(n)  # a source is now another existing node
    removed = [o for o in range(len(old)) if o not in taken]
    result = Comparison(new_to_old, added, changed, removed)
    _merge(result, old, new, max_ghosts)
    return result


def _top_down(old: Sequence[Node], new: Sequence[Node], new_to_old: dict[int, int], taken: set[int]) -> None:
    for n in range(len(new) - 1, -1, -1):
        o = new_to_old.get(n)
        if o is None:
            continue
        for ns, os in zip(new[n][3], old[o][3], strict=False):
            if ns not in new_to_old and os not in taken and new[ns][0] == old[os][0]:
                new_to_old[ns] = os
                taken.add(os)


def _roots(nodes: Sequence[Node]) -> list[int]:
    used = {s for node in nodes for s in node[3]}
    return [i for i in range(len(nodes) - 1, -1, -1) if i not in used]


def _merge(result: Comparison, old: Sequence[Node], new: Sequence[Node], max_ghosts: int) -> None:
    """The new graph with the removed nodes appended (toposort kept: a removed node's sources are matched new nodes
    or earlier removed ones)."""
    old_to_new = {o: n for n, o in result.new_to_old.items()}
    merged = [list(node) for node in new]
    shown = result.removed[:max_ghosts]
    place = {o: len(new) + k for k, o in enumerate(shown)}
    for o in shown:
        srcs = [old_to_new[s] if s in old_to_new else place[s] for s in old[o][3] if s in old_to_new or s in place]
        merged.append([old[o][0], old[o][1], old[o][2], srcs])
    result.merged = merged
    result.ghosts = set(place.values())
    result.ghosts_left_out = len(result.removed) - len(shown)
