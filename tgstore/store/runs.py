"""A commit's runs: the current one of a commit, suite and backend (find_run) and whether it holds what is asked
(StoredRun.lacking, over the table of settings in extract/child/settings.py), how a new run takes its place
(make_room), and the runs stored without a bundle: a failed extraction (record_failed_run) and a copy of another
commit's run (copy_run). What storing a run reports (IngestReport), and how its extraction ended (ExtractionOutcome).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from tgstore import __version__
from tgstore.db.models.artifact_tables import Blob
from tgstore.db.models.run_tables import Run, RunMissing, Suite, TinygradCommit
from tgstore.extract.child import settings as run_settings
from tgstore.resources import code_hash
from tgstore.store.commits import upsert_commit
from tgstore.store.rows import FAILED, STATUS_RANK, get_or_create, insert_returning_id, now_iso

STDERR_KEEP = 64 * 1024


@dataclass
class IngestReport:
    run_id: int | None
    commit: str
    status: str
    cases: int
    failed_cases: int
    new_case_results: int
    skipped: bool = False
    kept_run_id: int | None = None  # the better run that stayed current; this one was stored as an attempt
    error: str | None = None
    timed: bool = False  # skipped, but its kernel timings were stored (a re-timing)
    carried_renderers: list[str] = field(default_factory=list)  # kept from the run this one replaced


@dataclass
class ExtractionOutcome:
    """How the child process ended, as far as ingestion cares (see tgstore.extract.runner.ExtractionResult)."""

    status: str  # ok | failed | timeout
    returncode: int | None = None
    stderr: str = ""


@dataclass
class StoredRun:
    id: int
    status: str
    renderers: str | None  # comma-joined: the run's own and those it carried from the run it replaced
    settings_json: str | None = None  # the settings its extraction recorded (inputs.settings), None before them
    debug_level: int | None = None
    suite: str | None = None  # the suite's hash
    backend: str | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """What the run holds, by the table of settings: its recorded settings, with every renderer it has sources
        of (carried ones too); a run from before settings were recorded has its suite, backend, renderers and
        DEBUG level only."""
        held = json.loads(self.settings_json) if self.settings_json else {"debug": self.debug_level}
        return {**held, "suite": self.suite, "backend": self.backend,
                "renderers": [r for r in (self.renderers or "").split(",") if r]}

    def lacking(self, asked: dict[str, Any]) -> list[str]:
        """What of the `asked` settings the run does not hold, a phrase each (its status too: only ok counts)."""
        gaps = [] if self.status == "ok" else [f"its run is {self.status}"]
        return gaps + run_settings.lacking(self.settings, asked)

    def covers(self, asked: dict[str, Any]) -> bool:
        """An ok run that holds everything `asked`: what makes a new extraction of its commit unneeded."""
        return not self.lacking(asked)


# the columns a StoredRun is read from (the settings out of the run's inputs blob, parsed by SQLite)
STORED_RUN = (Run.id, Run.status, Run.renderers, func.json_extract(Blob.text, "$.settings"), Run.debug_level,
              Suite.hash, Run.backend)


def stored_runs(conn: Connection, suite_hash: str, backend: str, shas: list[str] | None = None
                ) -> dict[str, StoredRun]:
    """The current runs of a suite and backend (of `shas`, or of every commit), by sha."""
    query = (select(TinygradCommit.sha, *STORED_RUN).join(Run, Run.commit_id == TinygradCommit.id)
             .join(Suite, Suite.id == Run.suite_id).outerjoin(Blob, Blob.id == Run.inputs_blob_id)
             .where(Suite.hash == suite_hash, Run.backend == backend, Run.is_current.is_(True)))
    if shas is None:
        return {sha: StoredRun(*run) for sha, *run in conn.execute(query)}
    found = {}
    for start in range(0, len(shas), 500):
        chunk = shas[start:start + 500]
        found |= {sha: StoredRun(*run) for sha, *run in conn.execute(query.where(TinygradCommit.sha.in_(chunk)))}
    return found


def find_run(conn: Connection, sha: str, suite_hash: str, backend: str) -> StoredRun | None:
    """The current run of a commit, suite and backend."""
    return stored_runs(conn, suite_hash, backend, [sha]).get(sha)


def bundle_settings(header: dict[str, Any], end: dict[str, Any] | None) -> dict[str, Any]:
    """The settings a bundle's run was extracted with: as its end record lists them, else (bundles from before
    settings were recorded) what its header says."""
    recorded = ((end or {}).get("inputs") or {}).get("settings")
    if isinstance(recorded, dict):
        return recorded
    found = {"suite": header["suite"]["hash"], "backend": header["backend"], "renderers": header["renderers"],
             "stages": header.get("stages"), "rewrites": header.get("rewrites_limit"),
             "debug": header.get("debug_level")}
    return {name: value for name, value in found.items() if value is not None}


def make_room(conn: Connection, existing: StoredRun | None, status: str) -> bool:
    """Whether a new run with `status` becomes the current one; if so, the current run steps aside: a failed one is
    kept as an attempt, an ok or partial one (superseded by a run at least as good) is deleted. Run ids are never
    reused (AUTOINCREMENT), so a link to a deleted run cannot point at another."""
    if existing is None:
        return True
    if STATUS_RANK.get(status, 0) < STATUS_RANK.get(existing.status, 0):
        return False
    if existing.status in FAILED:
        conn.execute(update(Run).where(Run.id == existing.id).values(is_current=False))
    else:
        conn.execute(delete(Run).where(Run.id == existing.id))
    return True


def record_failed_run(engine: Engine, *, sha: str, tree_hash: str, version: str | None, git: dict[str, Any],
                      suite_name: str, suite_hash: str, backend: str, renderers: list[str],
                      outcome: ExtractionOutcome, error: str) -> IngestReport:
    """A run whose extraction produced no usable bundle (a checkout git refused, a crash at import, a timeout
    before the header). It becomes current unless an ok or partial run is."""
    status = "timeout" if outcome.status == "timeout" else "failed"
    with engine.begin() as conn:
        existing = find_run(conn, sha, suite_hash, backend)
        current = make_room(conn, existing, status)
        commit_id = upsert_commit(conn, sha, tree_hash, version, git)
        suite_id = get_or_create(conn, Suite, {"hash": suite_hash}, {"name": suite_name})
        run_id = insert_returning_id(
            conn, Run, commit_id=commit_id, suite_id=suite_id, backend=backend, renderers=",".join(renderers),
            status=status, is_current=current, ingested_at=now_iso(), tgstore_version=__version__,
            code_hash=code_hash(), error=error,
            stderr=outcome.stderr[-STDERR_KEEP:] if outcome.stderr else None)
        return IngestReport(run_id, sha, status, 0, 0, 0, kept_run_id=None if current else existing.id
                            if existing else None, error=error)


# the run columns copy_run takes from its source run (the rest say when and from where the copy was made)
COPIED = ("suite_id", "backend", "renderers", "status", "started_at", "finished_at", "tgstore_version", "code_hash",
          "bundle_version", "debug_level", "python", "features_blob_id", "error", "stderr", "pattern_set_id",
          "case_set_id", "case_seconds", "command", "inputs_blob_id")


def copy_run(engine: Engine, source_sha: str, git: dict[str, Any], suite_hash: str, backend: str,
             asked: dict[str, Any], *, reason: str | None = None, tree_hash: str | None = None) -> IngestReport | None:
    """Store the commit `git` names ({sha, date, subject, position}) with a copy of `source_sha`'s current run,
    which must be ok and hold the `asked` settings; None when it is not, or when the commit's own current run has
    sources of a renderer the source lacks (a copy would lose them: it is extracted instead, keeping them). For a
    commit whose tinygrad package is byte-identical to the source's (git.package_keys), or that changes no file the
    source's run read (history/skip.py), on a machine that identifies as the source's did: its extraction would read
    what the source's read, so its output is the source's, but for timings. The run says so (`copied_from`,
    `copy_reason`). The new commit row takes the source's version (its version files are the source's) and package
    hash unless `tree_hash` is its own."""
    reason = reason or f"its package is {source_sha}'s"
    with engine.begin() as conn:
        source = find_run(conn, source_sha, suite_hash, backend)
        if source is None or not source.covers(asked):
            return None
        target = find_run(conn, git["sha"], suite_hash, backend)
        if target is not None and target.status == "ok" and not (
                set(target.settings["renderers"]) <= set(source.settings["renderers"])):
            return None
        row = conn.execute(select(*(getattr(Run, c) for c in COPIED), TinygradCommit.tree_hash,
                                  TinygradCommit.version).join(TinygradCommit, TinygradCommit.id == Run.commit_id)
                           .where(Run.id == source.id)).one()
        values = dict(zip(COPIED, row[:len(COPIED)], strict=True))
        source_tree_hash, version = row[len(COPIED):]
        current = make_room(conn, target, values["status"])
        commit_id = upsert_commit(conn, git["sha"], tree_hash or source_tree_hash, version, git)
        run_id = conn.execute(insert(Run).values(
            commit_id=commit_id, is_current=current, ingested_at=now_iso(), tinygrad_path=f"not extracted: {reason}",
            copied_from=source_sha, copy_reason=reason, **values)).inserted_primary_key[0]
        missing = conn.execute(select(RunMissing.case_name, RunMissing.feature, RunMissing.reason)
                               .where(RunMissing.run_id == source.id)).all()
        if missing:
            conn.execute(insert(RunMissing), [{"run_id": run_id, "case_name": m.case_name, "feature": m.feature,
                                               "reason": m.reason} for m in missing])
        return IngestReport(run_id, git["sha"], values["status"], 0, 0, 0)
