"""Commits, suites, cases and runs: what was extracted from which tinygrad, and the case sets a run's
cases point at."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column

from tgstore.db.models.base import Base


class TinygradCommit(Base):
    """One tinygrad: a git commit, or an installed package identified by its source tree hash."""

    __tablename__ = "tinygrad_commits"
    id: Mapped[int] = mapped_column(primary_key=True)
    sha: Mapped[str] = mapped_column(String(80), unique=True)  # git sha, or "tree:<tree_hash>" without git
    tree_hash: Mapped[str] = mapped_column(String(64), index=True)
    version: Mapped[str | None] = mapped_column(String(40))
    committed_at: Mapped[str | None] = mapped_column(String(40))  # committer date as git gave it (with offset)
    subject: Mapped[str | None] = mapped_column(Text)
    committed_utc: Mapped[str | None] = mapped_column(String(40))  # the same in UTC, YYYY-MM-DDTHH:MM:SSZ
    git_position: Mapped[int | None] = mapped_column(Integer, index=True)  # position on the first-parent line
    version_key: Mapped[str | None] = mapped_column(String(80))  # `version` in a form that sorts (store/commits.py)
    history_rank: Mapped[int | None] = mapped_column(Integer, index=True)  # history order (history.RANK_COMMITS)


class Suite(Base):
    __tablename__ = "suites"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    hash: Mapped[str] = mapped_column(String(64), unique=True)


class Case(Base):
    __tablename__ = "cases"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)


class Run(Base):
    """One extraction of one tinygrad commit over one suite on one backend. The current run answers for its
    (commit, suite, backend); the others are failed attempts, kept for `failed_runs`. Ids are never reused."""

    __tablename__ = "runs"
    __table_args__ = (Index("uq_runs_current", "commit_id", "suite_id", "backend", unique=True,
                            sqlite_where=text("is_current = 1")),
                      # history queries go case -> case sets -> current runs -> commits: covered, no row lookups
                      Index("ix_runs_case_set_current", "case_set_id", "is_current", "commit_id", "suite_id",
                            "backend"),
                      {"sqlite_autoincrement": True})
    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("tinygrad_commits.id"), index=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id"), index=True)
    backend: Mapped[str] = mapped_column(String(40))
    renderers: Mapped[str | None] = mapped_column(Text)  # comma-joined, as asked for
    status: Mapped[str] = mapped_column(String(20))  # ok | partial | failed | timeout
    started_at: Mapped[str | None] = mapped_column(String(40))
    finished_at: Mapped[str | None] = mapped_column(String(40))
    ingested_at: Mapped[str] = mapped_column(String(40))
    tgstore_version: Mapped[str] = mapped_column(String(40))
    code_hash: Mapped[str | None] = mapped_column(String(64))  # resources.code_hash() of the code that stored it
    bundle_version: Mapped[int | None] = mapped_column(Integer)
    debug_level: Mapped[int | None] = mapped_column(Integer)
    python: Mapped[str | None] = mapped_column(String(40))
    tinygrad_path: Mapped[str | None] = mapped_column(Text)
    features_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))  # the header's features (JSON)
    error: Mapped[str | None] = mapped_column(Text)
    stderr: Mapped[str | None] = mapped_column(Text)
    pattern_set_id: Mapped[int | None] = mapped_column(ForeignKey("pattern_sets.id"))
    is_current: Mapped[bool] = mapped_column(Boolean, server_default=true())
    case_set_id: Mapped[int | None] = mapped_column(ForeignKey("case_sets.id"), index=True)
    case_seconds: Mapped[str | None] = mapped_column(Text)  # JSON list: each case's seconds, in case set order
    command: Mapped[str | None] = mapped_column(Text)  # capture mode: JSON {argv, cwd, exit_status, seconds}
    # what the extraction read of its tinygrad (JSON: files, dirs, versions, settings; history/skip.py)
    inputs_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    copied_from: Mapped[str | None] = mapped_column(String(80))  # a copy of this commit's run, not an extraction
    copy_reason: Mapped[str | None] = mapped_column(Text)  # why that is the same output
    missing_paths: Mapped[str | None] = mapped_column(Text)  # JSON list: package files the clone could not read


class RunMissing(Base):
    """What a run's tinygrad could not provide (an API absent in that era, a renderer that would not build)."""

    __tablename__ = "run_missing"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    case_name: Mapped[str | None] = mapped_column(String(200))
    feature: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(Text)


class CaseSet(Base):
    """What a run's cases produced, content-addressed (by the members' ids, in run order): the runs of commits that
    changed nothing share one. `run_cases` is a view of runs joined with their set's members."""

    __tablename__ = "case_sets"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    case_count: Mapped[int] = mapped_column(Integer)


class CaseSetMember(Base):
    """One case of a case set: its shared result, match counts, status, DEBUG text and traceback."""

    __tablename__ = "case_set_members"
    case_set_id: Mapped[int] = mapped_column(ForeignKey("case_sets.id", ondelete="CASCADE"), primary_key=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer)  # the case's place in the run (and in runs.case_seconds)
    case_result_id: Mapped[int] = mapped_column(ForeignKey("case_results.id"), index=True)
    match_set_id: Mapped[int | None] = mapped_column(ForeignKey("match_sets.id"), index=True)
    status: Mapped[str] = mapped_column(String(20))  # ok | error | unsupported
    debug_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    error_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))


Index("ix_runs_status", Run.status)
