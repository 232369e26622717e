"""Bisect on speed: the first commit of a range where a case's kernels got slower than at the good commit by more
than a threshold and more than the timings' noise, on this machine. Commits are timed as needed (extracted with
--time and ingested; a commit already timed here is read from the database), and the endpoints are timed again to
confirm the slowdown before searching."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine

from tgstore.git import Commit, is_ancestor, line_of, single, verify_rev
from tgstore.history.bisect import BisectError, case_names, extract_and_store, narrow
from tgstore.pipeline import ExtractionPlan
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
                threshold: float = 0.1, kernel: int | None = None,
                log: Callable[[str], None] = lambda _msg: None) -> TimeBisectResult:
    if case not in case_names(plan.case_files):
        raise BisectError(f"unknown case {case!r}; the suite's cases are: {', '.join(case_names(plan.case_files))}")
    plan.time = True
    good_sha, bad_sha = verify_rev(repo, good), verify_rev(repo, bad)
    if good_sha == bad_sha:
        raise BisectError(f"{good} and {bad} are the same commit")
    if not is_ancestor(repo, good_sha, bad_sha):
        raise BisectError(f"{good} ({good_sha[:10]}) is not an ancestor of {bad} ({bad_sha[:10]})")
    machine = this_machine(plan.backend)
    line = [single(repo, good_sha), *line_of(repo, good_sha, bad_sha)]
    timings = 0
    cache: dict[str, CaseTimes | None] = {}

    def stored(commit: Commit) -> CaseTimes | None:
        with engine.connect() as conn:
            try:
                return case_times(conn, case, commit.sha, machine)
            except TimingError:
                return None

    def time_commit(commit: Commit, again: bool = False) -> CaseTimes | None:
        nonlocal timings
        if not again and commit.sha in cache:
            return cache[commit.sha]
        found = None if again else stored(commit)
        if found is None:
            log(f"timing {commit.sha[:10]} {commit.subject}" + (" (again, to confirm)" if again else ""))
            timings += 1
            if not extract_and_store(engine, repo, commit, plan, log):
                cache[commit.sha] = None
                return None
            found = stored(commit)
        cache[commit.sha] = found if found is not None and found.complete else None
        return cache[commit.sha]

    def usable(commit: Commit, times: CaseTimes | None, which: str) -> CaseTimes:
        if times is None:
            raise BisectError(f"no complete timing of case {case!r} at {which} {commit.sha[:10]} on this machine "
                              f"({machine}): its extraction failed or a kernel did not run (tgstore times {case} "
                              f"--commit {commit.sha[:10]})")
        return times

    good_times = usable(line[0], time_commit(line[0]), "good")
    bad_times = usable(line[-1], time_commit(line[-1]), "bad")
    if not slower(good_times, bad_times, threshold, kernel):
        raise BisectError(_no_slowdown(case, good_times, bad_times, threshold, kernel))
    # confirm: both ends timed again; a slowdown that does not repeat was noise
    good_times = usable(line[0], time_commit(line[0], again=True), "good")
    bad_times = usable(line[-1], time_commit(line[-1], again=True), "bad")
    if not slower(good_times, bad_times, threshold, kernel):
        raise BisectError("not confirmed: timed again, " + _no_slowdown(case, good_times, bad_times, threshold, kernel))
    log(f"{case}: {good_times.total_ns} ns at {line[0].sha[:10]} -> {bad_times.total_ns} ns at {line[-1].sha[:10]}")
    def probe(commit: Commit) -> tuple[bool | None, str]:
        times = time_commit(commit)
        if times is None:
            return None, "untestable"
        is_slower = slower(good_times, times, threshold, kernel)
        log(f"{commit.sha[:10]} {times.total_ns} ns: {'slower' if is_slower else 'not slower'}  {commit.subject}")
        return is_slower, "slower" if is_slower else "not slower"

    def again(commit: Commit) -> bool | None:
        """The boundary commit timed again: is it slower now? (None: it could not be timed; its reading stands)"""
        earlier = cache.get(commit.sha)
        times = time_commit(commit, again=True)
        if times is None:
            cache[commit.sha] = earlier
            return None
        return slower(good_times, times, threshold, kernel)

    # the boundary is confirmed as the endpoints are: one misread timing (a loaded machine, a runtime whose speed
    # varies per process) would otherwise name the wrong commit; a reading that does not repeat moves the search
    view, looked_at = line, []
    while True:
        lo, hi, looked = narrow(view, probe)
        looked_at += looked
        if lo > 0 and again(view[lo]):
            log(f"{view[lo].sha[:10]} is slower when timed again: searching before it")
            view = view[:lo + 1]
        elif hi < len(view) - 1 and again(view[hi]) is False:
            log(f"{view[hi].sha[:10]} is not slower when timed again: searching after it")
            view = view[hi:]
        else:
            break
    first_times = bad_times if view[hi].sha == line[-1].sha else cache[view[hi].sha]
    before_times = good_times if view[lo].sha == line[0].sha else cache[view[lo].sha]
    assert first_times is not None and before_times is not None
    return TimeBisectResult(first=view[hi], before=view[lo], good=good_times, bad=bad_times,
                            first_times=first_times, before_times=before_times, commits=len(line) - 1,
                            timings=timings, looked_at=looked_at, kernel=kernel,
                            untestable_before=[view[i] for i in range(lo + 1, hi)])


def _no_slowdown(case: str, good: CaseTimes, bad: CaseTimes, threshold: float, kernel: int | None) -> str:
    ratio = bad.total_ns / good.total_ns if good.total_ns else float("nan")
    changes = kernel_changes(good, bad)
    worst = next((c for c in changes if kernel is None or c["index"] == kernel), None)
    detail = f"; most changed kernel #{worst['index']} {worst['base_ns']} -> {worst['ns']} ns ({worst['ratio']}x)" \
        if worst else ""
    return (f"case {case!r} has no kernel{'' if kernel is None else f' #{kernel}'} slower at {bad.commit[:10]} than "
            f"at {good.commit[:10]} beyond {threshold:.0%} and the noise (total {good.total_ns} ns -> {bad.total_ns} "
            f"ns, {ratio:.3f}x{detail}): no slowdown to bisect")
