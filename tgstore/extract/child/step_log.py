"""Rewrite steps (`--rewrites N`) as they happen, and as bundle data: the rule that matched (file, line, the UPat's
source as tinygrad's VIZ prints it), and the node before and after with a bounded neighbourhood of its subgraph (for
drawing) and the hash of its whole subgraph (for comparing).

Steps are recorded by the child's own counting rewrite (patterns.counting_rewrite), which reports each match to the
`StepLog`; the pass recorder opens one collector per named pass. These are the steps tinygrad's own VIZ trace
(TRACK_MATCH_STATS=2, `tracked_ctxs`) holds for the same pass, without the trace's cost: that trace numbers every
UOp a rewrite touches and times every rule tried, for the whole run (30-55% more extraction CPU); the log keeps only
the first N steps of each pass, as UOps, and encodes them when the pass ends. Subgraph hashes are memoized per UOp
within a case, so hashing every step of its passes costs one visit per UOp.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from .encode import toposort
from .text import clean

NEIGHBOURHOOD_DEPTH = 3  # source levels kept below a rewritten node for its drawing
NEIGHBOURHOOD_NODES = 12  # at most this many nodes per drawing (the nearest ones, breadth first)
UPAT_LINES = 8  # a UPat spanning more lines than this is cut


class Collector:
    """The steps of one pass: the first `limit` matches as (before, after, rule location), and how many there were."""

    __slots__ = ("limit", "steps", "total")

    def __init__(self, limit: int) -> None:
        self.limit, self.steps, self.total = limit, [], 0

    def add(self, before: Any, after: Any, location: Any) -> None:
        self.total += 1
        if len(self.steps) < self.limit:
            self.steps.append((before, after, location))


class StepLog:
    """Which pass a match belongs to: the innermost open graph rewrite, as in tinygrad's trace. A rewrite that is
    not a recorded pass (unnamed, or a helper such as `simplify`) opens a `None` level, so its matches are not
    counted as the enclosing pass's."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.stack: list[Collector | None] = []
        self.current: Collector | None = None

    def enter(self, recorded: bool) -> None:
        self.stack.append(self.current)
        self.current = Collector(self.limit) if recorded else None

    def leave(self) -> Collector | None:
        done, self.current = self.current, self.stack.pop()
        return done


class StepEncoder:
    """Steps as bundle data; nodes are tinygrad UOps (op, dtype, src, arg), memoized by identity for as long as the
    encoder lives (one case's passes), which also keeps them alive so their ids stay theirs."""

    def __init__(self) -> None:
        self._text: dict[int, tuple[str, str, str]] = {}
        self._hash: dict[int, str] = {}
        self._alive: dict[int, Any] = {}

    def encode(self, collected: Collector) -> dict[str, Any]:
        """One pass's steps: `nodes` is a table of the nodes the steps' drawings use, shared by the steps (the same
        nodes recur from step to step: about 2.5 times fewer than drawing each step's on its own); each step's
        `before` and `after` give the subgraph's hash and its drawing as table indexes, sources first, node last."""
        table: dict[int, int] = {}
        nodes: list[Any] = []

        def ref(u: Any) -> dict[str, Any] | None:
            if not hasattr(u, "op") or not hasattr(u, "src"):
                return None
            drawing = []
            for v in self.neighbourhood(u):
                if id(v) not in table:
                    table[id(v)] = len(nodes)
                    nodes.append(v)
                drawing.append(table[id(v)])
            return {"hash": self.subgraph_hash(u), "graph": drawing}

        steps = []
        for before, after, loc in collected.steps:
            try:
                file, line = clean(str(loc[0])), int(loc[1])
            except Exception:
                file, line = None, None
            steps.append({"file": file, "line": line, "upat": upat_source(str(loc[0]), line) if file else None,
                          "before": ref(before), "after": ref(after)})
        encoded = [[*self.text(v), [table[id(s)] for s in self.sources(v) if id(s) in table]] for v in nodes]
        return {"total": collected.total, "limit": collected.limit, "nodes": encoded, "steps": steps}

    def text(self, u: Any) -> tuple[str, str, str]:
        found = self._text.get(id(u))
        if found is None:
            try:
                arg_text = clean(repr(u.arg))
            except Exception:  # an arg whose repr raises is named by its type
                arg_text = f"<{type(u.arg).__name__}>"
            self._alive[id(u)] = u
            found = self._text[id(u)] = (getattr(u.op, "name", str(u.op)), clean(str(u.dtype)), arg_text)
        return found

    @staticmethod
    def sources(u: Any) -> tuple[Any, ...]:
        return tuple(getattr(u, "src", ()))

    def subgraph_hash(self, root: Any) -> str:
        """sha256 over the subgraph's structure (op, dtype, arg, source hashes), computed iteratively."""
        hashes = self._hash
        stack = [root]
        while stack:
            u = stack[-1]
            if id(u) in hashes:
                stack.pop()
                continue
            todo = [s for s in self.sources(u) if id(s) not in hashes]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            key = "\x00".join((*self.text(u), *(hashes[id(s)] for s in self.sources(u))))
            hashes[id(u)] = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return hashes[id(root)]

    def neighbourhood(self, root: Any) -> list[Any]:
        """The nodes nearest `root` (breadth first over sources, bounded), sources before users, the root last."""
        kept, frontier = {id(root): root}, [root]
        for _ in range(NEIGHBOURHOOD_DEPTH):
            nxt = []
            for u in frontier:
                for s in self.sources(u):
                    if id(s) not in kept and len(kept) < NEIGHBOURHOOD_NODES:
                        kept[id(s)] = s
                        nxt.append(s)
            frontier = nxt
        return toposort(root, within=kept)


@functools.cache
def upat_source(file: str, line: int) -> str | None:
    """The UPat's source from `line` on, as far as its brackets close (tinygrad's VIZ prints the first line)."""
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read().splitlines()[line - 1:line - 1 + UPAT_LINES]
    except (OSError, IndexError, ValueError):
        text = []
    taken, depth = [], 0
    for row in text:
        taken.append(row.strip())
        depth += sum(row.count(c) for c in "([{") - sum(row.count(c) for c in ")]}")
        if depth <= 0:
            break
    return clean(" ".join(taken)) if taken else None
