"""Two pass lists aligned by pass name and occurrence (the k-th "expander" with the k-th "expander"), as a sequence
alignment (difflib), so that a pass added or removed between two commits is reported as such instead of shifting
every later pass against the wrong partner."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class PassLike(Protocol):
    position: int
    name: str
    graph_hash: str | None


@dataclass
class AlignedPass:
    a: Any | None  # the pass on side a (None: added on side b)
    b: Any | None  # the pass on side b (None: removed from side a)

    @property
    def kind(self) -> str:
        """"added", "removed", "changed" (same pass, another output graph) or "same"."""
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        return "same" if self.a.graph_hash == self.b.graph_hash else "changed"

    @property
    def name(self) -> str:
        return (self.a or self.b).name


def occurrence_keys(passes: Sequence[PassLike]) -> list[str]:
    """'name#k' for the k-th pass of that name (from 1): what aligns."""
    seen: dict[str, int] = {}
    keys = []
    for p in passes:
        seen[p.name] = seen.get(p.name, 0) + 1
        keys.append(f"{p.name}#{seen[p.name]}")
    return keys


def align(a: Sequence[PassLike], b: Sequence[PassLike]) -> list[AlignedPass]:
    """Both lists in one order: matched passes paired, unmatched ones alone (removed before added where both)."""
    ka, kb = occurrence_keys(a), occurrence_keys(b)
    out: list[AlignedPass] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [AlignedPass(a[i1 + k], b[j1 + k]) for k in range(i2 - i1)]
        else:
            out += [AlignedPass(a[i], None) for i in range(i1, i2)]
            out += [AlignedPass(None, b[j]) for j in range(j1, j2)]
    return out


def first_difference(aligned: list[AlignedPass]) -> AlignedPass | None:
    """The first pass added, removed, or whose output graph differs; None when the lists are equal."""
    return next((p for p in aligned if p.kind != "same"), None)


def added(aligned: list[AlignedPass]) -> list[str]:
    return [p.name for p in aligned if p.kind == "added"]


def removed(aligned: list[AlignedPass]) -> list[str]:
    return [p.name for p in aligned if p.kind == "removed"]
