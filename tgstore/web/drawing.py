"""Drawing stored graphs for pages: a graph's SVG, alone or compared with another (added and changed nodes outlined,
removed ones ghosted), cached by hash (stored graphs never change); and loading a graph with where it sits in its
kernel's pipeline (the pass before it is its input)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from markupsafe import Markup

from tgstore.compare.matching import compare
from tgstore.compare.uop_text import uop_diff
from tgstore.web import layout
from tgstore.web.graphs import StoredGraph, find_graph
from tgstore.web.passnav import PassContext, PassKey, commit_of_run, pass_context

# A drawing bigger than this is not written into the page: the page loads it from the graph's .svg address (same
# query) when it opens, so the page itself stays small (a 2,258-node drawing is 1.25 MB).
INLINE_SVG_BYTES = 400_000
GRAPH_CACHE = 128  # drawings kept in memory, by (hash, compared-with hash, fold): stored graphs never change


@dataclass
class Drawing:
    svg: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    ghosts_left_out: int = 0
    seconds: float = 0.0


@lru_cache(maxsize=GRAPH_CACHE)
def drawing(digest: str, nodes_json: str, other_digest: str | None, other_json: str | None, fold: bool) -> Drawing:
    start = time.perf_counter()
    nodes = json.loads(nodes_json)
    if other_json is None:
        return Drawing(layout.svg(nodes, fold=fold), seconds=time.perf_counter() - start)
    result = compare(json.loads(other_json), nodes)
    marks = {**{i: "added" for i in result.added}, **{i: "changed" for i in result.changed},
             **{i: "removed" for i in result.ghosts}}
    svg = layout.svg(result.merged, marks=marks, fold=fold)
    hidden = layout.foldable(result.merged) if fold else set()  # counted where they are drawn: in their users
    removed = len([g for g in result.ghosts if g not in hidden]) + result.ghosts_left_out
    return Drawing(svg, len(result.added - hidden), len(result.changed - hidden), removed, result.ghosts_left_out,
                   time.perf_counter() - start)


@dataclass
class Sides:
    """Two graphs drawn side by side: the older (removed and changed nodes marked) and the newer (added and changed
    marked), matched by structure (tgstore.compare.matching)."""

    svg_a: str
    svg_b: str
    added: int
    changed: int
    removed: int


@lru_cache(maxsize=GRAPH_CACHE // 4)
def sides(old_json: str, new_json: str, fold: bool) -> Sides:
    old, new = json.loads(old_json), json.loads(new_json)
    result = compare(old, new, max_ghosts=0)
    changed_old = {result.new_to_old[n] for n in result.changed}
    marks_a = {**{o: "removed" for o in result.removed}, **{o: "changed" for o in changed_old}}
    marks_b = {**{n: "added" for n in result.added}, **{n: "changed" for n in result.changed}}
    hidden_a = layout.foldable(old) if fold else set()
    hidden_b = layout.foldable(new) if fold else set()
    return Sides(layout.svg(old, marks=marks_a, fold=fold), layout.svg(new, marks=marks_b, fold=fold),
                 len(result.added - hidden_b), len(result.changed - hidden_b),
                 len([o for o in result.removed if o not in hidden_a]))


@dataclass
class Loaded:
    graph: StoredGraph | None
    other: StoredGraph | None = None
    other_label: str | None = None
    problem: str | None = None
    context: PassContext | None = None
    commit: tuple[str, str | None] | None = None


def load(conn: sqlite3.Connection, digest: str, versus: str | None, key: PassKey | None, compare_input: bool
         ) -> Loaded:
    found = find_graph(conn, digest)
    if found is None:
        return Loaded(None)
    out = Loaded(found)
    if key is None and found.uses:
        key = PassKey.from_use(found.uses[0])
    if key is not None:
        ctx = pass_context(conn, key)
        if ctx is not None and ctx.current is not None and ctx.current.graph_hash == digest:
            out.context, out.commit = ctx, commit_of_run(conn, key.run)
    if versus:
        other = find_graph(conn, versus)
        if other is None:
            out.problem = f"no stored graph {versus[:12]} to compare with"
        else:
            use = other.uses[0] if other.uses else None
            where = f" (after {use['pass_name']!r} at {use['version'] or use['sha'][:12]})" \
                if use and use.get("pass_name") else ""
            out.other, out.other_label = other, f"graph {versus[:12]}{where}"
    elif compare_input and out.context is not None and (before := out.context.previous) is not None:
        if before.graph_hash != digest:
            out.other = find_graph(conn, before.graph_hash or "")
            out.other_label = f"the graph after #{before.position} {before.name!r} (this pass's input)"
    return out


def subgraph_svg(node: dict[str, Any] | None) -> Markup | None:
    graph = (node or {}).get("graph")
    if not graph:
        return None
    return Markup(layout.svg(graph, marks={len(graph) - 1: "changed"}, fold=True))


def step_diff_lines(step: Any) -> list[str]:
    """A rewrite step as tinygrad's VIZ shows it: the unified diff of the rewritten UOp printed before and after
    (its recorded neighbourhood: sources up to three levels down)."""
    if step is None:
        return []
    before, after = (step.before or {}).get("graph"), (step.after or {}).get("graph")
    return uop_diff(before, after, "before", "after")
