"""tgstore's own pages in Datasette: the index, the graph view, the diff view and charts. Each reads the database
read-only in a worker thread (Datasette's connection for SQL, a read-only SQLAlchemy engine for the diff)."""

from __future__ import annotations

import asyncio
import sqlite3
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.web import charts, diffpage, diffsummary, graphpage, regressionspage, steps
from tgstore.web.highlight import stylesheet
from tgstore.web.sidebyside import bounded_table

STATIC = Path(__file__).resolve().parent / "static"
BLOB_LINES, BLOB_CHARS = 500, 60_000  # a page of a stored text (a model's DEBUG output runs to megabytes)


def database(datasette: Any) -> Any:
    return datasette.get_database()


async def render(datasette: Any, request: Any, template: str, context: dict[str, Any], status: int = 200) -> Response:
    db = database(datasette)
    html = await datasette.render_template(template, {"database": db.name, "db_url": datasette.urls.database(db.name),
                                                      **context}, request=request)
    return Response.html(html, status=status)


async def not_found(datasette: Any, request: Any, message: str) -> Response:
    return await render(datasette, request, "tgstore_message.html", {"title": "Not found", "message": message}, 404)


# ---------------------------------------------------------------- index


async def index(datasette: Any, request: Any) -> Response:
    """The index leads with what an engineer asks: views, canned queries, charts, a diff form, recent commits."""
    db = database(datasette)

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        commits = conn.execute("SELECT sha, version, committed_at, subject FROM v_commits ORDER BY history_rank DESC "
                               "LIMIT 12").fetchall()
        counts = dict(conn.execute("SELECT 'commits', count(*) FROM tinygrad_commits UNION ALL "
                                   "SELECT 'runs', count(*) FROM runs WHERE is_current UNION ALL "
                                   "SELECT 'kernels', count(*) FROM kernels UNION ALL "
                                   "SELECT 'cases', count(*) FROM cases").fetchall())
        return {"commits": commits, "counts": counts, "cases": charts.cases(conn)}

    data = await db.execute_fn(read)
    from tgstore.queries import load_queries
    from tgstore.web.metadata import TABLES

    queries = [(name, q.title or name, q.description or "") for name, q in load_queries().items()]
    views = [(name, spec.get("title", name), spec.get("description", "")) for name, spec in TABLES.items()
             if name.startswith("v_")]
    tables = [(name, spec.get("title", name)) for name, spec in TABLES.items()
              if not name.startswith("v_") and not spec.get("hidden")]
    return await render(datasette, request, "tgstore_index.html", {
        "views": views, "queries": queries, "tables": tables, "metrics": charts.METRICS, **data})


# ---------------------------------------------------------------- diff view


@lru_cache(maxsize=4)
def reader_engine(path: str) -> Any:
    from tgstore.db.engine import open_engine

    return open_engine(Path(path), writer=False)


def compute_diff(path: str, a: str, b: str, case: str | None, renderer: str | None) -> Any:
    from tgstore.diff import diff_commits

    with reader_engine(path).connect() as conn:
        return diff_commits(conn, a, b, case=case, renderer=renderer, stages=True)


def compute_summary(path: str, a: str, b: str) -> diffsummary.Summary:
    with reader_engine(path).connect() as conn:
        return diffsummary.summarize(conn, a, b)


async def diff(datasette: Any, request: Any) -> Response:
    from tgstore.diff import DiffError, summary_line
    from tgstore.history import CommitNotFound

    a, b = (request.args.get("a") or "").strip(), (request.args.get("b") or "").strip()
    case = request.args.get("case") or None
    renderer = request.args.get("renderer") or None
    db = database(datasette)
    context: dict[str, Any] = {"a": a, "b": b, "case": case or "", "renderer": renderer or "", "result": None}
    if not a or not b:
        return await render(datasette, request, "tgstore_diff.html", context)
    if not case:  # every case: a summary table, each row linking to its case's diff
        try:
            found = await asyncio.to_thread(compute_summary, db.path, a, b)
        except (DiffError, CommitNotFound) as exc:
            return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400)
        return await render(datasette, request, "tgstore_diff.html", {**context, **diffsummary.context(found)})
    wanted = request.args.get("section") or ""
    # a section's own page reads only its renderer's sources and passes
    section_renderer = wanted.split("-", 1)[1] if "-" in wanted else None
    try:
        result = await asyncio.to_thread(compute_diff, db.path, a, b, case, renderer or section_renderer)
    except (DiffError, CommitNotFound) as exc:
        return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400)
    base = {k: v for k, v in (("a", a), ("b", b), ("case", case), ("renderer", renderer or "")) if v}
    found = diffpage.sections(result)
    if wanted:
        start = int(request.args.get("start") or 0) if (request.args.get("start") or "0").isdigit() else 0
        if request.args.get("fragment"):
            section = next((s for s in found if s.id == wanted), None)
            if section is None:
                return Response.html("<p>no such section</p>", status=404)
            section.table = bounded_table(section.lines, section.language)
            return Response.html(diffpage.fragment(base, section))
        section = diffpage.one_section(found, wanted, start)
        if section is None:
            return await not_found(datasette, request, f"the diff of {case} has no section {wanted!r}; sections: "
                                   f"{', '.join(s.id for s in found) or 'none'}")
        return await render(datasette, request, "tgstore_diff.html", {
            **context, "section": section, "pager": diffpage.pager(base, section),
            "case_url": "/-/diff?" + urlencode(base), "label_a": diffsummary.label(result.a),
            "label_b": diffsummary.label(result.b)})
    diffpage.draw(found)
    one_sided, other_notes = diffsummary.one_sided_notes(result.notes, result.a, result.b)
    return await render(datasette, request, "tgstore_diff.html", {
        **context, "result": result, "summary": summary_line(result), "one_sided": one_sided, "notes": other_notes,
        "label_a": diffsummary.label(result.a), "label_b": diffsummary.label(result.b),
        "kernels": diffpage.kernels(found), "section_url": lambda s, **kw: diffpage.section_url(base, s, **kw)})


# ---------------------------------------------------------------- charts


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
    svg = charts.render(data, lambda run_id: f"{run_cases}?{urlencode({'run_id': run_id, 'case': case})}")
    return await render(datasette, request, "tgstore_chart.html", {
        **context, "svg": Markup(svg), "chart": data, "only": only,
        "all_url": "/-/chart?" + urlencode({"metric": metric, "case": case, "renderer": renderer})})


# ---------------------------------------------------------------- blob


async def blob(datasette: Any, request: Any) -> Response:
    """A stored text (source, pyrender, AST, DEBUG output) whole, highlighted: where a table's cell links."""
    from tgstore.web.cells import code_block

    digest = request.url_vars["hash"]
    db = database(datasette)
    found = await db.execute_fn(lambda conn: conn.execute("SELECT text FROM blobs WHERE hash = ?", (digest,))
                                .fetchone())
    if found is None:
        return await not_found(datasette, request, f"no stored text has the hash {digest}")
    language = request.args.get("language") or None
    lines = found[0].splitlines(keepends=True)
    start = int(request.args["start"]) if (request.args.get("start") or "").isdigit() else 0
    start = min(start, max(0, len(lines) - 1))
    end, size = start, 0
    while end < len(lines) and end - start < BLOB_LINES and size < BLOB_CHARS:  # a page of a long text
        size += len(lines[end])
        end += 1
    message = ""
    if start > 0 or end < len(lines):
        here = datasette.urls.path(f"/-/blob/{digest}")
        extra = f"&language={quote(language)}" if language else ""
        parts = [f"lines {start + 1}–{end} of {len(lines)}"]
        if start > 0:
            parts.insert(0, f'<a class="tgstore-prev" href="{here}?start={max(0, start - BLOB_LINES)}{extra}">← '
                            "previous</a>")
        if end < len(lines):
            parts.append(f'<a class="tgstore-next" href="{here}?start={end}{extra}">next →</a>')
        message = Markup(" · ".join(parts))
    return await render(datasette, request, "tgstore_message.html", {
        "title": f"text {digest[:12]}", "message": message, "body": code_block("".join(lines[start:end]), language)})


# ---------------------------------------------------------------- static


async def static(datasette: Any, request: Any) -> Response:
    name = request.url_vars["name"]
    if name == "pygments.css":
        return Response(stylesheet(), content_type="text/css; charset=utf-8",
                        headers={"Cache-Control": "max-age=3600"})
    path = STATIC / name
    if "/" in name or not path.is_file():
        return Response.text("not found", status=404)
    kind = {"css": "text/css", "js": "text/javascript"}.get(path.suffix.lstrip("."), "application/octet-stream")
    return Response(path.read_text(), content_type=f"{kind}; charset=utf-8", headers={"Cache-Control": "max-age=3600"})


ROUTES = [
    (r"^/$", index),
    (r"^/-/graph/(?P<hash>[0-9a-f]{64})(\.(?P<format>svg))?$", graphpage.graph),
    (r"^/-/rewrites$", steps.rewrites),
    (r"^/-/blob/(?P<hash>[0-9a-f]{64})$", blob),
    (r"^/-/diff$", diff),
    (r"^/-/chart$", chart),
    (r"^/-/regressions$", regressionspage.regressions),
    (r"^/-/tgstore/(?P<name>[A-Za-z0-9_.-]+)$", static),
]
