"""`tgstore regressions`: the steps in every kernel's stored timings, found by the tool (tgstore.regressions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import DbOption, JsonOption, command, fail, open_db
from tgstore.cli.output import emit, note, print_table, safe
from tgstore.cli.times import MachineOption
from tgstore.units import format_ns


def format_value(value: float, unit: str) -> str:
    return format_ns(int(value)) if unit == "ns" else format_ns(int(value * 1000))


@command(app)
def regressions(
    metric: Annotated[str, typer.Option("--metric", help="time: kernel run times (ingest --time); compile: how long "
                                        "tinygrad took to lower each kernel per renderer.")] = "time",
    case: Annotated[str | None, typer.Option("--case", help="Only this case's series.", show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only commits from this one on (sha, prefix or "
                                              "version).", show_default=False)] = None,
    machine: MachineOption = None,
    db: DbOption = Path("tgstore.db"),
    as_json: JsonOption = False,
) -> None:
    """Walk every kernel's (and case's) stored timings in history order on one machine (default: this one, else the
    machine with the most timings) and list each step: the commits it lies between (exact when adjacent on git's
    first-parent line, else a gap and the bisect command that narrows it), its size, how sure (Mann-Whitney U on the
    stored runs and a test against the commit-to-commit noise; confidence 1 - p, reported below p = 0.01), and what
    explains it: the kernel's AST or source changed there (codegen) or did not (same source: runtime, compiler,
    machine). Each series' noise is listed, so a step too small to see is said so. Slowdowns first."""
    from tgstore.history.regressions import RegressionError, by_range, find_regressions
    from tgstore.store.timings import this_machine

    engine = open_db(db, migrate=False, writer=False)
    try:
        with engine.connect() as conn:
            report = find_regressions(conn.connection.driver_connection, metric, case=case, since=since,
                                      machine=machine, preferred=this_machine("CPU"))
    except RegressionError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(report.as_json(), ensure_ascii=False))
        return
    note(f"{metric} on machine {report.machine}: {len(report.series)} series walked"
         + (f", {report.skipped} skipped (under 10 us or under 3 commits)" if report.skipped else ""))
    if not report.regressions:
        emit("no step found")
    for (good, bad), found in by_range(report.regressions).items():
        first = found[0]
        between = "unknown" if first.commits_between is None else first.commits_between
        where = f"{good[:10]}..{bad[:10]}" + ("" if first.exact else f" (gap: {between} commits between)")
        emit(f"{where}  {safe(first.subject or '')}")
        print_table(["series", "kernel", "change", "ratio", "confidence", "explained by"],
                    [[r.title, r.kernel or "", f"{format_value(r.before, r.unit)} -> {format_value(r.after, r.unit)}",
                      f"{r.ratio:.3f}x {r.direction}", f"{r.confidence:.4f}", f"{r.explanation}: {r.detail}"]
                     for r in found])
        emit(f"  what changed: {first.diff_command()}")
        if (command_line := next((r.bisect_command() for r in found if r.bisect_command()), None)):
            emit(f"  narrow the gap: {command_line}")
    noisy = [s for s in report.series if s.detectable > 0.2]
    for s in noisy:
        note(f"noise: {s.title} varies {s.noise:.1%} per commit; "
             f"steps under {s.detectable:.0%} cannot be told from it")
    unsure = [(s, sha) for s in report.series for sha in s.unsure]
    for s, sha in unsure:
        note(f"unconfirmed: {s.title} changes at {sha[:10]} with one "
             "commit on one side: time more commits (or that one again) to tell a step from one slow reading")
