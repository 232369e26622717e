"""The rewrite page (/-/rewrites?run=&case=&kernel=&renderer=&pass=&step=): the steps tinygrad took inside one
pass, in order, each with the UPat that matched (file:line and its source), and for the selected step the
rewritten node's neighbourhood before and after, the rewritten node marked, as tinygrad's VIZ shows a rewrite."""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette.utils.asgi import Response

from tgstore.compare.rewrite_steps import PassSteps, case_steps
from tgstore.web.base import not_found, read, render
from tgstore.web.drawing import step_diff_lines, subgraph_svg
from tgstore.web.passnav import PassContext, PassKey, commit_of_run, pass_context

STEP_LIST_LIMIT = 500  # steps listed on one page (a pass's recorded steps are capped at extraction anyway)


def load(conn: sqlite3.Connection, key: PassKey) -> tuple[PassSteps | None, PassContext | None, Any]:
    found = case_steps(conn, key.run, key.case, kernel=key.kernel, renderer=key.renderer,
                       schedule=key.kernel is None, pass_position=key.position, trace_of=key.position)
    ctx = pass_context(conn, key)
    commit = commit_of_run(conn, key.run)
    passes = [p for k in found for p in k.passes]
    return (passes[0] if passes else None), ctx, commit


async def rewrites(datasette: Any, request: Any) -> Response:
    key = PassKey.from_args(request.args)
    if key is None:
        return await not_found(datasette, request, "a rewrite page needs run, case, pass (and kernel, renderer for a "
                               "kernel's pass): follow a link from a pass's graph page or from v_passes")
    found, ctx, commit = await read(datasette, lambda conn: load(conn, key))
    if found is None or ctx is None:
        return await not_found(datasette, request, f"no pass #{key.position} for case {key.case!r} in run {key.run}")
    try:
        selected = int(request.args.get("step") or 0)
    except ValueError:
        selected = 0
    step = found.steps[selected] if 0 <= selected < len(found.steps) else None
    current = ctx.current

    def link(p: Any) -> str | None:
        return datasette.urls.path(ctx.steps_url(p)) if p is not None else None

    prev_with_steps = next((p for p in reversed(ctx.passes) if p.position < key.position and p.has_steps), None)
    next_with_steps = next((p for p in ctx.passes if p.position > key.position and p.has_steps), None)
    step_diff = step_diff_lines(step)
    return await render(datasette, request, "tgstore_rewrites.html", {
        "key": key, "found": found, "ctx": ctx, "current": current, "step": step, "selected": selected,
        "steps": found.steps[:STEP_LIST_LIMIT], "commit": commit,
        "commit_label": (commit[1] or commit[0][:12]) if commit else "",
        "graph_url": datasette.urls.path(ctx.graph_url(current)) if current and current.graph_hash else None,
        "prev_url": link(prev_with_steps), "next_url": link(next_with_steps),
        "prev_pass": prev_with_steps, "next_pass": next_with_steps,
        "step_url": lambda i: datasette.urls.path(ctx.steps_url(current, step=i)) + "#step",
        "before_svg": subgraph_svg(step.before if step else None),
        "after_svg": subgraph_svg(step.after if step else None), "step_diff": step_diff},
        data=lambda: {"pass": found.to_json(), "where": ctx.where, "commit": commit[0] if commit else None,
                      "selected": selected, "step_diff": "\n".join(step_diff) if step else None})
