"""`tgstore times`: how fast each kernel of a case ran at a commit, on one machine, optionally against another
commit timed on the same machine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import JsonOption, command, db_path, fail, open_db, open_reader, print_json
from tgstore.cli.output import emit, note, print_table
from tgstore.units import format_ns

MachineOption = Annotated[str | None, typer.Option(
    "--machine", help="The machine's fingerprint (or a prefix), when the commit was timed on several.",
    show_default=False)]


@command(app)
def times(
    case: Annotated[str, typer.Argument(help="The case whose kernels to show (e.g. matmul).", show_default=False)],
    commit: Annotated[str | None, typer.Option("--commit", help="A stored commit (sha or prefix); default: the "
                                               "newest timed one.", show_default=False)] = None,
    against: Annotated[str | None, typer.Option("--against", help="Compare with this commit, timed on the same "
                                                "machine (refused otherwise).", show_default=False)] = None,
    machine: MachineOption = None,
    compile_: Annotated[bool, typer.Option("--compile", help="Compile times instead: how long tinygrad took to "
                                           "schedule the case and lower each kernel per renderer, and its slowest "
                                           "passes (ingest --time or --compile-times).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Each kernel of CASE at a commit: best and median time over the timed runs, their spread, tinygrad's ops and
    memory estimates and the GFLOP/s and GB/s they give, on the machine that timed it (ingest --time). With
    --compile: the scheduling and each kernel's lowering per renderer, with its three slowest top-level passes."""
    db = db_path()
    from tgstore.answers.times import times as times_answer

    if compile_:
        if against is not None:
            raise fail("--against compares kernel run times; for compile times over commits see "
                       f"tgstore query compile_time_history -p case_name={case}")
        compile_times(open_reader(db), case, commit, machine, as_json)
        return
    timed = times_answer(open_reader(db), case, commit, against, machine)
    if as_json:
        return print_json(timed)
    m = timed.machine
    note(f"case {case} at {timed.commit[:12]} on machine {m['fingerprint']} ({m.get('hostname')}, "
         f"{m.get('cpu_model')}, {m.get('cores')} cores, {m.get('device')}, {m.get('compiler_version')}); "
         f"calibration {format_ns(timed.calibration_ns)}")
    print_table(["#", "kernel", "status", "best", "median", "spread", "GFLOP/s", "GB/s"],
                [[k["index"], k["name"] or "", k["status"], format_ns(k["ns_min"]), format_ns(k["ns_median"]),
                  f"{k['spread'] * 100:.1f}%" if k["spread"] is not None else "",
                  f"{k['gflops']:.2f}" if k["gflops"] is not None else "",
                  f"{k['gbps']:.2f}" if k["gbps"] is not None else ""] for k in timed.kernels])
    for k in (k for k in timed.kernels if k["status"] != "ok"):
        first = (k["error"] or "").strip().splitlines()[:1] or [""]
        note(f"kernel {k['index']} {k['status']}: {first[0]}", "red")
    emit(f"total (best): {format_ns(timed.total_ns)}")
    if (base := timed.against) is not None:
        emit(f"against {base['commit'][:12]}: {format_ns(base['total_ns'])} -> {format_ns(timed.total_ns)} "
             f"({timed.total_ns / base['total_ns'] if base['total_ns'] else float('nan'):.3f}x)")
        for c in base["kernels"][:10]:
            emit(f"  #{c['index']} {c['name']}: {format_ns(c['base_ns'])} -> {format_ns(c['ns'])} ({c['ratio']}x)")


def top_passes(kernel: dict, n: int = 3) -> list[tuple[str, int]]:
    """The `n` top-level passes that took longest, by name (a pass run several times adds up)."""
    by_name: dict[str, int] = {}
    for p in kernel["passes"]:
        if p["depth"] == 0:
            by_name[p["name"]] = by_name.get(p["name"], 0) + p["us"]
    return sorted(by_name.items(), key=lambda x: -x[1])[:n]


def compile_times(reader, case: str, commit: str | None, machine: str | None, as_json: bool) -> None:
    from tgstore.answers.times import compile_times as compile_answer

    found = compile_answer(reader, case, commit, machine)
    if as_json:
        return print_json(found)
    note(f"case {case} at {found.commit[:12]} on machine {found.machine}: scheduling and lowering (the device "
         "compiler not included); a pass's time includes the passes nested in it")
    kernels = found.kernels
    print_table(["#", "kernel", "renderer", "time", "slowest passes"],
                [["" if k["index"] < 0 else k["index"], k["name"] or "", k["renderer"],
                  format_ns(k["total_us"] * 1000),
                  ", ".join(f"{n} {format_ns(u * 1000)}" for n, u in top_passes(k))] for k in kernels])
    lowering = sum(k["total_us"] for k in kernels if k["index"] >= 0)
    emit(f"total: scheduling {format_ns(sum(k['total_us'] for k in kernels if k['index'] < 0) * 1000)}, lowering "
         f"{format_ns(lowering * 1000)}")


def bisect_on_time(case: str, good: str, bad: str, repo: Path, db: Path, plan, threshold: str,
                   kernel: int | None = None, metric: str = "time") -> None:
    """`tgstore bisect CASE --metric time`: print the first slower commit, the kernels that changed most there, and
    the diff command that shows which pass explains it."""
    from tgstore.git import open_repo, verify_rev
    from tgstore.history.bisect import BisectError
    from tgstore.history.bisect_time import bisect_time, parse_threshold
    from tgstore.history.sweep import SweepError
    from tgstore.store.timings import TimingError

    try:
        fraction = parse_threshold(threshold)
        root = open_repo(repo)
        verify_rev(root, good), verify_rev(root, bad)
        engine = open_db(db)
        result = bisect_time(engine, root, case, good, bad, plan, threshold=fraction, kernel=kernel, metric=metric,
                             log=note)
    except (BisectError, SweepError, TimingError) as exc:
        raise fail(str(exc)) from None
    first = result.first
    emit(f"{first.sha} {first.date} {first.subject}")
    ratio = result.first_times.total_ns / result.before_times.total_ns
    what = "slower" if metric == "time" else "slower to lower"
    note(f"first commit where case {case!r}{'' if kernel is None else f' kernel #{kernel}'} is {what} than at "
         f"{good} by more than {fraction:.0%} and the noise; case total "
         f"{format_ns(result.before_times.total_ns)} at {result.before.sha[:10]} -> "
         f"{format_ns(result.first_times.total_ns)} ({ratio:.2f}x); {result.commits} commits in range, "
         f"{len(result.looked_at)} looked at, {result.timings} timed")
    for change in result.slower_kernels(fraction) or result.changes[:5]:
        note(f"  kernel #{change['index']} {change['base_name']} -> {change['name']}: "
             f"{format_ns(change['base_ns'])} -> {format_ns(change['ns'])} ({change['ratio']}x)")
    note(f"what changed: tgstore diff {result.before.sha[:10]} {first.sha[:10]} --case {case} --stages")
    if result.untestable_before:
        note(f"warning: {len(result.untestable_before)} commits just before it could not be timed; the change may "
             f"be in one of them: {' '.join(c.sha[:10] for c in result.untestable_before)}")


@command(app)
def slowdowns(
    a: Annotated[str | None, typer.Argument(help="The older commit (default: the second newest timed).",
                                            show_default=False)] = None,
    b: Annotated[str | None, typer.Argument(help="The newer commit (default: the newest timed).",
                                            show_default=False)] = None,
    case: Annotated[str | None, typer.Option("--case", help="Only this case's kernels.", show_default=False)] = None,
    machine: MachineOption = None,
    threshold: Annotated[float, typer.Option("--threshold", min=0, max=100, help="How much slower (a fraction) "
                                             "counts, beyond the timings' noise.")] = 0.1,
    as_json: JsonOption = False,
) -> None:
    """Two commits' kernel times side by side on one machine that timed both, slowest change first: each kernel's
    best time at each, the ratio and the verdict (slower, faster, within noise); what the /-/slowdowns page shows."""
    db = db_path()
    from tgstore.answers.slowdowns import slowdowns as slowdowns_answer

    answer = slowdowns_answer(open_reader(db), a, b, case, machine, threshold)
    if as_json:
        return print_json(answer)
    if answer.message:
        note(answer.message)
    found = answer.comparison
    if found is None or found.machine is None:
        return
    note(f"{found.a.short} -> {found.b.short} on machine {found.machine} ({found.hostname})")
    print_table(["case", "#", "kernel", "best a", "best b", "ratio", "verdict"],
                [[k.case, k.position_b, k.kernel_b or k.kernel_a or "", format_ns(k.us_a * 1000),
                  format_ns(k.us_b * 1000), f"{k.ratio:.3f}x", k.verdict] for k in found.kernels])
