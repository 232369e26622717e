"""The graph page (/-/graph/<hash>): a stored graph drawn server-side, constants folded into their users (toggle),
and, for a pass's graph, stepping to the previous and next pass of the same kernel with "what this pass changed"
marked (added and changed nodes outlined, removed ones ghosted). `?vs=<hash>` compares with any other stored graph
the same way (another commit's graph of the same pass, say); `&sides=1` draws the two side by side instead of one
over the other. Two tinygrad graphs are compared in one spelling across tinygrad eras unless `spelling=raw`; a
Svod tree against a tinygrad graph in Svod parity's spelling. The page is titled by what opened it: its place in a
pipeline (run, case, kernel, renderer, pass) or the `title` its link gives."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.spelling.eras import normalized
from tgstore.spelling.svod import normalize_tinygrad
from tgstore.web import layout, urls
from tgstore.web.base import ignore_spelling, not_found, read, render, short_sha, str_arg
from tgstore.web.drawing import INLINE_SVG_BYTES, Loaded, drawing, load, sides
from tgstore.web.passnav import PassKey

SVOD_TREE = "Svod tree"  # StoredGraph.kind of a Svod tree (tgstore.web.graphs)
TINYGRAD_KINDS = ("kernel AST", "pass graph")


def compared_nodes(loaded: Loaded, spelling: bool, across: bool) -> tuple[list[Any], Any, str | None, str | None]:
    """(this graph's nodes, the other graph, its label, the spelling both are drawn in) as the page compares them.
    `across`: the other graph was asked for (`vs`, another commit's, say); a pass compared with its own input is
    one commit's and drawn as stored."""
    found, other, label = loaded.graph, loaded.other, loaded.other_label
    assert found is not None
    nodes, spelled = found.nodes, None
    if other is not None and (other.kind == SVOD_TREE) != (found.kind == SVOD_TREE):
        # a Svod tree is stored in the spelling parity compares in: tinygrad's side is drawn in it too, so only
        # structural differences are marked (Svod parity links here)
        if found.kind != SVOD_TREE:
            nodes = normalize_tinygrad(found.nodes)[0]
        else:
            other = replace(other, nodes=normalize_tinygrad(other.nodes)[0])
        spelled = "Svod parity's spelling"
    elif other is not None and spelling and across and found.kind in TINYGRAD_KINDS and other.kind in TINYGRAD_KINDS:
        nodes, other = normalized(found.nodes), replace(other, nodes=normalized(other.nodes))
        spelled = "one spelling across tinygrad eras"
    return nodes, other, label, spelled


async def graph(datasette: Any, request: Any) -> Response:
    digest = request.url_vars["hash"]
    versus = str_arg(request, "vs")
    fold = request.args.get("fold", "1") != "0"
    compare_input = request.args.get("changes", "1") != "0"
    side_by_side = bool(versus) and request.args.get("sides") == "1"
    spelling = ignore_spelling(request)
    key = PassKey.from_args(request.args)
    loaded: Loaded = await read(datasette, lambda conn: load(conn, digest, versus, key, compare_input))
    found = loaded.graph
    if found is None:
        return await not_found(datasette, request, f"no stored graph has the hash {digest}")
    nodes, other, other_label, spelled = compared_nodes(loaded, spelling, bool(versus))
    pair = None
    if side_by_side and other is not None:
        pair = sides(json.dumps(other.nodes), json.dumps(nodes), fold)
        drawn = None
    else:
        drawn = drawing(digest + (f"/{spelled}" if spelled else ""), json.dumps(nodes),
                        other.hash if other else None, json.dumps(other.nodes) if other else None, fold)
    if request.url_vars.get("format") == "svg":
        svg_text = drawn.svg if drawn else pair.svg_b  # type: ignore[union-attr]
        return Response(svg_text, content_type="image/svg+xml; charset=utf-8",
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
                    "workbench_url": datasette.urls.path(urls.kernel(
                        ctx.key.case, ctx.key.kernel, loaded.commit[0], ctx.key.renderer,
                        pass_position=ctx.key.position))  # kernel -1 is the case as a whole: no workbench
                    if ctx.key.kernel is not None and ctx.key.kernel >= 0 and loaded.commit else None}
    here = request.path + "?" + urlencode([(k, request.args.get(k)) for k in request.args if k != "fold"])
    title = str_arg(request, "title")
    if title is None and stepping is not None:
        title = (f"{stepping['where']}{' at ' + stepping['commit'] if stepping['commit'] else ''}: graph after "
                 f"#{stepping['current'].position} {stepping['current'].name}")
    title = title or found.title
    raw = None if spelling else "raw"
    svg = drawn.svg if drawn else ""
    inline = len(svg) <= INLINE_SVG_BYTES
    query = f"?{request.query_string}" if request.query_string else ""
    counts = (drawn.added, drawn.changed, drawn.removed) if drawn else (pair.added, pair.changed, pair.removed) \
        if pair else (0, 0, 0)
    data = {"hash": digest, "kind": found.kind, "title": title, "node_count": len(found.nodes), "versus": versus,
            "spelling": spelled, "added": counts[0], "changed": counts[1], "removed": counts[2],
            "differ": counts[0] + counts[1] + counts[2] if other else None, "nodes": nodes, "uses": found.uses}
    return await render(datasette, request, "tgstore_graph.html", {
        "graph": found, "svg": Markup(svg) if drawn and inline else None,
        "svg_url": None if inline else datasette.urls.path(f"{urls.GRAPH}/{digest}.svg") + query,
        "svg_bytes": len(svg), "versus": other.hash if other else None, "pair": pair,
        "pair_a": Markup(pair.svg_a) if pair else None, "pair_b": Markup(pair.svg_b) if pair else None,
        "other_label": other_label, "spelled": spelled, "problem": loaded.problem, "drawn": drawn, "fold": fold,
        "counts": counts, "title": title,
        "sides_url": datasette.urls.path(urls.graph(digest, vs=versus, spelling=raw, side_by_side=not side_by_side,
                                                    title=str_arg(request, "title"))) if versus else None,
        "spelling_url": datasette.urls.path(urls.graph(digest, vs=versus, spelling=None if raw else "raw",
                                                       side_by_side=side_by_side, title=str_arg(request, "title")))
        if versus and other is not None and other.kind in TINYGRAD_KINDS and found.kind in TINYGRAD_KINDS else None,
        "ignore_spelling": spelling, "fold_url": here + ("&fold=0" if fold else ""), "stepping": stepping,
        "legend": [(f, *layout.COLOURS[f]) for f in families], "node_count": len(found.nodes)}, data=data)
