"""What people and re-timing said about a regression `tgstore regressions` found: its triage state (as LNT keeps it)
and its confirmations. Both are keyed by the series (metric, machine, case, kernel position, renderer) and the
commit range (good, bad), so they are kept when the analysis runs again and finds the same step."""

from __future__ import annotations

from sqlalchemy import Float, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tgstore.db.models.base import Base


class RegressionTriage(Base):
    """A regression's state: new, acknowledged, fixed or ignored, with a note and when it was set."""

    __tablename__ = "regression_triage"
    __table_args__ = (UniqueConstraint("metric", "machine", "case_name", "position", "renderer", "good", "bad",
                                       name="uq_regression_triage_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    metric: Mapped[str] = mapped_column(String(20))
    machine: Mapped[str] = mapped_column(String(64))  # the machine's fingerprint
    case_name: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)  # -1: the case's kernels added up
    renderer: Mapped[str] = mapped_column(String(40))  # '' for run times
    good: Mapped[str] = mapped_column(String(64))  # the last commit before the step
    bad: Mapped[str] = mapped_column(String(64))  # the first after it
    state: Mapped[str] = mapped_column(String(20))  # new | acknowledged | fixed | ignored
    note: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[str] = mapped_column(String(40))


class RegressionConfirmation(Base):
    """One re-timing of a step's two commits, interleaved in one session (good, bad, good, bad, ...), and what it
    said. The latest per key is the regression's confirmation."""

    __tablename__ = "regression_confirmations"
    id: Mapped[int] = mapped_column(primary_key=True)
    metric: Mapped[str] = mapped_column(String(20))
    machine: Mapped[str] = mapped_column(String(64), index=True)
    case_name: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)
    renderer: Mapped[str] = mapped_column(String(40))
    good: Mapped[str] = mapped_column(String(64))
    bad: Mapped[str] = mapped_column(String(64))
    rounds: Mapped[int] = mapped_column(Integer)
    good_ns: Mapped[str] = mapped_column(Text)  # JSON: the good commit's best time per round
    bad_ns: Mapped[str] = mapped_column(Text)  # and the bad commit's
    ratio: Mapped[float | None] = mapped_column(Float)  # median of bad's rounds over good's
    p: Mapped[float | None] = mapped_column(Float)  # exact Mann-Whitney U, rounds against rounds
    verdict: Mapped[str] = mapped_column(String(20))  # confirmed | not confirmed | failed
    detail: Mapped[str] = mapped_column(Text, default="")
    confirmed_at: Mapped[str] = mapped_column(String(40))
