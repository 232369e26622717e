"""Svod commands: ingest Svod's output beside tinygrad's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tgstore.cli import app
from tgstore.cli.common import DbOption, command, open_db
from tgstore.cli.output import err, error, note, safe


@command(app, "ingest-svod")
def ingest_svod(
    logfiles: Annotated[list[Path], typer.Argument(help="Svod test log(s): the output of `RUST_LOG=...=debug cargo "
                                                   "test NAME -- --nocapture`.", show_default=False)],
    case: Annotated[str, typer.Option("--case", help="The tinygrad case the Svod test corresponds to (e.g. add); "
                                      "queries compare the two by this name.", show_default=False)],
    svod_commit: Annotated[str | None, typer.Option("--svod-commit", help="The Svod commit the logs come from.")]
    = None,
    db: DbOption = Path("tgstore.db"),
) -> None:
    """Store Svod (Rust port of tinygrad) test logs for a case: events, per-stage node counts, stage trees, kernels,
    pattern-match counts, and the whole log text.

    Creates and migrates the database if needed. Problems in a log (a malformed JSON line, an unterminated dump) are
    printed as FILE:LINE: MESSAGE and stored; the rest of the log is kept. Re-ingesting a stored log does nothing.
    Exits 1 if a file could not be stored at all (missing, not text, empty, not a Svod log).
    """
    from tgstore.svod.store import SvodLogError, ingest_svod_log

    engine = open_db(db)
    failed = 0
    for path in logfiles:
        try:
            report = ingest_svod_log(engine, path, case, svod_commit)
        except SvodLogError as exc:
            error(str(exc))
            failed += 1
            continue
        if report.skipped:
            extra = f"; Svod commit set to {report.svod_commit}" if report.commit_filled else ""
            note(f"{path}: already stored for case {case!r} (svod run {report.run_id}){extra}")
        else:
            colour = "yellow" if report.problems else "green"
            line = Text(safe(
                f"{path}: svod run {report.run_id} for case {case!r}: {report.lines} lines, {report.events} events, "
                f"{report.kernels} kernels, {report.per_stage} per-stage counts, {report.stage_dumps} stage dumps, "
                f"{report.pattern_matches} pattern matches, {report.new_trees} new trees, "))
            line.append(f"{len(report.problems)} problems", style=colour)
            err.print(line)
        for problem in report.problems:
            note(f"{path}:{problem.line_no}: {problem.message}")
    if failed:
        raise typer.Exit(1)
