"""`times` and `compile_times`: how fast each kernel of a case ran at a commit on one machine (optionally beside
another commit timed there), and how long tinygrad took to schedule and lower it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgstore.answers.base import Answer, Reader, Unanswerable


@dataclass
class TimesAnswer(Answer):
    case: str
    commit: str
    machine: dict[str, Any]
    calibration_ns: int | None
    total_ns: int
    kernels: list[dict[str, Any]] = field(default_factory=list)
    against: dict[str, Any] | None = None  # {"commit", "total_ns", "kernels": the changes}, when asked for


@dataclass
class CompileTimesAnswer(Answer):
    case: str
    commit: str
    machine: str
    kernels: list[dict[str, Any]] = field(default_factory=list)  # index -1: the case's scheduling


def times(db: Reader, case: str, commit: str | None = None, against: str | None = None,
          machine: str | None = None) -> TimesAnswer:
    """Each kernel's best and median time at a commit (default: the newest timed), their spread, tinygrad's ops
    and memory estimates as GFLOP/s and GB/s, on the machine that timed it; with against, beside another commit
    timed on the same machine (refused otherwise), each kernel's change."""
    from tgstore.db.read import as_sqlalchemy
    from tgstore.store.timings import TimingError, case_times, comparable, kernel_changes, resolve_commit

    try:
        with as_sqlalchemy(db) as conn:
            sha = resolve_commit(conn, commit)
            if against is None:
                timed, base = case_times(conn, case, sha, machine), None
            else:
                timed, base = comparable(conn, case, sha, resolve_commit(conn, against), machine)
    except TimingError as exc:
        raise Unanswerable(str(exc)) from None
    compared = None if base is None else {"commit": base.commit, "total_ns": base.total_ns,
                                          "kernels": kernel_changes(base, timed)}
    return TimesAnswer(case, timed.commit, timed.machine, timed.calibration_ns, timed.total_ns, timed.kernels,
                       compared)


def compile_times(db: Reader, case: str, commit: str | None = None, machine: str | None = None
                  ) -> CompileTimesAnswer:
    """How long tinygrad took to schedule a case and lower each kernel per renderer at a commit (default: the
    newest timed), with each pass's time (a pass's time includes the passes nested in it)."""
    from tgstore.db.read import as_sqlalchemy
    from tgstore.store.compile_times import case_compile_times, compile_machines
    from tgstore.store.timings import TimingError, resolve_commit

    try:
        with as_sqlalchemy(db) as conn:
            sha = resolve_commit(conn, commit)
            machines = [m for m in compile_machines(conn, sha, case) if machine is None or m.startswith(machine)]
            if len(machines) != 1:
                raise TimingError(f"case {case!r} at {sha[:12]} has " + (
                    f"compile times of {len(machines)} machines ({', '.join(machines)}): name one with --machine"
                    if machines else "no compile times; ingest it with --time or --compile-times"))
            found = case_compile_times(conn, case, sha, machines[0])
    except TimingError as exc:
        raise Unanswerable(str(exc)) from None
    return CompileTimesAnswer(case, sha, machines[0], [
        {"index": k.index, "name": k.name, "renderer": k.renderer, "total_us": k.total_us,
         "passes": [{"name": n, "depth": d, "us": u} for n, d, u in k.passes]} for k in found])
