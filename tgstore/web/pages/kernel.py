"""The kernel workbench (/-/kernel?case=&kernel=&commit=&renderer=&pass=&step=): one kernel of one case at one
commit, as tinygrad's VIZ shows it but across commits. The pass list beside the selected pass's graph (what the pass
changed outlined), its rewrite steps, the generated source, the linearized UOps and the canonical documents in tabs;
←/→ step passes and ↑/↓ rewrite steps (tgstore.js follows the page's rel links); renderers as tabs; the commit
switchable to its neighbours in history."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.answers.blame import blame_pass
from tgstore.compare.rewrite_steps import PassSteps, case_steps
from tgstore.web import layout, urls
from tgstore.web.base import int_arg, not_found, read, render
from tgstore.web.cells import code_block
from tgstore.web.drawing import INLINE_SVG_BYTES, drawing, step_diff_lines, subgraph_svg
from tgstore.web.graphs import find_graph
from tgstore.web.machinecode import readable_source
from tgstore.web.workbench import Where, Workbench, WorkbenchError, load, neighbour_pass, shown_source

STEPS_LISTED = 200


def read_bench(conn: sqlite3.Connection, where: Where) -> tuple[Workbench, PassSteps | None, Any, Any, dict]:
    """The workbench, the selected pass's steps, its graph and its input graph (nodes) for the drawing, and what
    the links around it need (the selected pass at the neighbouring commits, whether Svod output is stored)."""
    bench = load(conn, where)
    extra = {"older_pass": neighbour_pass(conn, bench, bench.older),
             "newer_pass": neighbour_pass(conn, bench, bench.newer),
             "has_svod": conn.execute("SELECT 1 FROM svod_runs r JOIN cases c ON c.id = r.case_id WHERE c.name = ? "
                                      "LIMIT 1", (where.case,)).fetchone() is not None}
    selected, steps = bench.selected, None
    if selected is not None and selected.steps is not None:
        found = case_steps(conn, bench.run_id, where.case, kernel=bench.where.kernel, renderer=bench.renderer,
                           pass_position=selected.position, trace_of=selected.position)
        passes = [p for k in found for p in k.passes]
        steps = passes[0] if passes else None
    extra["history"] = pass_history(conn, bench) if selected is not None else None
    graph = find_graph(conn, selected.graph_hash) if selected and selected.graph_hash else None
    before = bench.input_graph
    other = find_graph(conn, before.graph_hash) if graph and before and before.graph_hash else None
    return bench, steps, graph, other, extra


def pass_history(conn: sqlite3.Connection, bench: Workbench) -> list[dict[str, Any]]:
    """The stored commits up to this one where the selected pass's output changed for this kernel (blame by pass,
    answers/blame.py), oldest first: the workbench's history strip."""
    selected = bench.selected
    assert selected is not None
    occurrence = sum(1 for p in bench.passes if p.name == selected.name and p.position <= selected.position)
    try:
        found = blame_pass(conn, bench.where.case, bench.where.kernel, selected.name, bench.renderer or "C",
                           commit=bench.commit.sha)
    except LookupError:
        return []
    return [c for c in found.changes if c["occurrence"] == occurrence]


async def kernel(datasette: Any, request: Any) -> Response:
    case = (request.args.get("case") or "").strip()
    if not case:
        return await not_found(datasette, request, "the kernel workbench needs a case and a kernel: follow a link "
                               "from the home page's case list or a kernel row")
    where = Where(case, int_arg(request, "kernel"), (request.args.get("commit") or "").strip() or None,
                  (request.args.get("renderer") or "").strip() or None, int_arg(request, "pass"),
                  int_arg(request, "step"))
    try:
        bench, steps, graph, other, extra = await read(datasette, lambda conn: read_bench(conn, where))
    except WorkbenchError as exc:
        return await not_found(datasette, request, str(exc))
    drawn, svg, svg_url = None, None, None
    if graph is not None:
        drawn = drawing(graph.hash, json.dumps(graph.nodes), other.hash if other else None,
                        json.dumps(other.nodes) if other else None, True)
        if len(drawn.svg) <= INLINE_SVG_BYTES:
            svg = Markup(drawn.svg)
        else:
            svg_url = datasette.urls.path(bench_graph_url(bench, graph.hash, svg=True))
    step = None
    if steps is not None and steps.steps:
        index = where.step if where.step is not None and 0 <= where.step < len(steps.steps) else None
        step = steps.steps[index] if index is not None else None
    where = bench.where
    source, language = readable_source(bench.renderer, bench.source)
    shown, shown_lines, total_lines = shown_source(source)
    families = sorted({layout.family(str(n[0])) for n in graph.nodes}) if graph else []
    pass_diff = None
    if bench.older is not None and bench.older.kernel is not None:  # only where the kernel has a counterpart
        pass_diff = datasette.urls.path(urls.passdiff(case, where.kernel, bench.older.label, bench.commit_label,
                                                      bench.renderer))
    step_diff = step_diff_lines(step)
    history = [{**c, "url": datasette.urls.path(urls.passdiff(
        case, c["kernel_after"], c["before"]["sha"], c["after"]["sha"], bench.renderer,
        pass_name=c["pass"], occurrence=c["occurrence"]))} for c in extra.get("history") or []]
    return await render(datasette, request, "tgstore_kernel.html", {
        **extra, "history": history, "step_diff": step_diff, "bench": bench, "where": bench.where,
        "url": lambda **kw: datasette.urls.path(bench.where.url(**kw)),
        "steps": steps, "step_list": steps.steps[:STEPS_LISTED] if steps else [], "step": step,
        "before_svg": subgraph_svg(step.before if step else None),
        "after_svg": subgraph_svg(step.after if step else None),
        "graph": graph, "drawn": drawn, "svg": svg, "svg_url": svg_url,
        "legend": [(f, *layout.COLOURS[f]) for f in families],
        "source_html": code_block(shown, language) if shown is not None else None, "language": language,
        "disassembled": language == "x86asm" and source != bench.source,
        "clipped": (shown_lines, total_lines) if shown_lines < total_lines else None, "pass_diff": pass_diff,
        "title": f"{where.case} · kernel {where.kernel} {bench.kernel_name or ''} · {bench.renderer} · "
                 f"{bench.commit_label}"},
        # the twin holds what the page's tabs show: the source as stored, the linearized UOps (the first
        # UOPS_SHOWN of uop_total, as the tab) and the canonical documents
        data=lambda: {**bench.to_json(), "source": bench.source,
                      "uops": [dict(zip(("idx", "op", "dtype", "arg", "src"), u, strict=False)) for u in bench.uops],
                      "canonical": bench.canonical, "step": step.to_json(graphs=True) if step else None,
                      "step_diff": "\n".join(step_diff) if step else None,
                      "steps_total": steps.total if steps else None,
                      "pass_history": [{k: v for k, v in c.items() if k != "diff"} for c in history]})


def bench_graph_url(bench: Workbench, digest: str, svg: bool = False) -> str:
    """The pass graph's own address in its pipeline (the graph page compares it with the pass's input)."""
    selected = bench.selected
    assert selected is not None
    return urls.graph(digest, run=bench.run_id, case=bench.where.case, kernel=bench.where.kernel,
                      renderer=bench.renderer, pass_position=selected.position, svg=svg)
