"""Rewrite steps (`--rewrites N`) as they happen, and as bundle data: the rule that matched (file, line, the UPat's
source as tinygrad's VIZ prints it), and the node before and after with a bounded neighbourhood of its subgraph (for
drawing) and the hash of its whole subgraph (for comparing).

Steps are recorded by the child's own counting rewrite (patterns.counting_rewrite), which reports each match to the
`StepLog`; the pass recorder opens one collector per named pass. These are the steps tinygrad's own VIZ trace
(TRACK_MATCH_STATS=2, `tracked_ctxs`) holds for the same pass, without the trace's cost: that trace numbers every
UOp a rewrite touches and times every rule tried, for the whole run (30-55% more extraction CPU); the log keeps only
the first N steps of each pass, as UOps, and encodes them when the pass ends. Subgraph hashes and drawings are
memoized per UOp within a case, so hashing every step of its passes costs one visit per UOp.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from .encode import Encoder, toposort
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
    """Steps as bundle data; nodes are tinygrad UOps (op, dtype, src, arg), memoized (by UOp, encode.py) for as long
    as the encoder lives (one case's passes). A node's text is the case's (`Encoder`): taken from it where the pass
    graphs already computed it."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self._text: dict[Any, tuple[str, str, str]] = {}
        self._hash: dict[Any, str] = {}
        self._drawing: dict[Any, list[Any]] = {}  # a node's neighbourhood: nodes recur from step to step

    def encode(self, collected: Collector) -> dict[str, Any]:
        """One pass's steps: `nodes` is a table of the nodes the steps' drawings use, shared by the steps (the same
        nodes recur from step to step: about 2.5 times fewer than drawing each step's on its own); each step's
        `before` and `after` give the subgraph's hash and its drawing as table indexes, sources first, node last."""
        table: dict[Any, int] = {}

        def ref(u: Any) -> dict[str, Any] | None:
            if not hasattr(u, "op") or not hasattr(u, "src"):
                return None
            drawing = []
            for v in self.neighbourhood(u):
                at = table.get(v)
                if at is None:
                    at = table[v] = len(table)
                drawing.append(at)
            return {"hash": self.subgraph_hash(u), "graph": drawing}

        steps = []
        for before, after, loc in collected.steps:
            try:
                file, line = clean(str(loc[0])), int(loc[1])
            except Exception:
                file, line = None, None
            steps.append({"file": file, "line": line, "upat": upat_source(str(loc[0]), line) if file else None,
                          "before": ref(before), "after": ref(after)})
        text = self.text
        encoded = []
        for v in table:  # dicts keep insertion order
            kept = [table[s] for s in v.src if s in table]
            # a node drawn with fewer sources than it has (the drawing's cap) says how many it has: a 5th element
            encoded.append([*text(v), kept, len(v.src)] if len(kept) < len(v.src) else [*text(v), kept])
        return {"total": collected.total, "limit": collected.limit, "nodes": encoded, "steps": steps}

    def text(self, u: Any) -> tuple[str, str, str]:
        found = self._text.get(u)
        if found is None:
            found = self._text[u] = self.encoder.known_text(u) or self.encoder.describe(u)
        return found

    def subgraph_hash(self, root: Any) -> str:
        """sha256 over the subgraph's structure (op, dtype, arg, source hashes), computed iteratively."""
        hashes = self._hash
        found = hashes.get(root)
        if found is not None:
            return found
        text, sha256 = self.text, hashlib.sha256
        stack = [root]
        while stack:
            u = stack[-1]
            if u in hashes:
                stack.pop()
                continue
            src, waiting = u.src, len(stack)
            for s in src:
                if s not in hashes:
                    stack.append(s)
            if len(stack) != waiting:
                continue
            stack.pop()
            key = "\x00".join((*text(u), *[hashes[s] for s in src]))
            hashes[u] = sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return hashes[root]

    def neighbourhood(self, root: Any) -> list[Any]:
        """The nodes nearest `root` (breadth first over sources, bounded), sources before users, the root last."""
        found = self._drawing.get(root)
        if found is not None:
            return found
        kept, frontier = {root}, [root]
        for _ in range(NEIGHBOURHOOD_DEPTH):
            nxt = []
            for u in frontier:
                for s in u.src:
                    if len(kept) >= NEIGHBOURHOOD_NODES:
                        break
                    if s not in kept:
                        kept.add(s)
                        nxt.append(s)
            frontier = nxt
        found = self._drawing[root] = toposort(root, within=kept)
        return found


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
