"""Kernel timings (`--time`): measured on one machine, never compared with another's; and compile times."""

from __future__ import annotations

from sqlalchemy import (
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from tgstore.db.models.base import Base


class Machine(Base):
    """Where kernels were timed: CPU, cores, compiler and its version, device and thread settings. `fingerprint`
    (sha256 of those, from the extraction child) is what makes two timings comparable."""

    __tablename__ = "machines"
    id: Mapped[int] = mapped_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    hostname: Mapped[str | None] = mapped_column(String(200))
    cpu_model: Mapped[str | None] = mapped_column(String(200))
    cores: Mapped[int | None] = mapped_column(Integer)
    device: Mapped[str | None] = mapped_column(String(40))
    compiler: Mapped[str | None] = mapped_column(String(200))
    compiler_version: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[str] = mapped_column(Text)  # the whole machine record (JSON), settings included


class TimingSession(Base):
    """One timed extraction of a commit's suite on one machine. A commit may be timed many times (re-timing keeps
    the run it timed); the latest session per commit and machine answers queries."""

    __tablename__ = "timing_sessions"
    # the views' latest-session-per-commit subquery seeks here (migration 0025)
    __table_args__ = (Index("ix_timing_sessions_commit_machine", "commit_id", "machine_id", "backend", "id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("tinygrad_commits.id"), index=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id"))
    backend: Mapped[str] = mapped_column(String(40))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    timer: Mapped[str | None] = mapped_column(String(40))  # tinygrad's timer in that era; None: it could not time
    runs: Mapped[int | None] = mapped_column(Integer)  # --time-runs (None: adaptive)
    warmup: Mapped[int | None] = mapped_column(Integer)
    calibration_ns: Mapped[int | None] = mapped_column(Integer)
    calibration_end_ns: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[str | None] = mapped_column(String(40))
    ingested_at: Mapped[str] = mapped_column(String(40))
    reference_ns: Mapped[int | None] = mapped_column(Integer)  # the reference kernel's best time (extract/child)


class KernelTiming(Base):
    """One kernel (schedule item) of one case, timed in a session: ns over the timed runs and tinygrad's own ops and
    memory estimates, or the status and error of a kernel that failed, crashed or hung."""

    __tablename__ = "kernel_timings"
    __table_args__ = (UniqueConstraint("session_id", "case_id", "position", name="uq_kernel_timings_session_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("timing_sessions.id", ondelete="CASCADE"))
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    kernel_id: Mapped[int | None] = mapped_column(ForeignKey("kernels.id"), index=True)
    program: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))  # ok | error | crashed | timeout
    ns_min: Mapped[int | None] = mapped_column(Integer)
    ns_median: Mapped[int | None] = mapped_column(Integer)
    ns_max: Mapped[int | None] = mapped_column(Integer)
    spread: Mapped[float | None] = mapped_column(Float)  # (first quartile - best) / best of the timed runs
    samples: Mapped[str | None] = mapped_column(Text)  # JSON list of ns
    ops: Mapped[int | None] = mapped_column(Integer)
    mem_bytes: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)


class CompilePassList(Base):
    """The named passes (name, depth) a scheduling or lowering ran, in order, as JSON; stored once by hash."""

    __tablename__ = "compile_pass_lists"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    names: Mapped[str] = mapped_column(Text)  # [[name, depth], ...]


class CompileTime(Base):
    """How long tinygrad took to lower one kernel for one renderer (position -1, renderer 'schedule': to schedule
    the case), in a timing session, and each named pass's µs (JSON, in the order of its pass list)."""

    __tablename__ = "compile_times"
    __table_args__ = (UniqueConstraint("session_id", "case_id", "position", "renderer",
                                       name="uq_compile_times_session_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("timing_sessions.id", ondelete="CASCADE"))
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    renderer: Mapped[str] = mapped_column(String(40))
    kernel_id: Mapped[int | None] = mapped_column(ForeignKey("kernels.id"))
    total_us: Mapped[int] = mapped_column(Integer)
    pass_list_id: Mapped[int | None] = mapped_column(ForeignKey("compile_pass_lists.id"))
    pass_us: Mapped[str | None] = mapped_column(Text)  # JSON list of µs, one per entry of the pass list
