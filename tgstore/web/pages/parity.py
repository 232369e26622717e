"""The Svod parity page (/-/parity?case=[&svod_run=][&commit=]): each Svod run × tinygrad commit × stage of a case,
verdicts coloured, stages a log lacks said so, each cell linking to the Svod tree drawn over tinygrad's graph after
the mapped pass. Without a case: the cases that have Svod output."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.web.base import database, int_arg, render
from tgstore.web.parity import parity, svod_cases


async def parity_page(datasette: Any, request: Any) -> Response:
    case = (request.args.get("case") or "").strip()
    svod_run = int_arg(request, "svod_run")
    commit = (request.args.get("commit") or "").strip()
    db = database(datasette)
    cases = await db.execute_fn(svod_cases)
    found = await db.execute_fn(lambda conn: parity(conn, case, svod_run, commit)) if case else None
    title = f"Svod parity: {case}" if case else "Svod parity"
    return await render(datasette, request, "tgstore_parity.html", {
        "title": title, "case": case, "cases": cases, "parity": found, "svod_run": svod_run, "commit": commit})
