"""One rewrite step of tinygrad's own trace (TRACK_MATCH_STATS=2) as bundle data: the rule that matched (file, line,
the UPat's source as tinygrad's VIZ prints it), and the node before and after with a bounded neighbourhood of its
subgraph (for drawing) and the hash of its whole subgraph (for comparing).

The trace holds UOps by number: `uop_fields[num] = (op, dtype, source numbers, arg, tag, ...)` in every era that
has it (0.11+). Subgraph hashes are memoized per number, so hashing every step of a pass costs one visit per UOp.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .text import clean

NEIGHBOURHOOD_DEPTH = 3  # source levels kept below a rewritten node for its drawing
NEIGHBOURHOOD_NODES = 24  # at most this many nodes per drawing (the nearest ones, breadth first)
UPAT_LINES = 8  # a UPat spanning more lines than this is cut


class StepEncoder:
    def __init__(self, fields: dict[int, tuple]) -> None:
        self.fields = fields
        self._text: dict[int, tuple[str, str, str]] = {}
        self._hash: dict[int, str] = {}
        self._source: dict[tuple[str, int], str] = {}

    def text(self, num: int) -> tuple[str, str, str]:
        found = self._text.get(num)
        if found is None:
            op, dtype, _src, arg = self.fields[num][:4]
            try:
                arg_text = clean(repr(arg))
            except Exception:  # 0.11 traces a Kernel arg whose ast is a trace number: its repr raises
                arg_text = f"<{type(arg).__name__}>"
            found = self._text[num] = (getattr(op, "name", str(op)), clean(str(dtype)), arg_text)
        return found

    def sources(self, num: int) -> tuple[int, ...]:
        return tuple(s for s in self.fields[num][2] if isinstance(s, int) and s in self.fields)

    def subgraph_hash(self, root: int) -> str:
        """sha256 over the subgraph's structure (op, dtype, arg, source hashes), computed iteratively."""
        stack = [root]
        while stack:
            num = stack[-1]
            if num in self._hash:
                stack.pop()
                continue
            todo = [s for s in self.sources(num) if s not in self._hash]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            key = "\x00".join((*self.text(num), *(self._hash[s] for s in self.sources(num))))
            self._hash[num] = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return self._hash[root]

    def neighbourhood(self, root: int) -> list[list[Any]]:
        """The nodes nearest `root` (breadth first over sources, bounded), in tgstore's node encoding with sources
        before users; the root is the last node. Sources cut off by the bound are left out of `src`."""
        kept, frontier = [root], [root]
        seen = {root}
        for _ in range(NEIGHBOURHOOD_DEPTH):
            nxt = []
            for num in frontier:
                for s in self.sources(num):
                    if s not in seen and len(kept) < NEIGHBOURHOOD_NODES:
                        seen.add(s)
                        kept.append(s)
                        nxt.append(s)
            frontier = nxt
        order: list[int] = []
        placed: set[int] = set()

        def visit(start: int) -> None:  # post-order over kept nodes, iterative
            stack = [(start, False)]
            while stack:
                num, done = stack.pop()
                if done:
                    order.append(num)
                    continue
                if num in placed:
                    continue
                placed.add(num)
                stack.append((num, True))
                stack.extend((s, False) for s in reversed(self.sources(num)) if s in seen and s not in placed)

        visit(root)
        pos = {num: i for i, num in enumerate(order)}
        return [[*self.text(num), [pos[s] for s in self.sources(num) if s in pos]] for num in order]

    def node(self, num: Any) -> dict[str, Any] | None:
        if not isinstance(num, int) or num not in self.fields:
            return None
        op, dtype, arg = self.text(num)
        return {"op": op, "dtype": dtype, "arg": arg, "hash": self.subgraph_hash(num),
                "graph": self.neighbourhood(num)}

    def upat_source(self, file: str, line: int) -> str | None:
        """The UPat's source from `line` on, as far as its brackets close (tinygrad's VIZ prints the first line)."""
        key = (file, line)
        if key not in self._source:
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
            self._source[key] = clean(" ".join(taken)) if taken else None
        return self._source[key]

    def step(self, before: Any, after: Any, loc: Any) -> dict[str, Any]:
        try:
            file, line = str(loc[0]), int(loc[1])
        except Exception:
            file, line = None, None
        b, a = self.node(before), self.node(after)
        return {"rule": clean(f"{file}:{line}") if file else None,
                "file": clean(file) if file else None, "line": line,
                "upat": self.upat_source(file, line) if file else None,
                "before": _line(b), "after": _line(a), "before_node": b, "after_node": a}


def _line(node: dict[str, Any] | None) -> str | None:
    return None if node is None else f"{node['op']} {node['dtype']} {node['arg']}"
