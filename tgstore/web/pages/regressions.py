"""The /-/regressions page: what `tgstore regressions` finds, rendered from its one JSON account
(`Report.as_json()`, history/regressions.py) through templates/tgstore_regressions.html, so the page and the JSON
say the same thing: confirmed steps apart from unconfirmed ones, each with what it stands out from, its
confirmation, its triage state, its chart, the stage diff of its two commits and, for a gap, the bisect command;
then the spikes, the candidates not reported and why, the noise per series and the series skipped and why."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.history.regressions import METRICS, RegressionError, find_regressions
from tgstore.units import format_value
from tgstore.web.base import database, render


def context(report: dict[str, Any], case: str | None) -> dict[str, Any]:
    """What the template draws: the report as JSON, each regression and spike with its values spelled (its links
    are built in the template by `tg`, web/urls.py)."""
    regressions = [{**r, "before_text": format_value(r["before"], r["unit"]),
                    "after_text": format_value(r["after"], r["unit"])} for r in report["regressions"]]
    spikes = [{**s, "level_text": format_value(s["level"], s["unit"]),
               "value_text": format_value(s["value"], s["unit"])} for s in report["spikes"]]
    return {"report": report, "confirmed": [r for r in regressions if r["confirmed"] == "confirmed"],
            "unconfirmed": [r for r in regressions if r["confirmed"] != "confirmed"], "spikes": spikes,
            "metrics": METRICS, "case": case}


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
                            {"title": "Regressions", "message": str(exc)}, 200 if empty else 400,
                            data={"error": str(exc)} if not empty else {"regressions": [], "message": str(exc)})
    found = report.as_json()
    return await render(datasette, request, "tgstore_regressions.html", context(found, case), data=found)
