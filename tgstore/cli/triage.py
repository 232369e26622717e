"""`tgstore triage` (a regression's state, as LNT keeps it) and `tgstore report` (a period's regressions, to paste)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import JsonOption, command, db_path, fail, open_db, open_reader
from tgstore.cli.output import emit, print_table
from tgstore.cli.times import MachineOption

MetricOption = Annotated[str, typer.Option("--metric", help="time (kernel run times) or compile.")]


def _report(reader, metric: str, machine: str | None):
    """The regressions answer's report (the one walk `tgstore regressions` shows); nothing timed is an error here:
    there is nothing to triage."""
    from tgstore.answers.regressions import regressions

    found = regressions(reader, metric, machine=machine)
    if found.message:
        raise fail(found.message)
    return found.report


@command(app)
def triage(
    commits: Annotated[str, typer.Argument(help="The regression's commit range GOOD..BAD as `tgstore regressions` "
                                           "lists it (sha prefixes).", show_default=False)],
    state: Annotated[str, typer.Option("--state", help="new, acknowledged, fixed or ignored.",
                                       show_default=False)],
    note: Annotated[str, typer.Option("--note", help="Why: an issue link, what fixed it, why it is noise.")] = "",
    case: Annotated[str | None, typer.Option("--case", help="Only this case's regressions in the range.",
                                             show_default=False)] = None,
    kernel: Annotated[int | None, typer.Option("--kernel", help="Only this kernel position (-1: the case's "
                                               "kernels added up).", show_default=False)] = None,
    metric: MetricOption = "time",
    machine: MachineOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set the state of the regressions `tgstore regressions` finds in a commit range (all of its series, or one
    case's or kernel's), with a note; the date is stored. The state is keyed by series and range, so it stays when
    the analysis runs again and finds the same step; /-/regressions and `tgstore report` show it."""
    db = db_path()
    from tgstore.store.triage import STATES, set_triage

    if state not in STATES:
        raise fail(f"--state must be one of {', '.join(STATES)}, not {state!r}")
    good, sep, bad = commits.partition("..")
    if not sep or not good or not bad:
        raise fail(f"give the range as GOOD..BAD, not {commits!r}")
    if not db.exists():
        raise fail(f"{db} does not exist: triage sets the state of regressions a timed database holds")
    engine = open_db(db, writer=True)
    report = _report(open_reader(db), metric, machine)
    chosen = [r for r in report.every_regression if r.good.startswith(good) and r.bad.startswith(bad)
              and (case is None or r.case == case)
              and (kernel is None or (r.position if r.position is not None else -1) == kernel)]
    if not chosen:
        ranges = sorted({f"{r.good[:10]}..{r.bad[:10]}" for r in report.every_regression})
        raise fail(f"no regression in {commits}" + (f" of case {case!r}" if case else "")
                   + (f"; the regressions are in: {', '.join(ranges)}" if ranges else "; none found"))
    with engine.begin() as conn:
        for r in chosen:
            set_triage(conn, r.key, state, note)
    if as_json:
        typer.echo(json.dumps([{"title": r.title, "good": r.good, "bad": r.bad, "state": state, "note": note}
                               for r in chosen]))
        return
    print_table(["series", "range", "state"], [[r.title, f"{r.good[:10]}..{r.bad[:10]}", state] for r in chosen])


@command(app)
def report(
    since: Annotated[str, typer.Option("--since", help="The period's start: regressions whose first slower (or "
                                       "faster) commit is from this date on (YYYY-MM-DD), and those fixed since.",
                                       show_default=False)],
    format: Annotated[str, typer.Option("--format", help="md (Markdown) or html.")] = "md",
    metric: MetricOption = "time",
    machine: MachineOption = None,
) -> None:
    """A triage report to paste (rustc-perf's weekly one is the model): new confirmed regressions and improvements,
    those fixed, and the unconfirmed ones, each with its kernel, ratio, commit range, codegen or same source, and
    the diff or bisect command."""
    db = db_path()
    from datetime import date

    from tgstore.history.report import FORMATS, commit_dates, render

    if format not in FORMATS:
        raise fail(f"--format must be {' or '.join(FORMATS)}, not {format!r}")
    try:
        date.fromisoformat(since[:10])
    except ValueError:
        raise fail(f"--since must be a date (YYYY-MM-DD), not {since!r}") from None
    reader = open_reader(db)
    found = _report(reader, metric, machine)
    dates = commit_dates(reader, {r.bad for r in found.regressions})
    emit(render(found.as_json(), dates, since, format))
