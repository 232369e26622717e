"""Commands that run tinygrad: ingest (one tinygrad, bundles, or a sweep of commits), extract, bisect."""

from __future__ import annotations

import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tgstore.cli.app import app
from tgstore.cli.common import (
    DEFAULT_REPO,
    BackendOption,
    CaptureOption,
    CasesOption,
    CommandArgument,
    DebugOption,
    JobsOption,
    RenderersOption,
    RepoOption,
    SuiteOption,
    TimeoutOption,
    TimeRunsOption,
    TinygradOption,
    capture_command,
    command,
    db_path,
    fail,
    make_plan,
    open_db,
    resolve_root,
)
from tgstore.cli.output import emit, err, error, note, plural, safe
from tgstore.cli.settings import ExtractionSettings, extraction_settings, with_timing
from tgstore.extract.runner import Echo
from tgstore.store import after_store

IgnoreNamesOption = Annotated[bool, typer.Option("--ignore-names", help="A change of kernel names alone is not a "
                                                 "change (names are masked in sources and ASTs before comparing).")]


@contextmanager
def case_progress(plan, description: str) -> Iterator[tuple[Callable[[str], None], Echo | None]]:
    """A progress bar over the suite's cases on stderr (a terminal only); yields the per-case callback and, in
    capture mode, what passes the command's own output on (command_echo)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tgstore.pipeline import CaseFileError, read_case_names

    try:
        total = None if plan.capture is not None else len(read_case_names(plan.case_files))
    except CaseFileError as exc:
        raise fail(str(exc)) from None
    # not redirected: the captured command's stdout stays tgstore's stdout, whatever the bar on stderr does
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[case]}"), console=err, transient=True,
                  disable=not err.is_terminal, redirect_stdout=False, redirect_stderr=False) as progress:
        task = progress.add_task(description, total=total or None, case="")

        def on_case(name: str) -> None:
            progress.update(task, advance=1, case=safe(name))

        yield on_case, command_echo(progress) if plan.capture is not None else None


def command_echo(progress) -> Echo:
    """The captured command's output as it comes, a line at a time: its stdout to tgstore's stdout, its stderr to
    tgstore's stderr, each printed above the progress bar where that stream is the bar's terminal. tgstore's own
    progress and report stay on stderr."""
    lock = threading.Lock()

    def echo(stream: str, line: bytes) -> None:
        target = sys.stdout if stream == "stdout" else sys.stderr
        with lock:
            if progress.live.is_started and err.is_terminal and target.isatty():
                progress.console.print(Text.from_ansi(line.decode("utf-8", "replace").rstrip("\r\n")),
                                       highlight=False, soft_wrap=True)
            else:
                target.flush()
                target.buffer.write(line)
                target.flush()

    return echo




@after_store.register
def parity_after_store(engine, reports: list) -> None:
    """After a sweep or bisect stores a run: the Svod runs of its cases, their parity with it decided (the command
    line joins the history and Svod wings; neither imports the other)."""
    from tgstore.svod.parity_store import refresh_after_ingest

    refresh_after_ingest(engine, reports)


def run_failed(status: str) -> bool:
    from tgstore.store.rows import FAILED  # the store's; imported once a run has ended, not at the CLI's start-up

    return status in FAILED


def print_report(report, source: str | None = None) -> None:
    where = f"{safe(source)}: " if source else ""
    if report.skipped:
        if report.timed:
            note(f"{where}{report.commit[:12]}: already ingested (run {report.run_id}); its kernels were timed again")
        else:
            note(f"{where}{report.commit[:12]}: already ingested (run {report.run_id}); --force to redo")
        return
    colour = {"ok": "green", "partial": "yellow"}.get(report.status, "red")
    line = Text(f"{where}{safe(report.commit[:12])}: run {report.run_id} ")
    line.append(report.status, style=colour)
    line.append(f", {plural(report.cases, 'case')} ({report.failed_cases} failed), "
                f"{plural(report.new_case_results, 'new case result')}")
    if report.kept_run_id is not None:
        line.append(f"; the ok run {report.kept_run_id} stays current (this attempt is kept in failed_runs)")
    if report.carried_renderers:
        line.append(f"; {','.join(report.carried_renderers)} sources kept from the run it replaced")
    err.print(line)
    if report.error:
        note(f"  {report.error}", "red")


def refresh_parity(engine, reports: list) -> None:
    """Svod runs of the cases a new run holds: their stored parity with it, decided now (one cheap query when the
    database holds no Svod run), so the parity page does not say "not decided" for it."""
    from tgstore.svod.parity_store import refresh_after_ingest

    report = refresh_after_ingest(engine, reports, skip_failed=True)
    if report is not None and (report.decided or report.failed):
        note(f"Svod parity: {plural(report.decided, 'Svod run × tinygrad run pair')} decided against this run"
             + (f"; {len(report.failed)} could not be: {report.failed[0]}" if report.failed else ""))


ForceOption = Annotated[bool, typer.Option("--force", help="Re-extract and replace runs that are already ok.")]
NoSkipOption = Annotated[bool, typer.Option("--no-skip", help="In a sweep, extract every commit: do not copy the run "
                                            "of a commit whose package is the same, or whose parent's run read no "
                                            "file it changes.")]
KeepBundleOption = Annotated[Path | None, typer.Option("--keep-bundle", help="Also write the bundle here.")]
# `ingest`'s old spellings of the jobs that are commands of their own now (cli/ingest_forms.py): kept, and said
REPLACED = {"rev": "tgstore sweep --rev ...", "bundle": "tgstore ingest-bundle PATHS",
            "capture": "tgstore capture -- COMMAND"}


def replaced_by(given: dict[str, object]) -> str | None:
    """`tgstore ingest --rev|--bundle|--capture` still works; the line saying which command does that now (printed
    once the work ended well: an error stays one line)."""
    return next((f"note: `tgstore ingest --{option}` is `{replacement}` now (this spelling keeps working)"
                 for option, replacement in REPLACED.items() if given.get(option)), None)


@command(app)
@extraction_settings
def ingest(
    ctx: typer.Context,
    settings: ExtractionSettings,
    tinygrad: TinygradOption = None,
    bundle: Annotated[list[Path] | None, typer.Option("--bundle", help="Ingest bundle file(s) written by "
                                                      "`tgstore extract` instead of extracting, or a directory "
                                                      "of them (*.jsonl, in name order).")] = None,
    cases: CasesOption = None,
    suite: SuiteOption = None,
    capture: CaptureOption = False,
    command_args: CommandArgument = None,
    force: ForceOption = False,
    no_skip: NoSkipOption = False,
    keep_bundle: KeepBundleOption = None,
    repo: RepoOption = None,
    rev: Annotated[list[str] | None, typer.Option("--rev", help="Sweep commits of --repo: A..B (B's first-parent "
                                                  "line after A, oldest first, B included), a sha, branch or tag "
                                                  "(repeatable).")] = None,
    jobs: JobsOption = None,
    dask: Annotated[str | None, typer.Option("--dask", help="Run a sweep's extractions on a Dask cluster: "
                                             "tcp://HOST:PORT of a `dask scheduler`, or local:N to start N worker "
                                             "processes here (needs tgstore[dask]).", show_default=False)] = None,
    worker_repo: Annotated[str | None, typer.Option("--worker-repo", help="With --dask: the path of a tinygrad clone "
                                                    "on every worker (else each commit's package is sent as a "
                                                    "git archive).", show_default=False)] = None,
) -> None:
    """Extract a tinygrad (installed, or --tinygrad PATH) over the case suite and store it in the database. Its
    other jobs have commands of their own: `sweep` (--rev), `ingest-bundle` (--bundle), `capture` (--capture).

    Creates and migrates the database if needed. A crash or hang of the extraction is stored as a failed run (an
    ok run of the same commit stays current). A tinygrad whose ok run already holds what is asked (renderers,
    stages, rewrite steps, DEBUG level, extractor) is not extracted again. With --rev, sweeps commits of a git
    repository: commits whose ok run holds what is asked are skipped (each line says why), the others extracted
    (saying what their run lacked), failed ones retried. Exits 1 if an extraction or a bundle failed.

    With --capture -- COMMAND, runs the command instead of a suite (in the current directory; in a sweep, in each
    commit's checkout) and stores every kernel tinygrad lowered, one case per pytest test (or one for the whole
    command); the command failing is recorded (the run is partial), what it lowered is kept.
    """
    db = db_path()
    replaced = replaced_by({"rev": rev, "bundle": bundle, "capture": capture})
    run_ingest(ctx, db, settings, tinygrad, bundle, cases, suite, capture, command_args, force, no_skip, keep_bundle,
               repo, rev, jobs, dask, worker_repo)
    if replaced:
        note(replaced)


def run_ingest(ctx: typer.Context, db: Path, settings: ExtractionSettings, tinygrad: Path | None,
               bundle: list[Path] | None, cases: list[Path] | None, suite: str | None, capture: bool,
               command_args: list[str] | None, force: bool, no_skip: bool, keep_bundle: Path | None,
               repo: Path | None, rev: list[str] | None, jobs: int | None, dask: str | None,
               worker_repo: str | None) -> None:
    """What `ingest`, `sweep` and `capture` do (cli/ingest_forms.py), each giving the options it has."""
    argv = capture_command(capture, command_args)
    if (dask or worker_repo) and not rev:
        raise fail("--dask and --worker-repo run a sweep's extractions elsewhere: they need --rev")
    if worker_repo and not dask:
        raise fail("--worker-repo names a clone on the Dask workers: it needs --dask")
    if rev or given_on_command_line(ctx, "repo"):
        if not rev:
            raise fail("--repo needs --rev (the commits to sweep)")
        if tinygrad or bundle or keep_bundle:
            raise fail("--rev sweeps commits of --repo; it does not combine with --tinygrad, --bundle or --keep-bundle")
        plan = settings.plan(cases, suite=suite, capture=argv)
        sweep_commits(db, repo or DEFAULT_REPO, rev, plan, jobs or 1, force, dask=dask, worker_repo=worker_repo,
                      skip=not no_skip)
        return
    if bundle:
        if settings.time or settings.time_runs or settings.compile_times:
            raise fail("--time times an extraction; a bundle is ingested as it was extracted (extract --time)")
        if argv is not None or suite or cases or jobs is not None:
            raise fail("--bundle ingests bundles as they are; it does not combine with --capture, --suite, --cases "
                       "or --jobs")
        ingest_bundles(db, bundle, force)
        return
    from tgstore.pipeline import default_workers, extract_and_ingest

    plan = settings.plan(cases, suite=suite, capture=argv, capture_cwd=Path.cwd())
    plan.workers = jobs or default_workers()
    root = resolve_root(tinygrad, settings.backend)
    if keep_bundle is not None:
        check_bundle_path(keep_bundle, "--keep-bundle")
    engine = open_db(db)
    with case_progress(plan, "extracting") as (on_case, echo):
        report = extract_and_ingest(engine, root, plan, force=force, keep_bundle=keep_bundle, on_case=on_case,
                                    echo=echo)
    print_report(report)
    refresh_parity(engine, [report])
    if run_failed(report.status):
        raise typer.Exit(1)


def given_on_command_line(ctx: typer.Context, parameter: str) -> bool:
    """Whether the option was typed, not taken from its environment variable (TGSTORE_REPO names the default
    repository for sweeps without making every ingest one)."""
    source = ctx.get_parameter_source(parameter)
    return source is not None and source.name == "COMMANDLINE"


def ingest_bundles(db: Path, paths: list[Path], force: bool) -> None:
    """Bundle files: every one validated before the database is opened, then each stored. A directory (bundles
    handed back by workers): its *.jsonl files in name order, each read and stored in turn, a bad one reported on
    one line and skipped. A truncated bundle is stored as a failed run. Exits 1 if any bundle failed."""
    from tgstore.bundle import BundleError, read_bundle
    from tgstore.store.ingest import ingest_bundle

    files = [p for p in paths if not p.is_dir()]
    folders = [p for p in paths if p.is_dir()]
    if files and folders:
        raise fail("--bundle takes bundle files or one directory of them, not both")
    if len(folders) > 1:
        raise fail("--bundle takes one directory of bundles at a time")
    try:
        bundles = [read_bundle(path) for path in files]
    except BundleError as exc:
        raise fail(str(exc)) from None
    batch = sorted(folders[0].glob("*.jsonl")) if folders else []
    if folders and not batch:
        raise fail(f"{folders[0]} holds no bundle (*.jsonl) files")
    engine = open_db(db)
    failed = False

    def store(loaded) -> None:
        nonlocal failed
        report = ingest_bundle(engine, loaded, force=force)
        print_report(report, str(loaded.path))
        refresh_parity(engine, [report])
        failed |= run_failed(report.status) and not report.skipped

    for loaded in bundles:
        store(loaded)
    for i, path in enumerate(batch, 1):
        try:
            loaded = read_bundle(path)  # one at a time: a directory of bundles may not fit in memory together
        except BundleError as exc:
            error(f"[{i}/{len(batch)}] {exc}; skipped")
            failed = True
            continue
        store(loaded)
    if failed:
        raise typer.Exit(1)


def sweep_commits(db: Path, repo: Path, revs: list[str], plan, jobs: int, force: bool, *, dask: str | None = None,
                  worker_repo: str | None = None, skip: bool = True) -> None:
    from tgstore.cli.progress import SweepReporter
    from tgstore.extract.names import UnknownName, check_backend, devices_at
    from tgstore.git import open_repo, resolve_revs
    from tgstore.history.sweep import SweepError, sweep

    try:
        root = open_repo(repo)
        commits = resolve_revs(root, revs)  # a bad repo or rev fails here, before the database is touched
        # a device of the first or the last commit's era (devices are renamed now and then)
        check_backend(plan.backend, devices_at(root, commits[0].sha) | devices_at(root, commits[-1].sha))
    except (SweepError, UnknownName) as exc:
        raise fail(str(exc)) from None

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # like Ctrl-C: kill the extractions in flight, keep what is ingested
    workers = None
    try:
        if dask:
            from tgstore.history.dask_workers import DaskWorkers

            workers = DaskWorkers(dask, root, worker_repo=worker_repo)
            note(f"Dask cluster at {dask}: {workers.width} worker thread{'s' * (workers.width != 1)}")
        engine = open_db(db)  # after the cluster answered: an unreachable scheduler writes nothing
        with SweepReporter(err) as reporter:
            summary = sweep(engine, root, commits, plan, jobs=jobs, force=force, reporter=reporter, workers=workers,
                            skip=skip)
            reporter.summary(summary)
    except SweepError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail("interrupted; the commits ingested so far are kept, run the sweep again to resume", 130) from None
    finally:
        if workers is not None:
            workers.close()
    if summary.failed:
        raise typer.Exit(1)


@command(app)
def bisect(
    case: Annotated[str, typer.Argument(help="The case whose output to follow (e.g. matmul).", show_default=False)],
    good: Annotated[str, typer.Option("--good", help="The older commit (sha, branch, tag).", show_default=False)],
    bad: Annotated[str, typer.Option("--bad", help="The newer commit, a descendant of --good.", show_default=False)],
    repo: RepoOption = None,
    what: Annotated[str, typer.Option("--what", help="Compare the generated source, the kernel ASTs, or one pass's "
                                      "output (pass:NAME, e.g. pass:expander; only CASE is extracted, with "
                                      "--renderer's passes).")] = "source",
    metric: Annotated[str, typer.Option("--metric", help="output: the first commit whose output (--what) differs; "
                                        "time: the first commit where the case's kernels got slower (--threshold) "
                                        "on this machine, timing commits as needed; compile: the same for how long "
                                        "each kernel took to lower (--renderers' first).")] = "output",
    threshold: Annotated[str, typer.Option("--threshold", help="--metric time: how much slower counts, as a "
                                           "percentage or fraction, beyond the timings' noise.")] = "10%",
    time_runs: TimeRunsOption = None,
    kernel: Annotated[int | None, typer.Option("--kernel", help="--metric time: follow only the kernel at this "
                                               "schedule position (default: any kernel of 10 us or more).",
                                               show_default=False)] = None,
    renderer: Annotated[str, typer.Option("--renderer", help="Whose generated source (--what source).")] = "C",
    ignore_names: IgnoreNamesOption = False,
    cases: CasesOption = None,
    suite: SuiteOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
) -> None:
    """Find the first commit in GOOD..BAD (first-parent line) where CASE's generated source (or kernel ASTs)
    differs from GOOD's, by binary search over stored runs, extracting and ingesting only the commits missing."""
    db = db_path()
    from tgstore.git import open_repo, verify_rev
    from tgstore.history.bisect import BisectError, bisect_case, case_names
    from tgstore.history.sweep import SweepError

    plan = make_plan(cases, backend, renderers, debug, timeout, suite=suite)
    if metric not in ("output", "time", "compile"):
        raise fail(f"--metric must be output, time or compile, not {metric!r}")
    if metric in ("time", "compile"):
        from tgstore.cli.times import bisect_on_time

        bisect_on_time(case, good, bad, repo or DEFAULT_REPO, db,
                       with_timing(plan, metric == "time", time_runs if metric == "time" else None, True), threshold,
                       kernel, metric)
        return
    if what.startswith("pass:"):
        from tgstore.cli.blame import bisect_by_pass

        bisect_by_pass(case, good, bad, repo or DEFAULT_REPO, db, plan, what.removeprefix("pass:"), renderer)
        return
    try:
        root = open_repo(repo or DEFAULT_REPO)
        known = case_names(plan.case_files)  # the cheap checks first: nothing is written when they fail
        if what not in ("source", "ast"):
            raise BisectError(f"--what must be source, ast or pass:NAME, not {what!r}")
        if case not in known:
            raise BisectError(f"unknown case {case!r}; the suite's cases are: {', '.join(known)}")
        verify_rev(root, good), verify_rev(root, bad)
        engine = open_db(db)
        result = bisect_case(engine, root, case, good, bad, plan, what=what, renderer=renderer,
                             ignore_names=ignore_names, log=note)
    except (BisectError, SweepError) as exc:
        raise fail(str(exc)) from None
    label = f"{renderer} source" if what == "source" else "kernel ASTs"
    first = result.first
    emit(f"{first.sha} {first.date} {first.subject}")
    note(f"first commit where case {case!r}'s {label} differs from {good}; {result.commits} commits in range, "
         f"{len(result.looked_at)} looked at, {result.extractions} extractions")
    if result.untestable_before:
        note(f"warning: {len(result.untestable_before)} commits just before it could not be extracted; the change "
             f"may be in one of them: {' '.join(c.sha[:10] for c in result.untestable_before)}")


@command(app)
@extraction_settings
def extract(
    settings: ExtractionSettings,
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Where to write the JSON-lines bundle.")],
    tinygrad: TinygradOption = None,
    cases: CasesOption = None,
    suite: SuiteOption = None,
    capture: CaptureOption = False,
    command_args: CommandArgument = None,
    jobs: JobsOption = None,
) -> None:
    """Only extract: write a bundle (docs/bundle-format.md) for `tgstore ingest-bundle` here or elsewhere.
    --capture -- COMMAND captures the kernels a command lowers, as `ingest --capture` does."""
    from tgstore.pipeline import default_workers, extract_bundle

    plan = settings.plan(cases, suite=suite, capture=capture_command(capture, command_args), capture_cwd=Path.cwd())
    plan.workers = jobs or default_workers()
    root = resolve_root(tinygrad, settings.backend)
    check_bundle_path(out_file, "--out")
    with case_progress(plan, "extracting") as (on_case, echo):
        result = extract_bundle(root, out_file, plan, on_case=on_case, echo=echo)
    if result.status != "ok" and no_space(result.stderr):
        out_file.unlink(missing_ok=True)  # a bundle cut off by a full disk is no bundle
        raise fail(f"no space left on the device holding {out_file}; the extraction stopped and no bundle was kept")
    note(f"{out_file}: extraction {result.status} in {result.seconds:.1f}s")
    if result.status != "ok":
        note(result.stderr[-4000:])
        raise typer.Exit(1)


def no_space(stderr: str) -> bool:
    """The child stopped because the disk is full (ENOSPC in its traceback)."""
    return "No space left on device" in stderr or "[Errno 28]" in stderr


def check_bundle_path(path: Path, option: str) -> None:
    """A bundle is written to a regular file (new or replaced), never a directory, device or pipe: the same rule
    `ingest --bundle` reads by."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise fail(f"{option} {path}: the directory {path.parent} does not exist") from None
        return
    if stat.S_ISDIR(mode):
        raise fail(f"{option} {path} is a directory; {option} names the bundle file to write")
    if not stat.S_ISREG(mode):
        raise fail(f"{option} {path} is not a regular file (a device or a pipe?); a bundle is written to a file")
