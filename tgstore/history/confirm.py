"""`tgstore regressions --confirm`: each reported step's two commits re-timed, interleaved in one session (good, bad,
good, bad, ..., as asv's `continuous` does), and the outcome stored (store/triage.py).

This is the test the sweep's data cannot give: the breakpoint is fixed before these timings exist, so their p-value is
a p-value. Each commit's package is unpacked from git as a sweep does and extracted with --time for the suite the
series came from; a round is one extraction of each, and each round's best time of a kernel is one draw (the runs
inside one process agree more than processes do). A step is confirmed when the exact Mann-Whitney U test of the bad
commit's rounds against the good commit's gives p below alpha, in the step's direction, by at least half the step
(as a ratio); not confirmed otherwise; failed when the timing could not run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import Engine

from tgstore.compare.stepfit import ALPHA, mann_whitney
from tgstore.gate.speed import rounds_needed, timed_rounds, timing_plan
from tgstore.git import GitError, package_checkout
from tgstore.pipeline import ExtractionFailed, ExtractionPlan
from tgstore.store.timings import this_machine
from tgstore.store.triage import Confirmation, now, store_confirmation

ROUNDS = 5  # a side: the fewest whose exact test can reach p < 0.01 (2 / C(10, 5) = 0.0079)


class ConfirmError(Exception):
    """The confirmation cannot run as asked (another machine's regressions, a suite that is not the series')."""


@dataclass
class Confirmed:
    regression: object  # history.regressions.Regression
    confirmation: Confirmation


def value_of(timings: dict[tuple[str, int], dict], case: str, position: int | None) -> int | None:
    """A kernel's best time in one round's timings, or the case's kernels added up (None if one is missing)."""
    if position is not None:
        t = timings.get((case, position))
        return t["ns_min"] if t else None
    mine = [t["ns_min"] for (c, _p), t in timings.items() if c == case]
    return sum(mine) if mine else None


def verdict(good_ns: list[int], bad_ns: list[int], ratio_found: float, alpha: float) -> tuple[str, float, float, str]:
    """(verdict, ratio, p, detail) of one regression from its rounds."""
    p = mann_whitney(bad_ns, good_ns)[1]
    ratio = statistics.median(bad_ns) / statistics.median(good_ns)
    same_way = (ratio > 1) == (ratio_found > 1)
    big_enough = abs(ratio - 1) >= abs(ratio_found - 1) / 2 if ratio_found > 1 else \
        abs(1 / ratio - 1) >= abs(1 / ratio_found - 1) / 2
    if p < alpha and same_way and big_enough:
        return "confirmed", ratio, p, f"{ratio:.3f}x over {len(good_ns)} interleaved rounds, p {p:.2g}"
    why = "the rounds do not differ enough for the test" if p >= alpha else \
        "the other way" if not same_way else f"{ratio:.3f}x, under half the step found ({ratio_found:.3f}x)"
    return "not confirmed", ratio, p, f"{why} ({ratio:.3f}x over {len(good_ns)} rounds, p {p:.2g})"


def confirm(engine: Engine, repo: Path, report, plan: ExtractionPlan, *, rounds: int = ROUNDS,
            alpha: float = ALPHA, log: Callable[[str], None] = lambda _m: None) -> list[Confirmed]:
    """Re-time each commit range of `report` (a history.regressions.Report) and store what each regression's
    rounds say. Ranges are timed one after the other; a range whose timing fails stores `failed` for its
    regressions and the next range goes on."""
    from tgstore.history.regressions import by_range  # the report's own grouping

    if this_machine(plan.backend) != report.machine:
        raise ConfirmError(f"the regressions were timed on machine {report.machine}, this is "
                           f"{this_machine(plan.backend)} (its CPU, compiler, cores or thread count differ: run "
                           "--confirm the way the sweep ran, e.g. under the same taskset)")
    if rounds < rounds_needed(1 - alpha):
        log(f"{rounds} rounds a side cannot give p below {alpha} (that needs {rounds_needed(1 - alpha)}): "
            "nothing can be confirmed")
    timed = replace(timing_plan(plan), workers=1)  # the gate's timing plan, in one process: timings want the machine
    out: list[Confirmed] = []
    for (good, bad), found in by_range(report.every_regression).items():
        try:
            per_commit = time_interleaved(repo, good, bad, timed, rounds, log)
        except (ExtractionFailed, GitError) as exc:
            for r in found:
                out.append(Confirmed(r, Confirmation("failed", rounds, [], [], None, None, str(exc), now())))
            continue
        for r in found:
            good_ns = [value_of(t, r.case, r.position) for t in per_commit[good]]
            bad_ns = [value_of(t, r.case, r.position) for t in per_commit[bad]]
            if None in good_ns or None in bad_ns:
                out.append(Confirmed(r, Confirmation("failed", rounds, [v for v in good_ns if v is not None],
                                                     [v for v in bad_ns if v is not None], None, None,
                                                     "the kernel was not timed in every round", now())))
                continue
            kind, ratio, p, detail = verdict(good_ns, bad_ns, r.ratio, alpha)
            out.append(Confirmed(r, Confirmation(kind, rounds, good_ns, bad_ns, round(ratio, 4), p, detail, now())))
    with engine.begin() as conn:
        for c in out:
            store_confirmation(conn, c.regression.key, c.confirmation)
    return out


def time_interleaved(repo: Path, good: str, bad: str, plan: ExtractionPlan, rounds: int,
                     log: Callable[[str], None]) -> dict[str, list[dict]]:
    """{sha: [each round's kernel timings]} of both commits, timed good, bad, good, bad, ... in one session."""
    with package_checkout(repo, good) as a, package_checkout(repo, bad) as b:
        return timed_rounds([(good, a), (bad, b)], plan, rounds, alternate=False,
                            log=lambda r, sha: log(f"{good[:10]}..{bad[:10]}: round {r + 1}/{rounds}, "
                                                   f"timing {sha[:10]}"))
