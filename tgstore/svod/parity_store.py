"""Parity stored: what `parity_report` (tgstore/svod/parity.py, the one place verdicts are decided) decides for a Svod
run against a tinygrad run, kept in svod_parity (one row per stage verdict) and svod_parity_pairs (the pair, when,
by which DECIDER). The `parity_matrix` query and the parity page read these rows; they decide nothing.

Pairs are decided when they appear: `ingest-svod` decides its runs against every current tinygrad run holding the
case; a tinygrad ingest (`tgstore ingest`, a sweep's or a bisection's commits) decides its new run against every
Svod run of the cases it holds (`refresh_after_ingest`: one query when the database holds no Svod run);
`tgstore parity-refresh [CASE]` decides the rest (a re-read Svod run, a pair decided by an older DECIDER).
Stored verdicts use each Svod kernel's own renderer (`--renderer` of `tgstore parity` is a question asked on the
spot, not stored).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, bindparam, delete, insert, text

from tgstore.db.models.svod_tables import SvodParity, SvodParityPair
from tgstore.store.rows import FAILED, now_iso
from tgstore.svod.parity import KernelParity, ParityError, parity_report
from tgstore.svod.parity_svod import SvodRunSide, svod_run_side

# Bump when parity.py's rules change what it decides: `parity-refresh` decides again every pair of an older one.
DECIDER = 1


# `ingest-svod` decides at most this many pairs (the newest tinygrad commits first, ~15 ms a pair); the rest wait for
# `parity-refresh`, and ingest-svod says how many
INGEST_PAIRS = 200


@dataclass
class RefreshReport:
    decided: int = 0  # pairs decided now
    kept: int = 0  # pairs already decided by this DECIDER
    failed: list[str] | None = None  # pairs that could not be decided: "svod run S × tinygrad run T: why"
    left: int = 0  # pairs past the limit, not decided


def pairs(conn: Connection, case: str | None = None, svod_runs: list[int] | None = None,
          tinygrad_runs: list[int] | None = None) -> list[tuple[str, int, int]]:
    """(case, Svod run, tinygrad run) for every Svod run (of `case`, or those given) and every current tinygrad run
    holding its case (or those given), the newest tinygrad commits first."""
    given = {"tinygrad_runs": ("rc.run_id", tinygrad_runs), "svod_runs": ("r.id", svod_runs)}
    only = "".join(f" AND {column} IN :{name}" for name, (column, runs) in given.items() if runs is not None)
    query = text(f"""
        SELECT c.name, r.id, rc.run_id FROM svod_runs r JOIN cases c ON c.id = r.case_id
        JOIN v_run_cases rc ON rc."case" = c.name
        WHERE (:case IS NULL OR c.name = :case){only}
        ORDER BY rc.history_rank DESC, rc.run_id DESC, r.id""")
    params: dict = {"case": case}
    for name, (_column, runs) in given.items():
        if runs is not None:
            query = query.bindparams(bindparam(name, expanding=True))
            params[name] = list(runs)
    return [(name, s, t) for name, s, t in conn.execute(query, params).all()]


def decide(conn: Connection, case: str, svod_run: int, tinygrad_run: int, svod_side: SvodRunSide | None = None
           ) -> int:
    """Decide one pair with parity_report and store it (replacing what was stored); the number of verdicts."""
    report = parity_report(conn, case, svod_run=svod_run, tinygrad_run_id=tinygrad_run, svod_side=svod_side)
    forget(conn, svod_run, tinygrad_run)
    rows = []
    groups: list[tuple[str, KernelParity]] = [("kernel", k) for k in report.kernels]
    if report.schedule is not None:
        groups.append(("schedule", report.schedule))
    for scope, kp in groups:
        for verdict in kp.stages:
            rows.append({"svod_run": svod_run, "tinygrad_run": tinygrad_run, "seq": len(rows), "scope": scope,
                         "kernel_index": kp.index, "svod_name": kp.svod_name,
                         "tinygrad_position": kp.tinygrad_position, "tinygrad_name": kp.tinygrad_name,
                         "renderer": kp.renderer, "paired_by": kp.paired_by, "stage": verdict.stage,
                         "basis": verdict.basis, "verdict": verdict.verdict, "svod_nodes": verdict.svod_nodes,
                         "tinygrad_nodes": verdict.tinygrad_nodes, "tinygrad_pass": verdict.tinygrad_pass,
                         "why": verdict.why})
    if rows:
        conn.execute(insert(SvodParity), rows)
    conn.execute(insert(SvodParityPair).values(svod_run=svod_run, tinygrad_run=tinygrad_run, decided_at=now_iso(),
                                               decider=DECIDER))
    return len(rows)


def forget(conn: Connection, svod_run: int, tinygrad_run: int | None = None) -> None:
    """Drop a Svod run's stored verdicts (against one tinygrad run, or all): it is being read again."""
    for table in (SvodParity, SvodParityPair):
        where = table.svod_run == svod_run
        if tinygrad_run is not None:
            where = where & (table.tinygrad_run == tinygrad_run)
        conn.execute(delete(table).where(where))


def refresh(conn: Connection, case: str | None = None, *, svod_runs: list[int] | None = None,
            tinygrad_runs: list[int] | None = None, force: bool = False, limit: int | None = None) -> RefreshReport:
    """Decide every pair not yet decided by this DECIDER (all of them with `force`), at most `limit` of them."""
    done = {(s, t): d for s, t, d in conn.execute(text(
        "SELECT svod_run, tinygrad_run, decider FROM svod_parity_pairs"))}
    report = RefreshReport(failed=[])
    sides: dict[int, SvodRunSide] = {}  # each Svod run read once, whatever the tinygrad runs it is decided against
    for name, svod_run, tinygrad_run in pairs(conn, case, svod_runs, tinygrad_runs):
        if not force and done.get((svod_run, tinygrad_run)) == DECIDER:
            report.kept += 1
            continue
        if limit is not None and report.decided + len(report.failed) >= limit:
            report.left += 1
            continue
        try:
            if svod_run not in sides:
                sides[svod_run] = svod_run_side(conn, svod_run)
            decide(conn, name, svod_run, tinygrad_run, sides[svod_run])
        except ParityError as exc:
            report.failed.append(f"svod run {svod_run} × tinygrad run {tinygrad_run}: {exc}")
            continue
        report.decided += 1
    return report


def refresh_after_ingest(engine: Engine, reports: list, *, skip_failed: bool = False) -> RefreshReport | None:
    """After a tinygrad ingest (its store.ingest.IngestReports): decide each run it stored (not skipped, not kept
    from before; with `skip_failed`, not failed either) against every Svod run of the cases it holds, so a parity
    decided at ingest-svod time does not stay "not decided" for it. None (and one cheap query) when the database
    holds no Svod run, or no run was stored."""
    runs = [r.run_id for r in reports if not r.skipped and r.kept_run_id is None and r.run_id is not None
            and not (skip_failed and r.status in FAILED)]
    if not runs:
        return None
    with engine.begin() as conn:
        if conn.execute(text("SELECT 1 FROM svod_runs LIMIT 1")).first() is None:
            return None
        return refresh(conn, tinygrad_runs=runs)


__all__ = ["DECIDER", "INGEST_PAIRS", "RefreshReport", "decide", "forget", "pairs", "refresh", "refresh_after_ingest"]
