"""Regressions found, not looked for: every kernel's (and case's) stored timings walked in history order on one
machine, each step found and tested (tgstore.compare.stepfit), placed between two commits, explained
(history.explain), and joined with what re-timing (`--confirm`) and people (`tgstore triage`) said about it.

A step lies between the last commit of the level before it and the first commit of the level after it. Adjacent on
git's first-parent line, they name the commit exactly; otherwise the step is somewhere in the gap, and `tgstore
bisect --metric time` narrows it.

`Report.as_json()` is the one account of a walk: the CLI's --json, the /-/regressions page and its .json twin, and
`tgstore report` all render it.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from tgstore.compare.machine_state import machine_factors
from tgstore.compare.stepfit import ALPHA, MIN_NOISE, Analysis, Series, Spike, Step, analyse
from tgstore.history.explain import explain
from tgstore.history.series import (
    Point,
    RegressionError,
    choose_machine,
    read_series,
    since_rank,
)
from tgstore.history.shifts import CommonShift, group_shifts
from tgstore.store.timing_limits import MIN_KERNEL_NS  # shorter kernels are launch overhead: not judged
from tgstore.store.triage import Confirmation, Triage, confirmations, key_of, triage_states

__all__ = ["RegressionError", "Regression", "Report", "find_regressions", "by_range", "series_title"]

METRICS = ("time", "compile")
TIME_FLOOR = 0.02  # the least relative noise assumed of run times on a shared machine (2%)
COMPILE_FLOOR = 0.03  # and of compile times (one measurement per commit, in a process doing other work)


@dataclass
class Regression:
    metric: str
    case: str
    position: int | None  # None: the case's kernels added up
    renderer: str | None  # compile: whose lowering
    kernel: str | None  # its name after the step
    direction: str  # slower | faster
    before: float
    after: float
    ratio: float
    confidence: float  # 1 - the larger of the two p-values
    p: float
    p_history: float  # the level change against the series' own history (Bonferroni-adjusted)
    p_runs: float | None  # the nearest commits' runs, Mann-Whitney U (Bonferroni-adjusted; None: no runs)
    evidence: str  # what it stands out from: "history and runs", "history (no runs stored)", ...
    good: str  # the last commit before the step
    bad: str  # the first commit after it
    subject: str | None  # the first commit's subject
    exact: bool  # adjacent on git's first-parent line
    commits_between: int | None  # None: unknown (not git commits)
    explanation: str  # codegen | same source
    detail: str
    noise: float  # the series' relative noise per commit
    commits: int  # timed commits in the series
    unit: str
    machine: str = ""
    confirmation: Confirmation | None = None  # the latest re-timing of good against bad
    triage: Triage = field(default_factory=lambda: Triage("new", "", None))
    standing: str = "reported"  # reported | too little history (the runs back it; re-timing decides)
    back_at: str | None = None  # an excursion: the first commit of the step that comes back ("back at Y")
    excursion_from: str | None = None  # this step comes back from the excursion that started at this commit
    shift: str | None = None  # "GOOD..BAD" of the common shift it belongs to (listed there, not apart)

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)

    @property
    def key(self) -> tuple:
        return key_of(self.metric, self.machine, self.case, self.position, self.renderer, self.good, self.bad)

    @property
    def confirmed(self) -> str:
        """confirmed | not confirmed | unconfirmed (never re-timed) | unconfirmed: too little history (never
        re-timed, and the series' history too short to judge it) | failed (the re-timing could not run)."""
        if self.confirmation:
            return self.confirmation.verdict
        return "unconfirmed: too little history" if self.standing == "too little history" else "unconfirmed"

    @property
    def backed_by(self) -> list[str]:
        """The evidence behind it, plainly: history (its own commit-to-commit changes), runs (the stored runs of the
        commits beside it), re-timing (the two commits timed again, interleaved)."""
        out = [] if self.p_history >= ALPHA else ["history"]
        if self.p_runs is not None and self.p_runs < ALPHA:
            out.append("runs")
        return out + (["re-timing"] if self.confirmed == "confirmed" else [])

    def diff_command(self) -> str:
        return f"tgstore diff {self.good[:10]} {self.bad[:10]} --case {self.case} --stages"

    def bisect_command(self) -> str | None:
        """What narrows a gap: bisect --metric time|compile for a slowdown; for a speed-up (bisect looks for
        slowdowns), timing the commits between."""
        if self.exact:
            return None
        if self.direction == "faster":
            return f"tgstore sweep --repo TINYGRAD --rev {self.good[:10]}..{self.bad[:10]} --time"
        threshold = max(5, int((self.ratio - 1) * 50))  # half the step
        kernel = f" --kernel {self.position}" if self.position is not None else ""
        return (f"tgstore bisect {self.case} --metric {self.metric} --good {self.good[:10]} --bad {self.bad[:10]}"
                f"{kernel} --threshold {threshold}%")

    def as_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("confirmation", "triage")}
        return {**out, "title": self.title, "confirmed": self.confirmed, "backed_by": self.backed_by,
                "confirmation": self.confirmation.as_json() if self.confirmation else None,
                "triage": self.triage.as_json(), "diff_command": self.diff_command(),
                "bisect_command": self.bisect_command()}


def series_title(case: str, position: int | None, renderer: str | None) -> str:
    if renderer == "schedule":
        return f"{case} scheduling"
    kernel = " (all kernels)" if position is None else f" #{position}"
    return f"{case}{kernel}" + (f" {renderer}" if renderer else "")


@dataclass
class Candidate:
    """A breakpoint the fit proposed that is not reported: one test backs it, or it has one commit on a side."""
    case: str
    position: int | None
    renderer: str | None
    at: str  # the first commit after it
    ratio: float
    p_history: float
    p_runs: float | None
    why: str
    good: str = ""  # the last commit before it (--confirm re-times the two)

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)


@dataclass
class SpikeFound:
    """One commit off its neighbours both ways, backed by the history and by its own runs: slower at X, back at Y."""
    case: str
    position: int | None
    renderer: str | None
    kernel: str | None
    at: str  # X
    back: str  # Y, the next commit
    subject: str | None
    level: float
    value: float
    ratio: float
    p_history: float
    p_runs: float | None
    unit: str

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)

    @property
    def direction(self) -> str:
        return "slower" if self.ratio > 1 else "faster"


@dataclass
class SeriesNoise:
    case: str
    position: int | None
    renderer: str | None
    kernel: str | None
    commits: int
    noise: float
    detectable: float | None  # the smallest step the detector finds 90% of the time here (simulated; None: never)
    outliers: list[str] = field(default_factory=list)  # commits off their level, not backed as spikes
    unsure: list[str] = field(default_factory=list)  # steps with one commit on one side: time more commits

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)


@dataclass
class Skipped:
    case: str
    position: int | None
    renderer: str | None
    commits: int
    why: str


@dataclass
class Report:
    metric: str
    machine: str
    regressions: list[Regression]
    series: list[SeriesNoise]
    skipped: list[Skipped] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    spikes: list[SpikeFound] = field(default_factory=list)
    alpha: float = ALPHA
    common_shifts: list[CommonShift] = field(default_factory=list)  # one event each; their series not repeated
    pending: list[Regression] = field(default_factory=list)  # the candidates as steps: --confirm re-times them
    adjusted: list[str] = field(default_factory=list)  # series whose times the reference kernel's states divided

    @property
    def every_regression(self) -> list[Regression]:
        """The regressions listed apart, those folded into a common shift and the candidates set aside: what
        --confirm re-times and triage sets."""
        return self.regressions + [r for shift in self.common_shifts for r in shift.members] + self.pending

    @property
    def confirmed(self) -> list[Regression]:
        return [r for r in self.regressions if r.confirmed == "confirmed"]

    @property
    def unconfirmed(self) -> list[Regression]:
        return [r for r in self.regressions if r.confirmed != "confirmed"]

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "machine": self.machine, "alpha": self.alpha,
                "regressions": [r.as_json() for r in self.regressions],
                "spikes": [{**asdict(s), "title": s.title, "direction": s.direction} for s in self.spikes],
                "candidates": [{**asdict(c), "title": c.title} for c in self.candidates],
                "noise": [{**asdict(s), "title": s.title} for s in self.series],
                "skipped": [asdict(s) for s in self.skipped], "skipped_series": len(self.skipped),
                "common_shifts": [shift.as_json() for shift in self.common_shifts],
                "adjusted_for_machine_state": self.adjusted}


# ---------------------------------------------------------------------------------------------------------------------
# the walk
# ---------------------------------------------------------------------------------------------------------------------

def find_regressions(conn: sqlite3.Connection, metric: str = "time", *, case: str | None = None,
                     since: str | None = None, machine: str | None = None,
                     preferred: str | Callable[[], str] | None = None,
                     min_commits: int = 3) -> Report:
    if metric not in METRICS:
        raise RegressionError(f"--metric must be {' or '.join(METRICS)}, not {metric!r}")
    chosen = choose_machine(conn, metric, machine, preferred)
    if case and conn.execute('SELECT 1 FROM cases WHERE name = ?', (case,)).fetchone() is None:
        raise RegressionError(f"no case {case!r} stored")
    report = Report(metric, chosen, [], [])
    floor = TIME_FLOOR if metric == "time" else COMPILE_FLOOR
    unit = "ns" if metric == "time" else "us"
    states, confirmed = triage_states(conn, chosen, metric), confirmations(conn, chosen, metric)
    for (_suite, _backend, case_name, position, renderer), points in read_series(
            conn, metric, chosen, case, since_rank(conn, since)).items():
        if len(points) < min_commits:
            report.skipped.append(Skipped(case_name, position, renderer, len(points),
                                          f"{len(points)} timed commit{'s' if len(points) != 1 else ''}: fewer "
                                          f"than {min_commits}"))
            continue
        if metric == "time" and max(p.value for p in points) < MIN_KERNEL_NS:
            report.skipped.append(Skipped(case_name, position, renderer, len(points),
                                          f"under {MIN_KERNEL_NS // 1000} us at every commit: launch overhead"))
            continue
        samples = [p.samples or [] for p in points] if metric == "time" and position is not None else None
        values = [p.value for p in points]
        factors = machine_factors([p.reference_ns for p in points]) if metric == "time" else None
        if factors and any(f != 1.0 for f in factors):  # a persistent machine state, measured: divided out
            values = [v / f for v, f in zip(values, factors, strict=True)]
            samples = [[v / f for v in s] for s, f in zip(samples, factors, strict=True)] if samples else None
            report.adjusted.append(series_title(case_name, position, renderer))
        analysis: Analysis = analyse(Series(values, samples, max(floor, MIN_NOISE)))
        kernel = points[-1].kernel_name
        detectable = round(analysis.detectable, 4) if math.isfinite(analysis.detectable) else None
        report.series.append(SeriesNoise(case_name, position, renderer, kernel, len(points), round(analysis.noise, 4),
                                         detectable, [points[i].sha for i in analysis.outliers],
                                         [points[s.index].sha for s in analysis.unsure]))
        for step in sorted(analysis.steps + analysis.short, key=lambda st: st.index):
            found = regression(conn, metric, case_name, position, renderer, points, step, analysis, unit)
            found.standing = "too little history" if step in analysis.short else "reported"
            found.machine = chosen
            found.confirmation = confirmed.get(found.key)
            found.triage = states.get(found.key, found.triage)
            report.regressions.append(found)
        for step in analysis.set_aside + analysis.unsure:
            as_step = regression(conn, metric, case_name, position, renderer, points, step, analysis, unit)
            as_step.machine, as_step.standing = chosen, "set aside"
            as_step.confirmation = confirmed.get(as_step.key)
            as_step.triage = states.get(as_step.key, as_step.triage)
            if as_step.confirmed == "confirmed":  # re-timing decided it: a regression like any other
                report.regressions.append(as_step)
                continue
            why = "one commit on one side: time more commits" if step in analysis.unsure else \
                f"stands out from the {step.evidence().replace(' only', '')} only" + (
                    "; within what the series' own history does from commit to commit"
                    if step.evidence() == "runs only" else "")
            if as_step.confirmation:
                why += f"; re-timed: {as_step.confirmed} ({as_step.confirmation.detail})"
            report.pending.append(as_step)
            report.candidates.append(Candidate(case_name, position, renderer, points[step.index].sha,
                                               round(step.ratio, 3), step.p_history, step.p_runs, why, as_step.good))
        report.spikes += [spike_found(case_name, position, renderer, points, s, unit) for s in analysis.spikes]
    report.regressions.sort(key=lambda r: (-abs(r.ratio - 1) if r.direction == "slower" else 1 - abs(1 / r.ratio - 1)))
    report.regressions.sort(key=lambda r: r.direction != "slower")
    report.common_shifts = group_shifts(conn, report.regressions, len(report.series))
    folded = {id(r) for shift in report.common_shifts for r in shift.members}
    report.regressions = [r for r in report.regressions if id(r) not in folded]
    return report


def spike_found(case: str, position: int | None, renderer: str | None, points: list[Point], spike: Spike,
                unit: str) -> SpikeFound:
    at, back = points[spike.index], points[spike.index + 1]
    return SpikeFound(case, position, renderer, at.kernel_name, at.sha, back.sha, at.subject, round(spike.level),
                      round(spike.value), round(spike.ratio, 3), spike.p_history, spike.p_runs, unit)


def regression(conn: sqlite3.Connection, metric: str, case: str, position: int | None, renderer: str | None,
               points: list[Point], step: Step, analysis: Analysis, unit: str) -> Regression:
    before = points[step.last_before if step.last_before is not None else step.index - 1]
    after = points[step.index]
    kind, detail = explain(conn, metric, case, position, before, after)
    exact = before.git_position is not None and after.git_position is not None and \
        after.git_position - before.git_position == 1
    between = after.git_position - before.git_position - 1 if before.git_position is not None and \
        after.git_position is not None else None
    found = Regression(metric, case, position, renderer, after.kernel_name,
                       "slower" if step.ratio > 1 else "faster", round(step.before), round(step.after),
                       round(step.ratio, 3), round(step.confidence, 6), step.p, step.p_history, step.p_runs,
                       step.evidence(), before.sha, after.sha, after.subject, exact, between, kind, detail,
                       round(analysis.noise, 4), len(points), unit)
    found.back_at = points[step.back_at].sha if step.back_at is not None else None
    found.excursion_from = points[step.excursion_from].sha if step.excursion_from is not None else None
    return found


def by_range(regressions: Iterable[Regression]) -> dict[tuple[str, str], list[Regression]]:
    """Regressions grouped by their commit range, in the order given."""
    out: dict[tuple[str, str], list[Regression]] = {}
    for r in regressions:
        out.setdefault((r.good, r.bad), []).append(r)
    return out
