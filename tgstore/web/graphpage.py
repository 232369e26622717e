"""The graph page (/-/graph/<hash>): a stored graph drawn server-side, constants folded into their users (toggle),
and, for a pass's graph, stepping to the previous and next pass of the same kernel with "what this pass changed"
marked (added and changed nodes outlined, removed ones ghosted). `?vs=<hash>` compares with any other stored graph
the same way (another commit's graph of the same pass, say)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.compare.matching import compare
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
            out.other, out.other_label = other, f"graph {versus[:12]}"
    elif compare_input and out.context is not None and (before := out.context.previous) is not None:
        if before.graph_hash != digest:
            out.other = find_graph(conn, before.graph_hash or "")
            out.other_label = f"the graph after #{before.position} {before.name!r} (this pass's input)"
    return out


def short(sha: str) -> str:
    return sha[:17] if sha.startswith("tree:") else sha[:12]


async def graph(datasette: Any, request: Any) -> Response:
    from tgstore.web.pages import database, not_found, render

    digest = request.url_vars["hash"]
    versus = request.args.get("vs") or None
    fold = request.args.get("fold", "1") != "0"
    compare_input = request.args.get("changes", "1") != "0"
    key = PassKey.from_args(request.args)
    db = database(datasette)
    loaded: Loaded = await db.execute_fn(lambda conn: load(conn, digest, versus, key, compare_input))
    found = loaded.graph
    if found is None:
        return await not_found(datasette, request, f"no stored graph has the hash {digest}")
    other = loaded.other
    drawn = drawing(digest, json.dumps(found.nodes), other.hash if other else None,
                    json.dumps(other.nodes) if other else None, fold)
    if request.url_vars.get("format") == "svg":
        return Response(drawn.svg, content_type="image/svg+xml; charset=utf-8",
                        headers={"Cache-Control": "max-age=86400"})
    families = sorted({layout.family(str(n[0])) for n in found.nodes})
    ctx = loaded.context
    stepping = None
    if ctx is not None:
        current = ctx.current
        stepping = {"where": ctx.where, "current": current, "previous": ctx.previous, "next": ctx.next,
                    "prev_url": datasette.urls.path(ctx.graph_url(ctx.previous)) if ctx.previous else None,
                    "next_url": datasette.urls.path(ctx.graph_url(ctx.next)) if ctx.next else None,
                    "steps_url": datasette.urls.path(ctx.steps_url(current)) if current and current.has_steps
                    else None, "index": [p.position for p in ctx.passes].index(ctx.key.position) + 1,
                    "count": len(ctx.passes),
                    "commit": f"{loaded.commit[1] or short(loaded.commit[0])}" if loaded.commit else None}
    here = request.path + "?" + urlencode([(k, request.args.get(k)) for k in request.args if k != "fold"])
    inline = len(drawn.svg) <= INLINE_SVG_BYTES
    svg_url = datasette.urls.path(f"/-/graph/{digest}.svg") + (f"?{request.query_string}" if request.query_string
                                                                else "")
    return await render(datasette, request, "tgstore_graph.html", {
        "graph": found, "svg": Markup(drawn.svg) if inline else None, "svg_url": None if inline else svg_url,
        "svg_bytes": len(drawn.svg), "versus": other.hash if other else None,
        "other_label": loaded.other_label, "problem": loaded.problem, "drawn": drawn, "fold": fold,
        "fold_url": here + ("&fold=0" if fold else ""), "stepping": stepping,
        "legend": [(f, *layout.COLOURS[f]) for f in families], "node_count": len(found.nodes)})
