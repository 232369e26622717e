"""The chart page (/-/chart?metric=&case=&renderer=): one case's metric over commits in history order."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.web import charts
from tgstore.web.base import database, not_found, render


async def chart(datasette: Any, request: Any) -> Response:
    metric = request.args.get("metric") or "uops"
    case = request.args.get("case") or ""
    renderer = request.args.get("renderer") or "C"
    db = database(datasette)
    if metric not in charts.METRICS:
        return await not_found(datasette, request, f"no chart {metric!r}; charts: {', '.join(charts.METRICS)}")
    cases = await db.execute_fn(charts.cases)
    context: dict[str, Any] = {"metric": metric, "case": case, "renderer": renderer, "cases": cases,
                               "metrics": charts.METRICS, "svg": None}
    if not case:
        return await render(datasette, request, "tgstore_chart.html", context)
    only = request.args.get("series") or None  # pass_nodes: one pass ("codegen: NAME"); else one chart per pass
    data = await db.execute_fn(lambda conn: charts.chart_data(conn, metric, case, renderer, only))
    run_cases = datasette.urls.table(db.name, "v_run_cases")
    if metric == "pass_nodes" and (only is None or only not in data.series):
        return await render(datasette, request, "tgstore_chart.html", {
            **context, "chart": data, "panels": charts.small_multiples(data), "only": only,
            "series_url": lambda name: "/-/chart?" + urlencode({"metric": metric, "case": case, "renderer": renderer,
                                                                 "series": name})})
    hint = charts.empty_hint(data)
    if hint:
        return await render(datasette, request, "tgstore_chart.html", {**context, "chart": data, "hint": hint})
    shas = {run_id: sha for run_id, sha, _version in data.commits}
    # a point opens the case's kernel workbench at that commit (the kernels view for a case-wide metric)
    svg = charts.render(data, lambda run_id: datasette.urls.path("/-/kernel?" + urlencode(
        {"case": case, "commit": shas[run_id], "renderer": renderer})) if metric in ("uops", "pass_nodes")
        else f"{run_cases}?{urlencode({'run_id': run_id, 'case': case})}")
    return await render(datasette, request, "tgstore_chart.html", {
        **context, "svg": Markup(svg), "chart": data, "only": only,
        "all_url": "/-/chart?" + urlencode({"metric": metric, "case": case, "renderer": renderer})})
