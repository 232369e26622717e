"""`regressions`: the steps in the stored kernel times (or compile times) over history on one machine, as
history/regressions.py finds them (its Report's own JSON, wrapped: the statistics are that module's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from tgstore.answers.base import Answer, Reader, Unanswerable

if TYPE_CHECKING:
    from tgstore.history.regressions import Report

NOTHING_TIMED = {"time": "no kernel timings stored: ingest with --time first",
                 "compile": "no compile times stored: ingest with --time or --compile-times first"}
VIEWS = {"time": "v_kernel_times", "compile": "v_compile_times"}


@dataclass
class RegressionsAnswer(Answer):
    report: Report  # the walk's own account; with nothing timed an empty one (machine None), the same keys
    message: str | None = None  # why the report is empty, when nothing is timed

    def to_json(self) -> dict[str, Any]:
        return {**self.report.as_json(), "message": self.message}


@cache
def this_machine(backend: str = "CPU") -> str:
    """The fingerprint an extraction started here reports (store.timings.this_machine, without the store); once a
    process (it asks the compiler its version)."""
    from tgstore.extract.child.machine import codegen_thread_env, machine

    return machine(backend, codegen_thread_env({}))["fingerprint"]


def regressions(db: Reader, metric: str = "time", case: str | None = None, since: str | None = None,
                machine: str | None = None, preferred: str | Callable[[], str] | None = None) -> RegressionsAnswer:
    """Steps in the stored kernel times (metric "time") or compile times ("compile") over history, on one machine
    (default: this one if it timed anything, else the machine with the most timings), with their commits, size,
    confidence, triage state and explanation; spikes, candidates not reported, and each series' noise. Nothing
    timed: the same keys, empty, and a message saying how to time."""
    from tgstore.history.regressions import METRICS, RegressionError, Report, find_regressions

    if metric not in METRICS:
        raise Unanswerable(f"--metric must be {' or '.join(METRICS)}, not {metric!r}")
    if db.execute(f"SELECT 1 FROM {VIEWS[metric]} LIMIT 1").fetchone() is None:
        return RegressionsAnswer(Report(metric, None, [], []), NOTHING_TIMED[metric])  # type: ignore[arg-type]
    try:
        report = find_regressions(db, metric, case=case, since=since, machine=machine,
                                  preferred=preferred if preferred is not None else this_machine)
    except RegressionError as exc:
        raise Unanswerable(str(exc)) from None
    return RegressionsAnswer(report)
