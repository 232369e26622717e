"""Two pass lists aligned by pass name and occurrence (the k-th "expander" with the k-th "expander"), as a sequence
alignment (difflib), so that a pass added or removed between two commits is reported as such instead of shifting
every later pass against the wrong partner.

A pair's outputs are compared by a key: the graph's hash (raw), or its hash in one spelling across tinygrad eras
(`spelled`, tgstore/compare/spelled.py) when spelling is ignored. The first difference is the first pass present
on both sides whose outputs differ by that key; passes only one side ran are listed apart (added, removed)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class PassLike(Protocol):
    position: int
    name: str
    graph_hash: str | None


KINDS = ("same", "spelling", "changed", "added", "removed")


@dataclass
class AlignedPass:
    a: Any | None  # the pass on side a (None: added on side b)
    b: Any | None  # the pass on side b (None: removed from side a)
    spelling_only: bool = False  # the outputs differ as stored and are equal in one spelling across eras

    @property
    def kind(self) -> str:
        """"added", "removed", "same" (the same output graph), "spelling" (the same in one spelling across eras) or
        "changed" (another output graph)."""
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        if self.a.graph_hash == self.b.graph_hash:
            return "same"
        return "spelling" if self.spelling_only else "changed"

    @property
    def name(self) -> str:
        return (self.a or self.b).name

    @property
    def differs(self) -> bool:
        """Present on both sides with outputs that differ (in the spelling compared)."""
        return self.kind == "changed"


def occurrence_keys(passes: Sequence[PassLike]) -> list[str]:
    """'name#k' for the k-th pass of that name (from 1): what aligns."""
    seen: dict[str, int] = {}
    keys = []
    for p in passes:
        seen[p.name] = seen.get(p.name, 0) + 1
        keys.append(f"{p.name}#{seen[p.name]}")
    return keys


def align(a: Sequence[PassLike], b: Sequence[PassLike],
          spelled: Callable[[str | None], str | None] | None = None) -> list[AlignedPass]:
    """Both lists in one order: matched passes paired, unmatched ones alone (removed before added where both).
    `spelled(graph_hash)`: the graph's key in one spelling across eras; pairs equal there are `spelling` only."""
    ka, kb = occurrence_keys(a), occurrence_keys(b)
    out: list[AlignedPass] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [AlignedPass(a[i1 + k], b[j1 + k]) for k in range(i2 - i1)]
        else:
            out += [AlignedPass(a[i], None) for i in range(i1, i2)]
            out += [AlignedPass(None, b[j]) for j in range(j1, j2)]
    if spelled is not None:
        for p in out:
            if p.a is not None and p.b is not None and p.a.graph_hash != p.b.graph_hash:
                ka_, kb_ = spelled(p.a.graph_hash), spelled(p.b.graph_hash)
                p.spelling_only = ka_ is not None and ka_ == kb_
    return out


def first_difference(aligned: list[AlignedPass]) -> AlignedPass | None:
    """The first pass present on both sides whose outputs differ (in the spelling compared); None when every shared
    pass gave the same output (passes added or removed are listed apart: `added`, `removed`)."""
    return next((p for p in aligned if p.differs), None)


def first_one_sided(aligned: list[AlignedPass]) -> AlignedPass | None:
    """The first pass only one side ran."""
    return next((p for p in aligned if p.kind in ("added", "removed")), None)


def added(aligned: list[AlignedPass]) -> list[str]:
    return [p.name for p in aligned if p.kind == "added"]


def removed(aligned: list[AlignedPass]) -> list[str]:
    return [p.name for p in aligned if p.kind == "removed"]


def counts(aligned: list[AlignedPass]) -> dict[str, int]:
    """How many aligned rows of each kind (every kind named, zeros too)."""
    return {kind: sum(p.kind == kind for p in aligned) for kind in KINDS}
