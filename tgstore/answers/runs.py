"""`runs`: the stored runs in history order (git's first-parent line, releases by version)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tgstore.answers.base import Answer, Reader

RUNS_SQL = ("SELECT r.run_id, r.sha, r.version, r.committed_at, r.suite, r.backend, r.status, r.is_current, r.error "
            "FROM v_runs r WHERE (:all OR r.is_current = 1) ORDER BY r.history_rank, r.run_id")


@dataclass
class RunRow:
    run_id: int
    sha: str
    version: str | None
    committed_at: str | None
    suite: str
    backend: str
    status: str
    is_current: bool
    error: str | None


@dataclass
class RunsAnswer(Answer):
    runs: list[RunRow] = field(default_factory=list)


def runs(db: Reader, all_attempts: bool = False) -> RunsAnswer:
    """The stored runs in history order: commit, version, suite, backend, status (ok, partial, failed) and error;
    all_attempts=True also lists failed attempts that did not replace an ok run (is_current false)."""
    found = db.execute(RUNS_SQL, {"all": int(all_attempts)}).fetchall()
    return RunsAnswer([RunRow(*row[:7], bool(row[7]), row[8]) for row in found])
