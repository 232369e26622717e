"""Storing a bundle in the database: one transaction per bundle, as one run of its commit, suite and backend.

A bundle's run either lands whole or not at all. `store_bundle` is the list of steps: find the commit's current run,
keep it when it already covers the bundle (a re-timing adds its timings), decide the new run (its status, what it
carries of the current run, whether it takes the current run's place), store the bundle's artifacts
(store/artifacts.py), then the run's row, timings and missing features.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, insert, select

from tgstore import __version__
from tgstore.bundle import Bundle
from tgstore.db.models.run_tables import Run, RunMissing, Suite, TinygradCommit
from tgstore.nogc import gc_paused
from tgstore.resources import code_hash
from tgstore.store.artifacts import BundleStore, store_case_set
from tgstore.store.carry import Carried, carry_programs
from tgstore.store.commits import commit_key, upsert_commit
from tgstore.store.compile_times import store_compile_times
from tgstore.store.content import canonical_json
from tgstore.store.rows import FAILED, case_ids, get_or_create, insert_returning_id, now_iso
from tgstore.store.runs import (
    STDERR_KEEP,
    ExtractionOutcome,
    IngestReport,
    StoredRun,
    bundle_settings,
    find_run,
    make_room,
)
from tgstore.store.timings import store_timings


def ingest_bundle(engine: Engine, bundle: Bundle, *, outcome: ExtractionOutcome | None = None,
                  force: bool = False) -> IngestReport:
    """Store `bundle` as one run. The current run of the same commit, suite and backend is kept when it is `ok` and
    holds every setting the bundle was extracted with (renderers, stages, ...: StoredRun.covers; the report says
    skipped) unless `force`. Otherwise the new run becomes current
    unless it is worse than the current one (see make_room): a failed re-extraction is then stored as an attempt."""
    with gc_paused(), engine.begin() as conn:  # hashing and row lists of a large bundle: see tgstore.nogc
        return store_bundle(conn, bundle, outcome=outcome, force=force)


def store_bundle(conn: Connection, bundle: Bundle, *, outcome: ExtractionOutcome | None = None,
                 force: bool = False) -> IngestReport:
    """`ingest_bundle` within the caller's transaction (`tgstore check` rolls it back after comparing)."""
    header = bundle.header
    sha = commit_key(bundle.tinygrad)
    existing = find_run(conn, sha, header["suite"]["hash"], header["backend"])
    if existing and existing.covers(bundle_settings(header, bundle.end)) and not force:
        return keep_current_run(conn, bundle, sha, existing)
    new = decide_run(conn, bundle, outcome, existing)
    contents = BundleStore(conn, bundle, new.carried)
    stored = contents.store_all()
    run_id = insert_run(conn, bundle, sha, new, contents, stored, outcome)
    store_bundle_timings(conn, bundle, sha, run_id)
    store_run_missing(conn, bundle, run_id)
    return IngestReport(run_id, sha, new.status, len(bundle.cases), new.failed_cases, contents.new_case_results,
                        kept_run_id=None if new.current else existing.id if existing else None,
                        error="; ".join(new.errors) or None, carried_renderers=new.carried.renderers)


def keep_current_run(conn: Connection, bundle: Bundle, sha: str, existing: StoredRun) -> IngestReport:
    """The current run holds what the bundle holds: it stays. Re-timing a stored commit adds the timings."""
    timed = bool(bundle.header.get("timing"))
    if timed:
        store_bundle_timings(conn, bundle, sha, existing.id)
    return IngestReport(existing.id, sha, existing.status, 0, 0, 0, skipped=True, timed=timed)


@dataclass
class NewRun:
    """What is decided about a bundle's run before its rows are written."""

    status: str
    failed_cases: int
    current: bool  # it took the current run's place; else it is stored as an attempt
    carried: Carried  # what it keeps of the current run (nothing, for an attempt)
    errors: list[str]


def decide_run(conn: Connection, bundle: Bundle, outcome: ExtractionOutcome | None,
               existing: StoredRun | None) -> NewRun:
    """The new run's status, and whether it becomes current (the current run then steps aside: make_room). A run
    that cannot keep every program of the current run's other renderers does not take its place."""
    failed_cases = sum(1 for case in bundle.cases if case["status"] == "error")  # unsupported is no failure
    command = bundle.command
    status = _run_status(bundle, outcome, failed_cases + bool(command and command_failed(command)))
    carried = carry_programs(conn, existing, bundle) if existing and existing.status not in FAILED else Carried()
    errors = run_errors(bundle, outcome, existing, carried.lost)
    current = make_room(conn, existing, status) if not carried.lost else False
    # an attempt holds what it rendered itself
    return NewRun(status, failed_cases, current, carried if current else Carried(), errors)


def run_errors(bundle: Bundle, outcome: ExtractionOutcome | None, existing: StoredRun | None,
               lost: int) -> list[str]:
    """What went wrong, a line each (the run's `error`, joined)."""
    errors = []
    if bundle.truncated_line:
        errors.append(f"bundle truncated at line {bundle.truncated_line}")
    if not bundle.complete:
        errors.append("the extraction did not finish (no end record)")
    if outcome is not None and outcome.status != "ok":
        errors.append(f"extraction {outcome.status} (exit code {outcome.returncode})")
    if lost and existing:
        errors.append(f"{lost} programs of run {existing.id}'s other renderers have no matching kernel in "
                      "this run; that run stays current")
    command = bundle.command
    if command and command_failed(command):
        errors.append(command_failed(command))
    return errors


def insert_run(conn: Connection, bundle: Bundle, sha: str, new: NewRun, contents: BundleStore,
               stored: list[tuple[dict[str, Any], int, int | None]], outcome: ExtractionOutcome | None) -> int:
    """The run's row, after its commit, suite, header blobs and case set; its id."""
    header, tinygrad, command = bundle.header, bundle.tinygrad, bundle.command
    commit_id = upsert_commit(conn, sha, tinygrad.get("tree_hash") or "", tinygrad.get("version"),
                              tinygrad.get("git") or {})
    suite = header["suite"]
    suite_id = get_or_create(conn, Suite, {"hash": suite["hash"]}, {"name": suite["name"]})
    store = contents.store
    features = store.blob(canonical_json(header["features"]))
    inputs = (bundle.end or {}).get("inputs")  # what it read (history/skip.py); bundles before it have none
    inputs_blob = store.blob(canonical_json(inputs)) if isinstance(inputs, dict) else None
    case_set_id = store_case_set(store, conn, stored)
    return insert_returning_id(
        conn, Run, commit_id=commit_id, suite_id=suite_id, backend=header["backend"],
        renderers=",".join([*header["renderers"], *new.carried.renderers]), is_current=new.current,
        status=new.status, started_at=header.get("started_at"), finished_at=(bundle.end or {}).get("finished_at"),
        ingested_at=now_iso(), tgstore_version=__version__, code_hash=code_hash(),
        bundle_version=header["bundle_version"],
        debug_level=header.get("debug_level"), python=header.get("python"), tinygrad_path=tinygrad.get("path"),
        features_blob_id=features, inputs_blob_id=inputs_blob, error="; ".join(new.errors) or None,
        stderr=(outcome.stderr[-STDERR_KEEP:] if outcome and outcome.stderr else None),
        pattern_set_id=contents.pattern_set_id, case_set_id=case_set_id,
        case_seconds=json.dumps([case.get("seconds") for case, _r, _m in stored], separators=(",", ":")),
        command=json.dumps({k: command.get(k) for k in ("argv", "cwd", "exit_status", "seconds", "error")})
        if command else None)


def store_bundle_timings(conn: Connection, bundle: Bundle, sha: str, run_id: int) -> None:
    """The bundle's kernel timings (tgstore.store.timings), if it was extracted with --time."""
    if not bundle.header.get("timing"):
        return
    commit_id = conn.execute(select(TinygradCommit.id).where(TinygradCommit.sha == sha)).scalar_one()
    suite = bundle.header["suite"]
    suite_id = get_or_create(conn, Suite, {"hash": suite["hash"]}, {"name": suite["name"]})
    cases = case_ids(conn, [case["name"] for case in bundle.cases])
    session_id = store_timings(conn, bundle, commit_id=commit_id, suite_id=suite_id, run_id=run_id, case_ids=cases,
                               now=now_iso())
    if session_id is not None:  # compile times belong to the timing session and its machine
        store_compile_times(conn, bundle, session_id, cases)


def store_run_missing(conn: Connection, bundle: Bundle, run_id: int) -> None:
    """The run-level missing records (what this tinygrad could not provide)."""
    if bundle.missing:
        conn.execute(insert(RunMissing), [{"run_id": run_id, "case_name": m.get("case"), "feature": m["feature"],
                                           "reason": m.get("reason")} for m in bundle.missing])


def command_failed(command: dict[str, Any]) -> str | None:
    """Capture mode: one line saying how the command failed, or None if it exited 0. What it lowered before is
    stored all the same."""
    if command.get("exit_status") == 0 and not command.get("error"):
        return None
    last = (command.get("error") or "").strip().splitlines()[-1:] or [""]
    status = command.get("exit_status")
    return f"the captured command {'did not run' if status is None else f'exited {status}'}" + \
        (f": {last[0][:300]}" if last[0] else "")


def _run_status(bundle: Bundle | None, outcome: ExtractionOutcome | None, failed_cases: int) -> str:
    if outcome is not None and outcome.status == "timeout":
        return "timeout"
    if bundle is None or not bundle.complete or (outcome is not None and outcome.status != "ok"):
        return "failed"
    if bundle.command is not None and bundle.command.get("exit_status") is None:
        return "failed"  # the captured command never ran (not found, not executable): nothing was captured
    return "partial" if failed_cases else "ok"
