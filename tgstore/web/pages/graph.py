"""The graph page (/-/graph/<hash>): a stored graph drawn server-side, constants folded into their users (toggle),
and, for a pass's graph, stepping to the previous and next pass of the same kernel with "what this pass changed"
marked (added and changed nodes outlined, removed ones ghosted). `?vs=<hash>` compares with any other stored graph
the same way (another commit's graph of the same pass, say)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.spelling.svod import normalize_tinygrad
from tgstore.web import layout
from tgstore.web.base import database, not_found, render, short_sha
from tgstore.web.drawing import INLINE_SVG_BYTES, Loaded, drawing, load
from tgstore.web.passnav import PassKey

SVOD_TREE = "Svod tree"  # StoredGraph.kind of a Svod tree (tgstore.web.graphs)


async def graph(datasette: Any, request: Any) -> Response:
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
    nodes, other_label = found.nodes, loaded.other_label
    if other is not None and (other.kind == SVOD_TREE) != (found.kind == SVOD_TREE):
        # a Svod tree is stored in the spelling parity compares in: tinygrad's side is drawn in it too, so only
        # structural differences are marked (Svod parity links here)
        if found.kind != SVOD_TREE:
            nodes = normalize_tinygrad(found.nodes)[0]
        else:
            other = replace(other, nodes=normalize_tinygrad(other.nodes)[0])
        other_label = f"{other_label}, both in Svod parity's spelling"
    drawn = drawing(digest + ("/svod" if nodes is not found.nodes else ""), json.dumps(nodes),
                    other.hash if other else None, json.dumps(other.nodes) if other else None, fold)
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
                    "commit": f"{loaded.commit[1] or short_sha(loaded.commit[0])}" if loaded.commit else None,
                    "workbench_url": datasette.urls.path("/-/kernel?" + urlencode(
                        {"case": ctx.key.case, "kernel": ctx.key.kernel, "commit": loaded.commit[0],
                         "renderer": ctx.key.renderer, "pass": ctx.key.position}))
                    if ctx.key.kernel is not None and loaded.commit else None}
    here = request.path + "?" + urlencode([(k, request.args.get(k)) for k in request.args if k != "fold"])
    inline = len(drawn.svg) <= INLINE_SVG_BYTES
    svg_url = datasette.urls.path(f"/-/graph/{digest}.svg") + (f"?{request.query_string}" if request.query_string
                                                                else "")
    return await render(datasette, request, "tgstore_graph.html", {
        "graph": found, "svg": Markup(drawn.svg) if inline else None, "svg_url": None if inline else svg_url,
        "svg_bytes": len(drawn.svg), "versus": other.hash if other else None,
        "other_label": other_label, "problem": loaded.problem, "drawn": drawn, "fold": fold,
        "fold_url": here + ("&fold=0" if fold else ""), "stepping": stepping,
        "legend": [(f, *layout.COLOURS[f]) for f in families], "node_count": len(found.nodes)})
