"""Bisect on speed: the first commit of a range where a case's kernels got slower (to run, or with --metric compile
to lower) than at the good commit by more than a threshold and more than the timings' noise, on this machine.
Commits are timed as needed (extracted with --time or --compile-times and ingested; a commit already timed here is
read from the database), and the endpoints are timed again to confirm the slowdown before searching."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine

from tgstore.git import Commit, is_ancestor, line_of, single, verify_rev
from tgstore.history.bisect import BisectError, case_names, extract_and_store, narrow
from tgstore.pipeline import ExtractionPlan
from tgstore.store.compile_times import as_case_times
from tgstore.store.timings import (
    CaseTimes,
    TimingError,
    case_times,
    kernel_changes,
    slower,
    slower_kernels,
    this_machine,
)


def parse_threshold(value: str) -> float:
    """'10%' or '0.1' -> 0.1; BisectError for anything else or a value not above 0."""
    text = value.strip()
    try:
        fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise BisectError(f"--threshold must be a percentage (10%) or a fraction (0.1), not {value!r}") from None
    if fraction <= 0:
        raise BisectError(f"--threshold must be above 0, not {value!r}")
    return fraction


@dataclass
class TimeBisectResult:
    first: Commit
    before: Commit  # the commit just before `first` on the line (not slower than good)
    good: CaseTimes
    bad: CaseTimes
    first_times: CaseTimes
    before_times: CaseTimes
    commits: int
    timings: int  # extractions with --time run by this bisect
    looked_at: list[tuple[Commit, str]] = field(default_factory=list)
    untestable_before: list[Commit] = field(default_factory=list)

    kernel: int | None = None

    @property
    def changes(self) -> list[dict]:
        """The kernels slower at `first` than just before it (beyond threshold and noise), else every change."""
        return kernel_changes(self.before_times, self.first_times)

    def slower_kernels(self, threshold: float) -> list[dict]:
        return slower_kernels(self.good, self.first_times, threshold, self.kernel)


def bisect_time(engine: Engine, repo: Path, case: str, good: str, bad: str, plan: ExtractionPlan, *,
                threshold: float = 0.1, kernel: int | None = None, metric: str = "time",
                log: Callable[[str], None] = lambda _msg: None) -> TimeBisectResult:
    """The first commit of GOOD..BAD where CASE is slower (`metric` time: kernel run times; compile: how long each
    kernel took to lower for the plan's first renderer), in the steps below."""
    search = TimeSearch(engine, repo, case, plan, threshold, kernel, metric, log)
    line = search.line_between(good, bad)  # the range checked, as its first-parent commits
    search.time_endpoints(line)  # stored timings of this machine where there are, else timed now
    search.confirm_endpoints(line)  # both timed again: a slowdown that does not repeat was noise
    lo, hi = search.find_boundary(line)  # binary search; the boundary's two commits re-timed to confirm
    return search.result(line, lo, hi)


class TimeSearch:
    """The time bisect's state: the commits timed so far (this machine's), and the good and bad timings."""

    def __init__(self, engine: Engine, repo: Path, case: str, plan: ExtractionPlan, threshold: float,
                 kernel: int | None, metric: str, log: Callable[[str], None]) -> None:
        if metric not in ("time", "compile"):
            raise BisectError(f"--metric must be output, time or compile, not {metric!r}")
        if case not in case_names(plan.case_files):
            raise BisectError(f"unknown case {case!r}; the suite's cases are: {', '.join(case_names(plan.case_files))}")
        if metric == "time":
            plan.time = True
        plan.compile_times = True
        self.engine, self.repo, self.case, self.plan, self.log = engine, repo, case, plan, log
        self.threshold, self.kernel, self.metric = threshold, kernel, metric
        self.machine = this_machine(plan.backend)
        self.renderer = plan.effective_renderers[0]
        self.timings = 0
        self.cache: dict[str, CaseTimes | None] = {}
        self.good: CaseTimes | None = None
        self.bad: CaseTimes | None = None
        self.view: list[Commit] = []
        self.looked_at: list[tuple[Commit, str]] = []

    # --- the steps ---------------------------------------------------------------------------------------------------
    def line_between(self, good: str, bad: str) -> list[Commit]:
        good_sha, bad_sha = verify_rev(self.repo, good), verify_rev(self.repo, bad)
        if good_sha == bad_sha:
            raise BisectError(f"{good} and {bad} are the same commit")
        if not is_ancestor(self.repo, good_sha, bad_sha):
            raise BisectError(f"{good} ({good_sha[:10]}) is not an ancestor of {bad} ({bad_sha[:10]})")
        return [single(self.repo, good_sha), *line_of(self.repo, good_sha, bad_sha)]

    def time_endpoints(self, line: list[Commit]) -> None:
        self.good = self.usable(line[0], self.time_commit(line[0]), "good")
        self.bad = self.usable(line[-1], self.time_commit(line[-1]), "bad")
        if not self.slower(self.bad):
            raise BisectError(_no_slowdown(self.case, self.good, self.bad, self.threshold, self.kernel))

    def confirm_endpoints(self, line: list[Commit]) -> None:
        self.good = self.usable(line[0], self.time_commit(line[0], again=True), "good")
        self.bad = self.usable(line[-1], self.time_commit(line[-1], again=True), "bad")
        if not self.slower(self.bad):
            raise BisectError("not confirmed: timed again, " + _no_slowdown(self.case, self.good, self.bad,
                                                                            self.threshold, self.kernel))
        self.log(f"{self.case}: {self.good.total_ns} ns at {line[0].sha[:10]} -> {self.bad.total_ns} ns at "
                 f"{line[-1].sha[:10]}")

    def find_boundary(self, line: list[Commit]) -> tuple[int, int]:
        """(lo, hi) in self.view: the last commit not slower and the first slower. The boundary is confirmed as the
        endpoints are: one misread timing (a loaded machine, a runtime whose speed varies per process) would
        otherwise name the wrong commit; a reading that does not repeat moves the search."""
        self.view = line
        while True:
            lo, hi, looked = narrow(self.view, self.probe)
            self.looked_at += looked
            if lo > 0 and self.again(self.view[lo]):
                self.log(f"{self.view[lo].sha[:10]} is slower when timed again: searching before it")
                self.view = self.view[:lo + 1]
            elif hi < len(self.view) - 1 and self.again(self.view[hi]) is False:
                self.log(f"{self.view[hi].sha[:10]} is not slower when timed again: searching after it")
                self.view = self.view[hi:]
            else:
                return lo, hi

    def result(self, line: list[Commit], lo: int, hi: int) -> TimeBisectResult:
        assert self.good is not None and self.bad is not None
        view = self.view
        first_times = self.bad if view[hi].sha == line[-1].sha else self.cache[view[hi].sha]
        before_times = self.good if view[lo].sha == line[0].sha else self.cache[view[lo].sha]
        assert first_times is not None and before_times is not None
        return TimeBisectResult(first=view[hi], before=view[lo], good=self.good, bad=self.bad,
                                first_times=first_times, before_times=before_times, commits=len(line) - 1,
                                timings=self.timings, looked_at=self.looked_at, kernel=self.kernel,
                                untestable_before=[view[i] for i in range(lo + 1, hi)])

    # --- timing one commit -------------------------------------------------------------------------------------------
    def stored(self, commit: Commit) -> CaseTimes | None:
        with self.engine.connect() as conn:
            try:
                if self.metric == "compile":
                    return as_case_times(conn, self.case, commit.sha, self.machine, self.renderer)
                return case_times(conn, self.case, commit.sha, self.machine)
            except TimingError:
                return None

    def time_commit(self, commit: Commit, again: bool = False) -> CaseTimes | None:
        if not again and commit.sha in self.cache:
            return self.cache[commit.sha]
        found = None if again else self.stored(commit)
        if found is None:
            self.log(f"timing {commit.sha[:10]} {commit.subject}" + (" (again, to confirm)" if again else ""))
            self.timings += 1
            if not extract_and_store(self.engine, self.repo, commit, self.plan, self.log):
                self.cache[commit.sha] = None
                return None
            found = self.stored(commit)
        self.cache[commit.sha] = found if found is not None and found.complete else None
        return self.cache[commit.sha]

    def usable(self, commit: Commit, times: CaseTimes | None, which: str) -> CaseTimes:
        if times is None:
            raise BisectError(f"no complete {'timing' if self.metric == 'time' else 'compile times'} of case "
                              f"{self.case!r} at {which} {commit.sha[:10]} on this machine ({self.machine}): its "
                              f"extraction failed or a kernel did not run (tgstore times {self.case} --commit "
                              f"{commit.sha[:10]}{' --compile' if self.metric == 'compile' else ''})")
        return times

    def slower(self, times: CaseTimes) -> bool:
        assert self.good is not None
        return slower(self.good, times, self.threshold, self.kernel)

    def probe(self, commit: Commit) -> tuple[bool | None, str]:
        times = self.time_commit(commit)
        if times is None:
            return None, "untestable"
        is_slower = self.slower(times)
        self.log(f"{commit.sha[:10]} {times.total_ns} ns: {'slower' if is_slower else 'not slower'}  {commit.subject}")
        return is_slower, "slower" if is_slower else "not slower"

    def again(self, commit: Commit) -> bool | None:
        """The boundary commit timed again: is it slower now? (None: it could not be timed; its reading stands)"""
        earlier = self.cache.get(commit.sha)
        times = self.time_commit(commit, again=True)
        if times is None:
            self.cache[commit.sha] = earlier
            return None
        return self.slower(times)


def _no_slowdown(case: str, good: CaseTimes, bad: CaseTimes, threshold: float, kernel: int | None) -> str:
    ratio = bad.total_ns / good.total_ns if good.total_ns else float("nan")
    changes = kernel_changes(good, bad)
    worst = next((c for c in changes if kernel is None or c["index"] == kernel), None)
    detail = f"; most changed kernel #{worst['index']} {worst['base_ns']} -> {worst['ns']} ns ({worst['ratio']}x)" \
        if worst else ""
    return (f"case {case!r} has no kernel{'' if kernel is None else f' #{kernel}'} slower at {bad.commit[:10]} than "
            f"at {good.commit[:10]} beyond {threshold:.0%} and the noise (total {good.total_ns} ns -> {bad.total_ns} "
            f"ns, {ratio:.3f}x{detail}): no slowdown to bisect")
