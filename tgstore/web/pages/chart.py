"""The chart page (/-/chart?metric=&case=[&renderer=][&machine=]): one case's metric over commits in history order.
Kernel times are drawn per kernel (named by position and kernel name) with the case's total in a chart of its own,
on one machine, named (times of different machines are never mixed; the others are a link away); the renderer box
is shown only for the metrics drawn per renderer."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.web import charts, urls
from tgstore.web.base import not_found, read, render, str_arg


async def chart(datasette: Any, request: Any) -> Response:
    metric = request.args.get("metric") or "uops"
    case = str_arg(request, "case") or ""
    renderer = str_arg(request, "renderer") or "C"
    machine = str_arg(request, "machine")
    if metric not in charts.METRICS:
        return await not_found(datasette, request, f"no chart {metric!r}; charts: {', '.join(charts.METRICS)}")
    cases = await read(datasette, charts.cases)
    context: dict[str, Any] = {"metric": metric, "case": case, "renderer": renderer, "cases": cases,
                               "metrics": charts.METRICS, "svg": None, "rendered": metric in charts.RENDERED}
    if not case:
        return await render(datasette, request, "tgstore_chart.html", context, data={"metric": metric, "cases": cases})
    only = request.args.get("series") or None  # pass_nodes: one pass ("codegen: NAME"); else one chart per pass
    data = await read(datasette, lambda conn: charts.chart_data(conn, metric, case, renderer, only, machine))
    context.update({"chart": data, "machines": data.machines,
                    "machine_url": lambda m: datasette.urls.path(urls.chart(metric, case, machine=m[:12]))})
    as_data = {"metric": metric, "case": case, "renderer": renderer if metric in charts.RENDERED else None,
               "machine": data.machine, "hostname": data.hostname, "commits": data.commits, "series": data.series}
    if metric == "pass_nodes" and (only is None or only not in data.series):
        return await render(datasette, request, "tgstore_chart.html", {
            **context, "panels": charts.small_multiples(data), "only": only,
            "series_url": lambda name: datasette.urls.path(urls.chart(metric, case, renderer, series=name))},
            data=as_data)
    hint = charts.empty_hint(data)
    if hint:
        return await render(datasette, request, "tgstore_chart.html", {**context, "hint": hint},
                            data={**as_data, "hint": hint})
    shas = {run_id: sha for run_id, sha, _version in data.commits}
    run_cases = datasette.urls.table(datasette.get_database().name, "v_run_cases")

    def point(run_id: int) -> str:  # a point opens the case's kernel workbench at that commit (cases view else)
        if metric in ("uops", "pass_nodes"):
            return datasette.urls.path(urls.kernel(case, commit=shas[run_id], renderer=renderer))
        if run_id < 0:  # a timing session without a run (timed again): its commit's cases
            return f"{run_cases}?sha={shas[run_id]}&case={case}"
        return f"{run_cases}?run_id={run_id}&case={case}"

    svg = charts.render(data, point)
    total = None
    if metric == "time":
        summed = await read(datasette, lambda conn: charts.chart_data(conn, "time_total", case, renderer, None,
                                                                      data.machine))
        total = Markup(charts.render(summed, point)) if summed.series else None
    return await render(datasette, request, "tgstore_chart.html", {
        **context, "svg": Markup(svg), "total_svg": total, "only": only,
        "all_url": datasette.urls.path(urls.chart(metric, case, renderer))}, data=as_data)
