"""`tgstore regressions [--confirm]`: the steps in every kernel's stored timings, found by the tool
(history/regressions.py), confirmed by re-timing (history/confirm.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import (
    DEFAULT_REPO,
    BackendOption,
    CasesOption,
    JsonOption,
    RepoOption,
    SuiteOption,
    command,
    db_path,
    fail,
    make_plan,
    open_db,
    open_reader,
    print_json,
)
from tgstore.cli.output import emit, note, print_table, safe
from tgstore.cli.times import MachineOption
from tgstore.units import format_value


@command(app)
def regressions(
    metric: Annotated[str, typer.Option("--metric", help="time: kernel run times (ingest --time); compile: how long "
                                        "tinygrad took to lower each kernel per renderer.")] = "time",
    case: Annotated[str | None, typer.Option("--case", help="Only this case's series.", show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only commits from this one on (sha, prefix or "
                                              "version).", show_default=False)] = None,
    machine: MachineOption = None,
    confirm: Annotated[bool, typer.Option("--confirm", help="Re-time each reported step's two commits on this "
                                          "machine, interleaved in one session (good, bad, good, bad, ...), and "
                                          "store what the rounds say (needs --repo and the sweep's --cases or "
                                          "--suite; this machine must be the series' machine).")] = False,
    rounds: Annotated[int, typer.Option("--rounds", min=2, help="--confirm: timings of each commit (5 reach "
                                        "p < 0.01).")] = 5,
    repo: RepoOption = None,
    cases: CasesOption = None,
    suite: SuiteOption = None,
    backend: BackendOption = "CPU",
    as_json: JsonOption = False,
) -> None:
    """Walk every kernel's (and case's) stored timings in history order on one machine (default: this one, else the
    machine with the most timings) and list each step: the commits it lies between (exact when adjacent on git's
    first-parent line, else a gap and the bisect command that narrows it), its size, what it stands out from (the
    series' own history of commit-to-commit changes, and the stored runs of the commits beside it: both are needed,
    p < 0.01 each after allowing for the breakpoint having been chosen), and what explains it: the kernel's AST or
    source changed there (codegen) or did not (same source: runtime, compiler, machine). Confirmed steps (re-timed
    with --confirm) are listed apart from unconfirmed ones, with their triage state (tgstore triage). Spikes (slower
    at one commit, back at the next) and the candidates only one test backs are listed too, and each series' noise
    and the smallest step the detector finds there 90% of the time. A step the runs back in a history too short to
    judge is listed as 'unconfirmed: too little history' (--confirm decides it); an excursion's two steps say
    'back at'; steps at one range in many kernels are one common shift (machine change, common code change or
    unclassified); the reference kernel's machine states are divided out."""
    db = db_path()
    from tgstore.answers.regressions import regressions as regressions_answer
    from tgstore.answers.regressions import this_machine

    def walk():
        return regressions_answer(open_reader(db), metric, case=case, since=since, machine=machine,
                                  preferred=lambda: this_machine(backend))

    if confirm:
        engine = open_db(db)  # a writer: the confirmations are stored
        found = walk()
        if found.message:
            raise fail(found.message)
        run_confirmation(engine, found.report, repo, cases, suite, backend, rounds)
    found = walk()
    if as_json:
        return print_json(found)
    if found.message:
        note(found.message)
        return
    print_report(found.report)


def run_confirmation(engine, report, repo: Path | None, cases, suite, backend: str, rounds: int) -> None:
    from tgstore.git import GitError, open_repo
    from tgstore.history.confirm import ConfirmError, confirm
    from tgstore.pipeline import read_case_names

    if report.metric != "time":
        raise fail("--confirm re-times run times: it needs --metric time")
    plan = make_plan(cases, backend, "C", 0, 900.0, suite=suite)
    names = set(read_case_names(plan.case_files))
    strangers = sorted({r.case for r in report.every_regression if r.case.split("@")[0] not in names})  # x@file: a twin
    if strangers:
        raise fail(f"--confirm times the suite the series came from: case {', '.join(strangers)} "
                   f"{'is' if len(strangers) == 1 else 'are'} not in "
                   f"{', '.join(str(p) for p in plan.case_files)} (give the sweep's --cases or --suite)")
    try:
        root = open_repo(repo or DEFAULT_REPO)
        found = confirm(engine, root, report, plan, rounds=rounds, log=note)
    except (ConfirmError, GitError) as exc:
        raise fail(str(exc)) from None
    note(f"confirmation: {sum(c.confirmation.verdict == 'confirmed' for c in found)} of {len(found)} confirmed")


def print_report(report) -> None:
    from tgstore.history.regressions import by_range

    note(f"{report.metric} on machine {report.machine}: {len(report.series)} series walked"
         + (f", {len(report.skipped)} skipped (tgstore regressions --json says why)" if report.skipped else ""))
    if not report.regressions and not report.common_shifts:
        emit("no step found" + (": set aside below, and why" if report.candidates else ""))
    for shift in report.common_shifts:
        emit(f"== common shift: {shift.good[:10]}..{shift.bad[:10]} {shift.direction}, {len(shift.kernels)} kernels "
             f"(median {shift.median_ratio:.3f}x, spread {shift.spread:.3f}): {shift.classification}  "
             f"{safe(shift.subject or '')}")
        for line in shift.evidence:
            emit(f"  {line}")
        emit(f"  series: {', '.join(f'{r.title} {r.ratio:.3f}x' for r in shift.members)}")
    for title, chosen in (("confirmed by re-timing", report.confirmed),
                          ("unconfirmed (regressions --confirm re-times them)", report.unconfirmed)):
        if not chosen:
            continue
        emit(f"== {title}: {len(chosen)}")
        for (good, bad), found in by_range(chosen).items():
            first = found[0]
            between = "unknown" if first.commits_between is None else first.commits_between
            where = f"{good[:10]}..{bad[:10]}" + ("" if first.exact else f" (gap: {between} commits between)")
            emit(f"{where}  {safe(first.subject or '')}")
            print_table(["series", "kernel", "change", "ratio", "stands out from", "confirmation", "triage",
                         "explained by"],
                        [[r.title, r.kernel or "",
                          f"{format_value(r.before, r.unit)} -> {format_value(r.after, r.unit)}",
                          f"{r.ratio:.3f}x {r.direction}" + (f", back at {r.back_at[:10]}" if r.back_at else "")
                          + (f", back from {r.excursion_from[:10]}" if r.excursion_from else ""),
                          f"{' and '.join(r.backed_by) or 'neither'}: {r.evidence} (p {r.p_history:.1g}"
                          + (f", {r.p_runs:.1g})" if r.p_runs is not None else ")"),
                          f"{r.confirmed}: {r.confirmation.detail}" if r.confirmation else r.confirmed,
                          r.triage.state + (f": {r.triage.note}" if r.triage.note else ""),
                          f"{r.explanation}: {r.detail}"] for r in found])
            emit(f"  what changed: {first.diff_command()}")
            if (command_line := next((r.bisect_command() for r in found if r.bisect_command()), None)):
                emit(f"  narrow the gap: {command_line}")
    for s in report.spikes:
        emit(f"spike: {s.title} {s.kernel or ''} {s.direction} at {s.at[:10]} "
             f"({format_value(s.level, s.unit)} -> {format_value(s.value, s.unit)}, {s.ratio:.3f}x), back at "
             f"{s.back[:10]}  {safe(s.subject or '')}")
    for c in report.candidates:
        note(f"not reported: {c.title} at {c.at[:10]} ({c.ratio:.3f}x): {c.why}")
    if report.candidates or any(r.confirmed != "confirmed" for r in report.every_regression):
        note("to decide by re-timing (both commits, interleaved, on this machine): tgstore regressions --confirm "
             "--repo TINYGRAD --cases FILE (the sweep's cases)")
    for s in report.series:
        if s.detectable is None or s.detectable > 0.2:
            note(f"noise: {s.title} varies {s.noise:.1%} per commit; " + (
                f"the detector finds steps under {s.detectable:.0%} less than 90% of the time here"
                if s.detectable is not None else f"{s.commits} commits are too few to call a step"))
