"""Machine-wide shifts: steps at the same commit range in many series are one event, not one regression per kernel.

A new machine, a kernel update or another frequency state moves every kernel at once; so does a change to
tinygrad's runtime (as "cpu: uop worker" did). The steps `tgstore regressions` finds are grouped by their commit
range and direction; a group of at least SHIFT_SERIES kernel series (and at least SHIFT_SHARE of the series walked)
is a `CommonShift`: the number of kernels, their median ratio and its spread, the machine fingerprints and the
reference kernel's time at each side, and a classification:
- `machine change`: the sessions on the two sides were timed on different machines, or the reference kernel (a
  fixed C loop no tinygrad commit changes, timed in every session: extract/child/reference.py) moved by at least half
  the shift, or re-timing both commits in one session showed no difference (the members were re-timed and not
  confirmed);
- `common code change`: re-timing both commits in one session confirms it (most members confirmed);
- `unclassified`: neither is known yet; `tgstore regressions --confirm` re-times it.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from dataclasses import dataclass, field
from typing import Any

SHIFT_SERIES = 5  # kernel series stepping at one range, the same way, for a common shift
SHIFT_SHARE = 0.3  # and this share of the series walked


@dataclass
class Side:
    sha: str
    machines: list[str]  # fingerprints of the sessions timing this commit
    reference_ns: int | None  # the reference kernel's best time in its latest session (None: not timed)
    calibration_ns: int | None

    def as_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "machines": self.machines, "reference_ns": self.reference_ns,
                "calibration_ns": self.calibration_ns}


@dataclass
class CommonShift:
    good: str
    bad: str
    subject: str | None
    direction: str
    members: list[Any]  # history.regressions.Regression
    median_ratio: float
    spread: float  # the members' ratios' interquartile range over the median, in log units
    classification: str  # machine change | common code change | unclassified
    evidence: list[str] = field(default_factory=list)
    sides: tuple[Side, Side] | None = None

    @property
    def kernels(self) -> list[Any]:
        return [r for r in self.members if r.position is not None]

    def as_json(self) -> dict[str, Any]:
        return {"good": self.good, "bad": self.bad, "subject": self.subject, "direction": self.direction,
                "kernel_count": len(self.kernels), "series_count": len(self.members),
                "kernels": [{"title": r.title, "case": r.case, "position": r.position, "kernel": r.kernel,
                             "ratio": r.ratio, "evidence": r.evidence, "backed_by": r.backed_by,
                             "confirmed": r.confirmed} for r in self.members],
                "median_ratio": self.median_ratio, "spread": self.spread,
                "classification": self.classification, "evidence": self.evidence,
                "good_side": self.sides[0].as_json() if self.sides else None,
                "bad_side": self.sides[1].as_json() if self.sides else None,
                "confirm_command": "tgstore regressions --confirm --repo TINYGRAD --cases FILE"}


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(r[1] == column for r in conn.execute(f"PRAGMA table_info({table})"))


def side(conn: sqlite3.Connection, sha: str, machine: str) -> Side:
    reference = "s.reference_ns" if _has_column(conn, "timing_sessions", "reference_ns") else "NULL"
    machines = [r[0] for r in conn.execute(
        "SELECT DISTINCT m.fingerprint FROM timing_sessions s JOIN machines m ON m.id = s.machine_id "
        "JOIN tinygrad_commits c ON c.id = s.commit_id WHERE c.sha = ?", (sha,))]
    row = conn.execute(
        f"SELECT {reference}, s.calibration_ns FROM timing_sessions s JOIN machines m ON m.id = s.machine_id "
        "JOIN tinygrad_commits c ON c.id = s.commit_id WHERE c.sha = ? AND m.fingerprint = ? "
        "ORDER BY s.id DESC LIMIT 1", (sha, machine)).fetchone()
    return Side(sha, machines, row[0] if row else None, row[1] if row else None)


def classify(members: list[Any], median_ratio: float, sides: tuple[Side, Side]) -> tuple[str, list[str]]:
    good, bad = sides
    evidence = []
    if set(good.machines) != set(bad.machines):
        evidence.append(f"timed on other machines: {', '.join(good.machines)} against {', '.join(bad.machines)}")
        return "machine change", evidence
    if good.reference_ns and bad.reference_ns:
        moved = bad.reference_ns / good.reference_ns
        evidence.append(f"the reference kernel ran {moved:.3f}x as long at the later session")
        if math.log(moved) * math.log(median_ratio) > 0 and abs(math.log(moved)) >= abs(math.log(median_ratio)) / 2:
            return "machine change", evidence
    verdicts = [r.confirmed for r in members]
    confirmed = sum(v == "confirmed" for v in verdicts)
    retimed = sum(v in ("confirmed", "not confirmed") for v in verdicts)
    if retimed:
        evidence.append(f"re-timed in one session: {confirmed} of {retimed} confirmed")
        if confirmed * 2 > retimed:
            return "common code change", evidence
        return "machine change", evidence
    evidence.append("not re-timed: tgstore regressions --confirm times both commits in one session")
    return "unclassified", evidence


def group_shifts(conn: sqlite3.Connection, regressions: list[Any], walked: int) -> list[CommonShift]:
    """The common shifts among `regressions` (all of one machine); each member keeps its own figures."""
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for r in regressions:
        groups.setdefault((r.good, r.bad, r.direction), []).append(r)
    out = []
    for (good, bad, direction), members in groups.items():
        kernels = [r for r in members if r.position is not None]
        if len(kernels) < SHIFT_SERIES or len(members) < SHIFT_SHARE * walked:
            continue
        logs = sorted(math.log(r.ratio) for r in kernels)
        median = math.exp(statistics.median(logs))
        quartiles = statistics.quantiles(logs, n=4) if len(logs) > 1 else [logs[0]] * 3
        sides = (side(conn, good, members[0].machine), side(conn, bad, members[0].machine))
        kind, evidence = classify(members, median, sides)
        shift = CommonShift(good, bad, members[0].subject, direction, members, round(median, 4),
                            round(quartiles[2] - quartiles[0], 4), kind, evidence, sides)
        for r in members:
            r.shift = f"{good}..{bad}"
        out.append(shift)
    return out
