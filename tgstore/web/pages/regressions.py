"""The /-/regressions page: the steps `tgstore regressions` finds, each linking to its chart, the stage diff of its
two commits and, for a gap, the bisect command that narrows it."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.history.regressions import METRICS, RegressionError, find_regressions
from tgstore.units import format_ns
from tgstore.web.base import database, render


def table(report: Any, chart_metric: str) -> str:
    def value(v: float, unit: str) -> str:
        return format_ns(int(v)) if unit == "ns" else format_ns(int(v * 1000))

    rows = []
    for r in report.regressions:
        chart = "/-/chart?" + urlencode({"metric": chart_metric, "case": r.case})
        diff = "/-/diff?" + urlencode({"a": r.good, "b": r.bad, "case": r.case})
        where = f"{escape(r.good[:10])}..{escape(r.bad[:10])}" + (
            "" if r.exact else f" <em>gap of {r.commits_between if r.commits_between is not None else '?'}</em>")
        command = r.bisect_command()
        rows.append(
            f'<tr class="tgstore-regression tgstore-{r.direction}"><td>{where}<br><small>{escape(r.subject or "")}'
            f'</small></td><td>{escape(r.title)}<br><small>{escape(r.kernel or "")}</small></td>'
            f"<td>{value(r.before, r.unit)} → {value(r.after, r.unit)}</td><td>{r.ratio:.3f}× {r.direction}</td>"
            f"<td>{r.confidence:.4f}</td><td>{escape(r.explanation)}: {escape(r.detail)}</td>"
            f'<td><a href="{escape(chart)}">chart</a> · <a href="{escape(diff)}">diff --stages</a>'
            + (f"<br><code>{escape(command)}</code>" if command else "") + "</td></tr>")
    noise = "".join(
        f"<tr><td>{escape(s.title)}</td><td>{escape(s.kernel or '')}</td><td>{s.commits}</td>"
        f"<td>{s.noise:.1%}</td><td>{s.detectable:.0%}</td></tr>" for s in report.series)
    return (f"<table class='tgstore-regressions'><thead><tr><th>commits</th><th>series</th><th>change</th>"
            f"<th>ratio</th><th>confidence</th><th>explained by</th><th>see</th></tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table><h2>Noise per series</h2><table><thead><tr><th>series</th><th>kernel</th>"
            f"<th>commits</th><th>noise per commit</th><th>smallest step seen</th></tr></thead><tbody>{noise}"
            "</tbody></table>")


async def regressions(datasette: Any, request: Any) -> Response:
    metric = request.args.get("metric") or "time"
    case = request.args.get("case") or None
    since = request.args.get("since") or None
    machine = request.args.get("machine") or None
    db = database(datasette)
    try:
        report = await db.execute_fn(lambda conn: find_regressions(conn, metric, case=case, since=since,
                                                                   machine=machine))
    except RegressionError as exc:  # nothing timed yet is an answer; a bad metric, case, commit or machine is not
        empty = str(exc).startswith("no kernel timings stored") or str(exc).startswith("no compile times stored")
        return await render(datasette, request, "tgstore_message.html",
                            {"title": "Regressions", "message": str(exc)}, 200 if empty else 400)
    found = len(report.regressions)
    links = " · ".join(f'<a href="/-/regressions?{urlencode({"metric": m, **({"case": case} if case else {})})}">'
                       f"{m}</a>" for m in METRICS)
    message = Markup(f"{found} step{'s' if found != 1 else ''} in {len(report.series)} series of {metric} on machine "
                     f"{escape(report.machine)} ({links})")
    return await render(datasette, request, "tgstore_message.html", {
        "title": "Regressions", "message": message, "body": Markup(table(report, metric))})
