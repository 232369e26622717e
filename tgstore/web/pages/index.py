"""The home page (/): it leads with what an engineer asks: views, canned queries, charts, a diff form, recent
commits."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from datasette.utils.asgi import Response

from tgstore.compare.slowdowns import timed_commits
from tgstore.queries import load_queries
from tgstore.web import charts, urls
from tgstore.web.base import database, render
from tgstore.web.metadata import TABLES

# Each case at its newest stored commit: its kernels (schedule items a renderer lowers), status, and whether Svod
# output is stored for it. The home page lists them, each kernel a link to its workbench. Read from the newest run
# first (it holds every case of its suite: one case set, not every run's), then the newest run of each case it lacks.
NEWEST_RUN_SQL = """
SELECT r.id FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id WHERE r.is_current = 1
ORDER BY c.history_rank DESC, r.id DESC LIMIT 1"""
CASES_SQL = """
WITH latest AS (
  SELECT rc.case_id, rc.case_result_id, rc.status, c.sha, c.version,
         row_number() OVER (PARTITION BY rc.case_id ORDER BY c.history_rank DESC, rc.run_id DESC) AS n
  FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1 JOIN tinygrad_commits c ON c.id = r.commit_id
  WHERE (:run IS NOT NULL AND rc.run_id = :run)
     OR (:run IS NULL AND rc.case_id NOT IN (SELECT value FROM json_each(:known)))
)
SELECT k.name, l.status, l.sha, l.version, cr.kernel_count,
       (SELECT group_concat(si.position) FROM (SELECT position FROM schedule_items WHERE case_result_id = cr.id
          AND root_op = 'SINK' ORDER BY position) si) AS kernels,
       (SELECT count(*) FROM svod_runs s WHERE s.case_id = k.id) AS svod_runs, k.id
FROM latest l JOIN cases k ON k.id = l.case_id JOIN case_results cr ON cr.id = l.case_result_id
WHERE l.n = 1"""
KERNEL_LINKS = 16  # kernel links per case row; a model case has hundreds (its kernels view lists them all)


def case_rows(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    newest = conn.execute(NEWEST_RUN_SQL).fetchone()
    found = conn.execute(CASES_SQL, {"run": newest[0], "known": "[]"}).fetchall() if newest else []
    known = [r[-1] for r in found]
    if conn.execute("SELECT count(*) FROM cases").fetchone()[0] > len(known):  # cases the newest run lacks
        found += conn.execute(CASES_SQL, {"run": None, "known": json.dumps(known)}).fetchall()
    return sorted(({"case": name, "status": status, "sha": sha, "version": version, "kernel_count": count,
                    "kernels": [int(k) for k in (kernels or "").split(",") if k], "svod_runs": svod}
                   for name, status, sha, version, count, kernels, svod, _id in found), key=lambda r: r["case"])


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
        timed_cases = {r[0] for r in conn.execute("SELECT DISTINCT c.name FROM kernel_timings t "
                                                   "JOIN cases c ON c.id = t.case_id")}
        return {"commits": commits, "counts": counts, "cases": charts.cases(conn), "case_rows": case_rows(conn),
                "timed": timed_commits(conn), "timed_cases": timed_cases}

    data = await db.execute_fn(read)
    queries = [(name, q.title or name, q.description or "") for name, q in load_queries().items()]
    views = [(name, spec.get("title", name), spec.get("description", "")) for name, spec in TABLES.items()
             if name.startswith("v_")]
    tables = [(name, spec.get("title", name)) for name, spec in TABLES.items()
              if not name.startswith("v_") and not spec.get("hidden")]
    return await render(datasette, request, "tgstore_index.html", {
        "views": views, "queries": queries, "tables": tables, "metrics": charts.METRICS,
        "kernel_links": KERNEL_LINKS, **data},
        data={"counts": data["counts"], "cases": data["case_rows"],
              "commits": [dict(zip(("sha", "version", "committed_at", "subject"), c, strict=True))
                          for c in data["commits"]],
              "timed_commits": [{"sha": s, "version": v} for s, v in data["timed"]],
              "views": [n for n, _t, _d in views], "queries": [n for n, _t, _d in queries],
              "pages": {"diff": urls.DIFF, "slowdowns": urls.SLOWDOWNS, "regressions": urls.REGRESSIONS,
                        "parity": urls.PARITY, "chart": urls.CHART}})
