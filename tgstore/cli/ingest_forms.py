"""`ingest`'s three other jobs as commands of their own (issue 46): `sweep` (commits of a repository, was
`ingest --rev`), `ingest-bundle` (bundles `extract` wrote, was `ingest --bundle`) and `capture` (every kernel a
program or test run lowers, was `ingest --capture`). Each takes only its own options and runs `ingest`'s code; the
old spellings still work and say which command replaced them (cli/extract.py `replaced_by`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import (
    CaptureOption,
    CasesOption,
    CommandArgument,
    JobsOption,
    RepoOption,
    SuiteOption,
    TinygradOption,
    command,
    db_path,
)
from tgstore.cli.extract import ForceOption, KeepBundleOption, NoSkipOption, ingest_bundles, run_ingest
from tgstore.cli.settings import ExtractionSettings, extraction_settings

RevOption = Annotated[list[str], typer.Option(
    "--rev", help="Commits of --repo: A..B (B's first-parent line after A, oldest first, B included), a sha, branch "
    "or tag (repeatable).", show_default=False)]
DaskOption = Annotated[str | None, typer.Option(
    "--dask", help="Run the extractions on a Dask cluster: tcp://HOST:PORT of a `dask scheduler`, or local:N to start "
    "N worker processes here (needs tgstore[dask]).", show_default=False)]
WorkerRepoOption = Annotated[str | None, typer.Option(
    "--worker-repo", help="With --dask: the path of a tinygrad clone on every worker (else each commit's package is "
    "sent as a git archive).", show_default=False)]
CaptureCommand = Annotated[list[str], typer.Argument(
    help="The command to run, after -- (python SCRIPT, python -m MODULE, pytest ARGS).", show_default=False)]


@command(app, "sweep")
@extraction_settings
def sweep(
    ctx: typer.Context,
    settings: ExtractionSettings,
    rev: RevOption,
    repo: RepoOption = None,
    cases: CasesOption = None,
    suite: SuiteOption = None,
    capture: CaptureOption = False,
    command_args: CommandArgument = None,
    force: ForceOption = False,
    no_skip: NoSkipOption = False,
    jobs: JobsOption = None,
    dask: DaskOption = None,
    worker_repo: WorkerRepoOption = None,
) -> None:
    """Extract each commit of a tinygrad repository (--rev A..B) and store it: incremental (a commit whose ok run
    holds what is asked is skipped, each line says why; failed ones are retried), resumable, parallel with --jobs,
    on a Dask cluster with --dask; with --capture -- COMMAND, the command is run in each commit's checkout instead of
    a suite. Exits 1 if an extraction failed. (Was `ingest --rev`.)"""
    db = db_path()
    run_ingest(ctx, db, settings, None, None, cases, suite, capture, command_args, force, no_skip, None, repo, rev,
               jobs, dask, worker_repo)


@command(app, "ingest-bundle")
def ingest_bundle(
    paths: Annotated[list[Path], typer.Argument(help="Bundle files written by `tgstore extract`, or one directory "
                                                "of them (*.jsonl, in name order).", show_default=False)],
    force: ForceOption = False,
) -> None:
    """Store bundles as `tgstore extract` wrote them (on this machine or another): each validated before the
    database is opened; a truncated one is stored as a failed run. Exits 1 if a bundle failed. (Was
    `ingest --bundle`.)"""
    db = db_path()
    ingest_bundles(db, paths, force)


@command(app, "capture")
@extraction_settings
def capture(
    ctx: typer.Context,
    settings: ExtractionSettings,
    command_args: CaptureCommand,
    tinygrad: TinygradOption = None,
    force: ForceOption = False,
    keep_bundle: KeepBundleOption = None,
) -> None:
    """Run a Python command (after --) with a tinygrad (installed, or --tinygrad PATH) and store every kernel it
    lowered, one case per pytest test (or one for the whole command), with its call site; the command failing is
    recorded (the run is partial), what it lowered is kept. In each commit of a sweep: `tgstore sweep --rev A..B
    --capture -- COMMAND`. (Was `ingest --capture`.)"""
    db = db_path()
    run_ingest(ctx, db, settings, tinygrad, None, None, None, True, command_args, force, False, keep_bundle, None,
               None, None, None, None)
