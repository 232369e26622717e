"""`tgstore merge`: combine databases built on other machines (see tgstore.store.merge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import command, db_path, fail, open_db
from tgstore.cli.output import emit, note, plural


@command(app, "merge")
def merge(sources: Annotated[list[Path], typer.Argument(help="tgstore databases to copy from (read-only).",
                                                        show_default=False)],
          as_json: Annotated[bool, typer.Option("--json", help="One JSON object per source on stdout.")] = False,
          ) -> None:
    """Copy every run, commit and artifact of SRC.db... into --db, one transaction per source.

    The same rules as ingest apply: content is stored once, an ok run is never replaced by a worse one, history
    order is recomputed. Merging a source twice adds nothing. A source of an older schema is upgraded in a copy
    (the file itself is not touched); a newer one is refused."""
    db = db_path()
    from tgstore.store.merge import merge_database

    for source in sources:
        if not source.is_file():
            raise fail(f"{source} is not a file; merge takes tgstore database files")
    engine = open_db(db)
    for source in sources:
        report = merge_database(engine, source)
        if as_json:
            emit(json.dumps({"source": str(source), "upgraded_from": report.upgraded_from,
                             "runs_added": report.runs_added, "runs_made_current": report.runs_made_current,
                             "runs_present": report.runs_present, "rows_added": report.rows_added}))
            continue
        upgraded = f" (upgraded from schema {report.upgraded_from} in a copy)" if report.upgraded_from else ""
        if not report.added_anything:
            note(f"{source}{upgraded}: nothing new ({plural(report.runs_present, 'run')} already in {db})")
            continue
        rows = sum(report.rows_added.values()) - report.runs_added
        note(f"{source}{upgraded}: {plural(report.runs_added, 'run')} added ({report.runs_made_current} current), "
             f"{report.runs_present} already present, {plural(rows, 'other row')} added")
