"""The series `tgstore regressions` walks: every kernel's (and each case's kernels added up) stored timings or compile
times, in history order, on one machine. DB-API sqlite3 (Datasette's or the CLI's read-only connection)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


class RegressionError(Exception):
    """Nothing to analyse as asked (no timings, unknown commit or machine); a one-line message."""


@dataclass
class Point:
    sha: str
    subject: str | None
    git_position: int | None
    value: float  # ns (time) or µs (compile)
    samples: list[float] | None
    run_id: int | None
    kernel_hash: str | None
    program: str | None
    calibration_ns: int | None
    kernel_name: str | None = None
    reference_ns: int | None = None  # the session's reference kernel (None: not timed, or compile times)


TIME_POINTS = """
    SELECT t.suite, t.backend, t."case", t.position, NULL AS renderer, t.sha, t.subject, c.git_position,
           t.ns_min AS value, kt.samples, t.run_id, t.kernel_hash, coalesce(t.kernel_name, t.program), t.program,
           t.calibration_ns, {reference} AS reference_ns
    FROM v_kernel_times t JOIN kernel_timings kt ON kt.id = t.timing_id JOIN tinygrad_commits c ON c.sha = t.sha
      JOIN timing_sessions ts ON ts.id = t.session_id
    WHERE t.machine = :machine AND t.status = 'ok' AND t.ns_min > 0 AND (:case = '' OR t."case" = :case)
      AND t.history_rank >= :since
    ORDER BY t.suite, t.backend, t."case", t.position, t.history_rank, t.session_id"""
COMPILE_POINTS = """
    SELECT t.suite, t.backend, t."case", t.position, t.renderer, t.sha, t.subject, c.git_position,
           t.total_us AS value, NULL AS samples, t.run_id, t.kernel_hash, t.kernel_name, NULL, t.calibration_ns,
           NULL AS reference_ns
    FROM v_compile_times t JOIN tinygrad_commits c ON c.sha = t.sha
    WHERE t.machine = :machine AND t.total_us > 0 AND (:case = '' OR t."case" = :case)
      AND t.history_rank >= :since
    ORDER BY t.suite, t.backend, t."case", t.renderer, t.position, t.history_rank, t.session_id"""


def choose_machine(conn: sqlite3.Connection, metric: str, machine: str | None,
                   preferred: str | Callable[[], str] | None) -> str:
    """The machine whose series to walk: `machine` (a fingerprint or its prefix), else `preferred` (this machine; a
    function is called only when several machines timed: fingerprinting this one runs the compiler, ~1.6 s) when
    it has timings, else the machine with the most."""
    view = "v_kernel_times" if metric == "time" else "v_compile_times"
    found = [r[0] for r in conn.execute(f"SELECT machine FROM {view} GROUP BY machine ORDER BY count(*) DESC")]
    if not found:
        raise RegressionError(f"no {'kernel timings' if metric == 'time' else 'compile times'} stored: ingest with "
                              "--time first")
    if machine is not None:
        chosen = [m for m in found if m.startswith(machine)]
        if len(chosen) != 1:
            raise RegressionError(f"machine {machine!r} {'matches several' if chosen else 'has no timings'}; "
                                  f"timed machines: {', '.join(found)}")
        return chosen[0]
    if len(found) > 1 and callable(preferred):
        preferred = preferred()
    return preferred if preferred in found else found[0]


def since_rank(conn: sqlite3.Connection, since: str | None) -> int:
    if not since:
        return 0
    row = conn.execute("SELECT history_rank FROM v_commits WHERE sha = ? OR sha LIKE ? || '%' OR version = ? "
                       "ORDER BY sha = ? DESC, history_rank DESC LIMIT 1", (since, since, since, since)).fetchone()
    if row is None:
        raise RegressionError(f"no stored commit {since!r}")
    return row[0]


def read_series(conn: sqlite3.Connection, metric: str, machine: str, case: str | None, since: int
                ) -> dict[tuple, list[Point]]:
    """Per (suite, backend, case, position, renderer): its points in history order; and each case's kernels added
    up (position None) at the commits where every one of its kernels was timed."""
    has_reference = any(r[1] == "reference_ns" for r in conn.execute("PRAGMA table_info(timing_sessions)"))
    sql = TIME_POINTS.replace("{reference}", "ts.reference_ns" if has_reference else "NULL") \
        if metric == "time" else COMPILE_POINTS
    series: dict[tuple, list[Point]] = {}
    for (suite, backend, case_name, position, renderer, sha, subject, git_position, value, samples, run_id,
         kernel_hash, name, program, calibration, reference) in conn.execute(
            sql, {"machine": machine, "case": case or "", "since": since}):
        points = series.setdefault((suite, backend, case_name, position, renderer), [])
        points.append(Point(sha, subject, git_position, float(value), json.loads(samples) if samples else None,
                            run_id, kernel_hash, program or name, calibration, name, reference))
    totals: dict[tuple, dict[str, Point]] = {}
    order: dict[tuple, list[str]] = {}
    for (suite, backend, case_name, _position, renderer), points in series.items():
        key = (suite, backend, case_name, None, renderer)
        for p in points:
            if p.sha not in totals.setdefault(key, {}):
                totals[key][p.sha] = Point(p.sha, p.subject, p.git_position, 0.0, None, p.run_id, None, None,
                                           p.calibration_ns, None, p.reference_ns)
                order.setdefault(key, []).append(p.sha)
            totals[key][p.sha].value += p.value
    for key, by_sha in totals.items():
        positions = [k for k in series if k[:3] == key[:3] and k[4] == key[4]]
        if len(positions) < 2:
            continue  # one kernel: its own series says it all
        first: dict[str, int] = {}  # each commit's earliest place in any of the case's kernel series
        for k in positions:
            for i, p in enumerate(series[k]):
                if first.get(p.sha, i) >= i:
                    first[p.sha] = i
        ranked = sorted(order[key], key=first.__getitem__)
        series[key] = [by_sha[sha] for sha in ranked]
    return series
