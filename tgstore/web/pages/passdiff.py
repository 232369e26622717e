"""The pass-by-pass diff (/-/passdiff?case=&kernel=&a=&b=&renderer=), as Compiler Explorer's opt-pipeline view: one
kernel's passes at two commits aligned by name and occurrence (tgstore.compare.pass_align), node counts side by side,
the first pass whose output differs marked, each row opening the graph diff of that pass (b's graph, a's drawn
over it). Without a or b: b is the newest commit holding the case, a the one before it."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.compare.pass_align import align, first_difference
from tgstore.web.base import database, int_arg, not_found, reader_engine, render
from tgstore.web.charts import passes_overlaid
from tgstore.web.workbench import Where, WorkbenchError, case_commits, load


def read(path: str, case: str, kernel: int | None, a: str | None, b: str | None, renderer: str | None
         ) -> dict[str, Any]:
    with reader_engine(path).connect() as conn:
        raw = conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        commits = case_commits(raw, case)
        if not commits:
            raise WorkbenchError(f"no run holds case {case!r}")
        if not b:
            b = commits[-1][1] or commits[-1][0]
        side_b = load(raw, Where(case, kernel, b, renderer), details=False)
        if not a:
            if side_b.older is None:
                raise WorkbenchError(f"{case!r} is stored at one commit only: nothing to compare with")
            a = side_b.older.label
        side_a = load(raw, Where(case, side_b.where.kernel, a, side_b.renderer), details=False)
    aligned = align(side_a.passes, side_b.passes)
    return {"side_a": side_a, "side_b": side_b, "aligned": aligned, "first": first_difference(aligned),
            "renderers": [r for r in side_b.renderers if r in side_a.renderers]}


async def passdiff(datasette: Any, request: Any) -> Response:
    case = (request.args.get("case") or "").strip()
    if not case:
        return await not_found(datasette, request, "the pass-by-pass diff needs a case (and kernel, a, b): follow a "
                               "link from a kernel's workbench or a diff")
    kernel = int_arg(request, "kernel")  # None: the case's first lowered kernel
    a, b = (request.args.get("a") or "").strip() or None, (request.args.get("b") or "").strip() or None
    renderer = (request.args.get("renderer") or "").strip() or None
    try:
        found = await asyncio.to_thread(read, database(datasette).path, case, kernel, a, b, renderer)
    except WorkbenchError as exc:
        return await not_found(datasette, request, str(exc))
    side_a, side_b = found["side_a"], found["side_b"]
    kernel = side_b.where.kernel

    def here(**change: Any) -> str:
        params = {"case": case, "kernel": kernel, "a": side_a.commit_label, "b": side_b.commit_label,
                  "renderer": side_b.renderer, **change}
        return datasette.urls.path("/-/passdiff?" + urlencode({k: v for k, v in params.items() if v is not None}))

    label_a, label_b = side_a.commit_label, side_b.commit_label
    aligned = found["aligned"]
    chart = passes_overlaid(f"Nodes after each pass: {case}[{kernel}] {side_b.renderer}",
                            [p.name for p in aligned], {
                                label_a: [p.a.node_count if p.a else None for p in aligned],
                                label_b: [p.b.node_count if p.b else None for p in aligned]}) if aligned else None
    return await render(datasette, request, "tgstore_passdiff.html", {
        **found, "chart": Markup(chart) if chart else None, "case": case, "kernel": kernel, "label_a": label_a,
        "label_b": label_b, "here": here,
        "bench_a": lambda p: datasette.urls.path(side_a.where.url(commit=label_a, renderer=side_a.renderer,
                                                                  pass_position=p.position)),
        "bench_b": lambda p: datasette.urls.path(side_b.where.url(commit=label_b, renderer=side_b.renderer,
                                                                  pass_position=p.position)),
        "title": f"{case} · kernel {kernel} {side_b.kernel_name or ''} · {side_b.renderer} · passes {label_a} → "
                 f"{label_b}"})
