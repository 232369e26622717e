"""The home page (/): it leads with what an engineer asks: views, canned queries, charts, a diff form, recent
commits."""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette.utils.asgi import Response

from tgstore.queries import load_queries
from tgstore.web import charts
from tgstore.web.base import database, render
from tgstore.web.metadata import TABLES


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
    queries = [(name, q.title or name, q.description or "") for name, q in load_queries().items()]
    views = [(name, spec.get("title", name), spec.get("description", "")) for name, spec in TABLES.items()
             if name.startswith("v_")]
    tables = [(name, spec.get("title", name)) for name, spec in TABLES.items()
              if not name.startswith("v_") and not spec.get("hidden")]
    return await render(datasette, request, "tgstore_index.html", {
        "views": views, "queries": queries, "tables": tables, "metrics": charts.METRICS, **data})
