"""The Svod parity page (/-/parity?case=[&svod_run=][&commit=]): each Svod run × tinygrad commit × stage of a case,
verdicts coloured, stages a log lacks said so, each cell opening that cell as text (&kernel=&stage=&svod_run=
&commit=): the differing nodes (op, dtype, arg at tinygrad and at Svod) above the two graphs drawn over each other,
counts that add up, the tinygrad renderer, kernel and pass compared with, and the Svod log lines of the stage.
Without a case: the cases that have Svod output."""

from __future__ import annotations

import json
from typing import Any

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.spelling.svod import normalize_tinygrad
from tgstore.web.base import int_arg, not_found, read, render, str_arg
from tgstore.web.drawing import INLINE_SVG_BYTES, drawing
from tgstore.web.graphs import find_graph
from tgstore.web.parity import parity, svod_cases
from tgstore.web.parity_cell import cell_detail


async def parity_page(datasette: Any, request: Any) -> Response:
    case = str_arg(request, "case") or ""
    svod_run = int_arg(request, "svod_run")
    commit = str_arg(request, "commit") or ""
    kernel, stage = int_arg(request, "kernel"), str_arg(request, "stage")
    if case and svod_run is not None and kernel is not None and stage and commit:
        return await parity_cell(datasette, request, case, svod_run, kernel, stage, commit)
    cases = await read(datasette, svod_cases)
    found = await read(datasette, lambda conn: parity(conn, case, svod_run, commit)) if case else None
    title = f"Svod parity: {case}" if case else "Svod parity"
    return await render(datasette, request, "tgstore_parity.html", {
        "title": title, "case": case, "cases": cases, "parity": found, "svod_run": svod_run, "commit": commit},
        data={"case": case, "cases": cases, "parity": found})


async def parity_cell(datasette: Any, request: Any, case: str, svod_run: int, kernel: int, stage: str, commit: str
                      ) -> Response:
    def load(conn: Any) -> tuple[Any, Any, Any]:
        detail = cell_detail(conn, case, svod_run, kernel, stage, commit)
        if detail is None or not detail.cell.tinygrad_graph:
            return detail, None, None
        tiny = find_graph(conn, detail.cell.tinygrad_graph)
        svod = find_graph(conn, detail.cell.svod_tree) if detail.cell.svod_tree else None
        return detail, tiny, svod

    detail, tiny, svod = await read(datasette, load)
    if detail is None:
        return await not_found(datasette, request, f"Svod run {svod_run} of {case!r} has no kernel {kernel} at stage "
                               f"{stage!r} against tinygrad at {commit}")
    svg = None
    if tiny is not None:
        nodes = normalize_tinygrad(tiny.nodes)[0]
        drawn = drawing(tiny.hash + "/svod", json.dumps(nodes), svod.hash if svod else None,
                        json.dumps(svod.nodes) if svod else None, False)
        svg = Markup(drawn.svg) if len(drawn.svg) <= INLINE_SVG_BYTES else None
    return await render(datasette, request, "tgstore_parity_cell.html", {
        "title": detail.title, "d": detail, "svg": svg, "case": case}, data=detail.to_json)
