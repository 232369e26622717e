"""UOps as bundle data: toposort, node text, graphs identified by hash.

UOps key dicts and sets themselves, not by `id()`: they compare and hash by identity in every era (hash-consed, one
object per structure; so do UPats, patterns.py), and `id()` is an audited event, so with the input watch's hook
installed (inputs.py) each call of it runs a Python function: the largest cost of encoding graphs and steps.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Container
from typing import Any

from .text import clean


def toposort(root: Any, within: Container[Any] | None = None) -> list[Any]:
    """`root`'s graph, sources before users, each node once; sources in order (iterative: graphs can be deep).
    With `within` (nodes), only the nodes it holds are visited."""
    order: list[Any] = []
    seen: set[Any] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        u, expanded = stack.pop()
        if expanded:
            order.append(u)
            continue
        if u in seen:
            continue
        seen.add(u)
        stack.append((u, True))
        for s in reversed(u.src):
            if s not in seen and (within is None or s in within):
                stack.append((s, False))
    return order


def graph_hash(nodes: list[list[Any]]) -> str:
    """The identity of an encoded graph: sha256 of its compact JSON (what ingest stores)."""
    return hashlib.sha256(graph_text(nodes).encode("utf-8", "surrogatepass")).hexdigest()


def graph_text(nodes: list[list[Any]]) -> str:
    return json.dumps(nodes, ensure_ascii=False, separators=(",", ":"))


class Encoder:
    """Turns UOps into bundle nodes. A UOp's text (op, dtype, arg) is computed once: UOps are immutable and
    hash-consed, so the same node in a later pass's graph costs nothing. `reset()` between cases bounds memory."""

    def __init__(self) -> None:
        self._text: dict[Any, tuple[str, str, str]] = {}  # by UOp, which it keeps alive
        self._cleaned: dict[str, str] = {}  # clean() of short texts (dtypes, args) that recur: kept across cases

    def _clean(self, s: str) -> str:
        found = self._cleaned.get(s)
        if found is None:
            found = clean(s)
            if len(s) <= 200:
                self._cleaned[s] = found
        return found

    def reset(self) -> None:
        self._text.clear()

    def text(self, u: Any) -> tuple[str, str, str]:
        found = self._text.get(u)
        if found is None:
            found = self._text[u] = self.describe(u)
        return found

    def known_text(self, u: Any) -> tuple[str, str, str] | None:
        """`u`'s text if this case already computed it."""
        return self._text.get(u)

    def describe(self, u: Any) -> tuple[str, str, str]:
        """(op, dtype, arg) as stored, not memoized."""
        try:
            arg = self._clean(repr(u.arg))
        except Exception as e:
            arg = f"<unprintable {type(e).__name__}>"
        return getattr(u.op, "name", str(u.op)), self._clean(str(u.dtype)), arg

    def nodes(self, uops: list[Any]) -> list[dict[str, Any]]:
        """Dict nodes (AST and linearized UOps in case records): {op, dtype, arg, src: positions in `uops`}."""
        pos = {u: i for i, u in enumerate(uops)}
        ret = []
        for u in uops:
            op, dtype, arg = self.text(u)
            ret.append({"op": op, "dtype": dtype, "arg": arg, "src": [pos.get(s) for s in u.src]})
        return ret

    def graph(self, root: Any) -> list[list[Any]]:
        """Compact nodes of `root`'s graph in toposort order: [op, dtype, arg, [source positions]]."""
        order = toposort(root)
        pos = {u: i for i, u in enumerate(order)}
        text = self.text
        return [[*text(u), [pos[s] for s in u.src]] for u in order]
