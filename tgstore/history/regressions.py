"""Regressions found, not looked for: every kernel's (and case's) stored timings walked in history order on one
machine, each step found and tested (tgstore.stepfit), placed between two commits and explained.

A step lies between the last commit of the level before it and the first commit of the level after it. Adjacent on
git's first-parent line, they name the commit exactly; otherwise the step is somewhere in the gap, and `tgstore
bisect --metric time` narrows it. What explains it: the kernel's AST or generated source changed between those two
commits (codegen), or did not (the same source on the same machine and compiler got faster or slower: tinygrad's
runtime, the compile flags, or the machine's load, which the calibration loop shows).

Works on a DB-API sqlite3 connection (Datasette's, or the CLI's read-only one): no ORM, one query per series kind.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from tgstore.compare.stepfit import MIN_NOISE, Analysis, Series, Step, analyse
from tgstore.store.timings import MIN_KERNEL_NS  # shorter kernels are launch overhead: not judged

METRICS = ("time", "compile")
TIME_FLOOR = 0.02  # the least relative noise assumed of run times on a shared machine (2%)
COMPILE_FLOOR = 0.03  # and of compile times (one measurement per commit, in a process doing other work)
LOAD_CHANGE = 1.2  # a calibration loop this much slower or faster at one side: the machine's load moved


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
    confidence: float
    p: float
    p_samples: float | None
    p_commits: float
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

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)

    def diff_command(self) -> str:
        return f"tgstore diff {self.good[:10]} {self.bad[:10]} --case {self.case} --stages"

    def bisect_command(self) -> str | None:
        """What narrows a gap: bisect --metric time|compile for a slowdown; for a speed-up (bisect looks for
        slowdowns), timing the commits between."""
        if self.exact:
            return None
        if self.direction == "faster":
            return f"tgstore ingest --repo TINYGRAD --rev {self.good[:10]}..{self.bad[:10]} --time"
        threshold = max(5, int((self.ratio - 1) * 50))  # half the step
        kernel = f" --kernel {self.position}" if self.position is not None else ""
        return (f"tgstore bisect {self.case} --metric {self.metric} --good {self.good[:10]} --bad {self.bad[:10]}"
                f"{kernel} --threshold {threshold}%")

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "diff_command": self.diff_command(), "bisect_command": self.bisect_command()}


def series_title(case: str, position: int | None, renderer: str | None) -> str:
    if renderer == "schedule":
        return f"{case} scheduling"
    kernel = " (all kernels)" if position is None else f" #{position}"
    return f"{case}{kernel}" + (f" {renderer}" if renderer else "")


@dataclass
class SeriesNoise:
    case: str
    position: int | None
    renderer: str | None
    kernel: str | None
    commits: int
    noise: float
    detectable: float  # the smallest step the test calls with one commit each side
    outliers: list[str] = field(default_factory=list)  # commits off their level (one slow reading)
    unsure: list[str] = field(default_factory=list)  # steps with one commit on one side: time more commits

    @property
    def title(self) -> str:
        return series_title(self.case, self.position, self.renderer)


@dataclass
class Report:
    metric: str
    machine: str
    regressions: list[Regression]
    series: list[SeriesNoise]
    skipped: int  # series under MIN_KERNEL_NS or with fewer than 3 commits

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "machine": self.machine,
                "regressions": [r.as_json() for r in self.regressions],
                "noise": [asdict(s) for s in self.series], "skipped_series": self.skipped}


# ---------------------------------------------------------------------------------------------------------------------
# reading the series
# ---------------------------------------------------------------------------------------------------------------------

TIME_POINTS = """
    SELECT t.suite, t.backend, t."case", t.position, NULL AS renderer, t.sha, t.subject, c.git_position,
           t.ns_min AS value, kt.samples, t.run_id, t.kernel_hash, coalesce(t.kernel_name, t.program), t.program,
           t.calibration_ns
    FROM v_kernel_times t JOIN kernel_timings kt ON kt.id = t.timing_id JOIN tinygrad_commits c ON c.sha = t.sha
    WHERE t.machine = :machine AND t.status = 'ok' AND t.ns_min > 0 AND (:case = '' OR t."case" = :case)
      AND t.history_rank >= :since
    ORDER BY t.suite, t.backend, t."case", t.position, t.history_rank, t.session_id"""
COMPILE_POINTS = """
    SELECT t.suite, t.backend, t."case", t.position, t.renderer, t.sha, t.subject, c.git_position,
           t.total_us AS value, NULL AS samples, t.run_id, t.kernel_hash, t.kernel_name, NULL, t.calibration_ns
    FROM v_compile_times t JOIN tinygrad_commits c ON c.sha = t.sha
    WHERE t.machine = :machine AND t.total_us > 0 AND (:case = '' OR t."case" = :case)
      AND t.history_rank >= :since
    ORDER BY t.suite, t.backend, t."case", t.renderer, t.position, t.history_rank, t.session_id"""


def choose_machine(conn: sqlite3.Connection, metric: str, machine: str | None, preferred: str | None) -> str:
    """The machine whose series to walk: `machine` (a fingerprint or its prefix), else `preferred` (this machine)
    when it has timings, else the machine with the most."""
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
    sql = TIME_POINTS if metric == "time" else COMPILE_POINTS
    series: dict[tuple, list[Point]] = {}
    for (suite, backend, case_name, position, renderer, sha, subject, git_position, value, samples, run_id,
         kernel_hash, name, program, calibration) in conn.execute(sql, {"machine": machine, "case": case or "",
                                                                       "since": since}):
        points = series.setdefault((suite, backend, case_name, position, renderer), [])
        points.append(Point(sha, subject, git_position, float(value), json.loads(samples) if samples else None,
                            run_id, kernel_hash, program or name, calibration, name))
    totals: dict[tuple, dict[str, Point]] = {}
    order: dict[tuple, list[str]] = {}
    for (suite, backend, case_name, _position, renderer), points in series.items():
        key = (suite, backend, case_name, None, renderer)
        for p in points:
            if p.sha not in totals.setdefault(key, {}):
                totals[key][p.sha] = Point(p.sha, p.subject, p.git_position, 0.0, None, p.run_id, None, None,
                                           p.calibration_ns)
                order.setdefault(key, []).append(p.sha)
            totals[key][p.sha].value += p.value
    for key, by_sha in totals.items():
        positions = [k for k in series if k[:3] == key[:3] and k[4] == key[4]]
        if len(positions) < 2:
            continue  # one kernel: its own series says it all
        ranked = sorted(order[key], key=lambda sha: min(i for k in positions for i, p in enumerate(series[k])
                                                        if p.sha == sha))
        series[key] = [by_sha[sha] for sha in ranked]
    return series


# ---------------------------------------------------------------------------------------------------------------------
# explaining a step
# ---------------------------------------------------------------------------------------------------------------------

def sources(conn: sqlite3.Connection, run_id: int | None, case: str, position: int | None) -> set[tuple]:
    if run_id is None:
        return set()
    if position is None:
        rows = conn.execute('SELECT position, renderer, source_hash FROM v_sources WHERE run_id = ? AND "case" = ?',
                            (run_id, case))
    else:
        rows = conn.execute('SELECT position, renderer, source_hash FROM v_sources WHERE run_id = ? AND "case" = ? '
                            "AND position = ?", (run_id, case, position))
    return set(rows)


def explain(conn: sqlite3.Connection, metric: str, case: str, position: int | None, before: Point, after: Point
            ) -> tuple[str, str]:
    """('codegen' | 'same source', a sentence) for the step between two points of a series."""
    changed = []
    if position is not None and before.kernel_hash != after.kernel_hash:
        changed.append("its AST")
    a, b = sources(conn, before.run_id, case, position), sources(conn, after.run_id, case, position)
    if a and b and a != b:
        renderers = sorted({r for _p, r, _h in a ^ b})
        changed.append(f"its generated source ({', '.join(renderers)})")
    elif metric == "time" and position is not None and before.program != after.program:
        changed.append(f"the timed program ({before.program} -> {after.program})")
    if changed:
        what = "the kernel" if position is not None else "the case's kernels"
        return "codegen", f"{what}: {' and '.join(changed)} changed"
    if not (a and b) and position is not None and before.kernel_hash is None:
        return "same source", "no stored source to compare: the explanation is a guess"
    load = ""
    if before.calibration_ns and after.calibration_ns:
        ratio = after.calibration_ns / before.calibration_ns
        if ratio > LOAD_CHANGE or ratio < 1 / LOAD_CHANGE:
            load = f"; the calibration loop ran {ratio:.2f}x as long at the later timing (machine load moved)"
    if metric == "time":
        return "same source", ("the same AST and source on the same machine and compiler: tinygrad's runtime or "
                               f"compile flags, or the machine{load}")
    return "same source", f"the same AST and output: tinygrad's passes did the same work in another time{load}"


# ---------------------------------------------------------------------------------------------------------------------
# the walk
# ---------------------------------------------------------------------------------------------------------------------

def find_regressions(conn: sqlite3.Connection, metric: str = "time", *, case: str | None = None,
                     since: str | None = None, machine: str | None = None, preferred: str | None = None,
                     min_commits: int = 3) -> Report:
    if metric not in METRICS:
        raise RegressionError(f"--metric must be {' or '.join(METRICS)}, not {metric!r}")
    chosen = choose_machine(conn, metric, machine, preferred)
    if case and conn.execute('SELECT 1 FROM cases WHERE name = ?', (case,)).fetchone() is None:
        raise RegressionError(f"no case {case!r} stored")
    found: list[Regression] = []
    noise: list[SeriesNoise] = []
    skipped = 0
    floor = TIME_FLOOR if metric == "time" else COMPILE_FLOOR
    unit = "ns" if metric == "time" else "us"
    for (_suite, _backend, case_name, position, renderer), points in read_series(
            conn, metric, chosen, case, since_rank(conn, since)).items():
        if len(points) < min_commits or (metric == "time" and max(p.value for p in points) < MIN_KERNEL_NS):
            skipped += 1
            continue
        samples = [p.samples or [] for p in points] if metric == "time" and position is not None else None
        analysis: Analysis = analyse(Series([p.value for p in points], samples, max(floor, MIN_NOISE)))
        kernel = points[-1].kernel_name
        noise.append(SeriesNoise(case_name, position, renderer, kernel, len(points), round(analysis.noise, 4),
                                 round(analysis.detectable, 4), [points[i].sha for i in analysis.outliers],
                                 [points[s.index].sha for s in analysis.unsure]))
        for step in analysis.steps:
            found.append(regression(conn, metric, case_name, position, renderer, points, step, analysis, unit))
    found.sort(key=lambda r: (-abs(r.ratio - 1) if r.direction == "slower" else 1 - abs(1 / r.ratio - 1)))
    found.sort(key=lambda r: r.direction != "slower")
    return Report(metric, chosen, found, noise, skipped)


def regression(conn: sqlite3.Connection, metric: str, case: str, position: int | None, renderer: str | None,
               points: list[Point], step: Step, analysis: Analysis, unit: str) -> Regression:
    end = max(e for _s, e in analysis.segments if e <= step.index)  # the level before the step ends here
    before = points[end - 1]
    after = points[step.index]
    kind, detail = explain(conn, metric, case, position, before, after)
    exact = before.git_position is not None and after.git_position is not None and \
        after.git_position - before.git_position == 1
    between = after.git_position - before.git_position - 1 if before.git_position is not None and \
        after.git_position is not None else None
    return Regression(metric, case, position, renderer, after.kernel_name,
                      "slower" if step.ratio > 1 else "faster", round(step.before), round(step.after),
                      round(step.ratio, 3), round(step.confidence, 6), step.p, step.p_samples, step.p_commits,
                      before.sha, after.sha, after.subject, exact, between, kind, detail, round(analysis.noise, 4),
                      len(points), unit)


def by_range(regressions: Iterable[Regression]) -> dict[tuple[str, str], list[Regression]]:
    """Regressions grouped by their commit range, in the order given."""
    out: dict[tuple[str, str], list[Regression]] = {}
    for r in regressions:
        out.setdefault((r.good, r.bad), []).append(r)
    return out
