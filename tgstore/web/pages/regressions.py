"""The /-/regressions page: what `tgstore regressions` finds, rendered from its one JSON account
(`Report.as_json()`, history/regressions.py) through templates/tgstore_regressions.html, so the page and the JSON
say the same thing: confirmed steps apart from unconfirmed ones, each with what it stands out from, its
confirmation, its triage state, its chart, the stage diff of its two commits and, for a gap, the bisect command;
then the spikes, the candidates not reported and why, the noise per series and the series skipped and why."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.answers.base import Unanswerable
from tgstore.answers.regressions import regressions as regressions_answer
from tgstore.history.regressions import METRICS
from tgstore.units import format_value
from tgstore.web.base import bad_request, read, render


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
    try:  # the question `tgstore regressions` and the MCP tool ask: its twin is the same JSON
        answer = await read(datasette, lambda conn: regressions_answer(conn, metric, case=case, since=since,
                                                                     machine=machine))
    except Unanswerable as exc:  # a bad metric, case, commit or machine
        return await bad_request(datasette, request, str(exc))
    if answer.message:  # nothing timed yet is an answer: the same keys, empty
        return await render(datasette, request, "tgstore_message.html",
                            {"title": "Regressions", "message": answer.message}, data=answer.to_json)
    found = answer.to_json()
    return await render(datasette, request, "tgstore_regressions.html", context(found, case), data=found)
