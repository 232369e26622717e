"""`tgstore db ...`: schema migrations and garbage collection."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from tgstore.cli.app import db_app
from tgstore.cli.common import command, db_path, open_db
from tgstore.cli.output import emit, note


@command(db_app, "upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Create the database or migrate it up to REVISION (default head)."""
    db = db_path()
    from tgstore.db import current_revision, upgrade

    engine = open_db(db, migrate=False)
    upgrade(engine, revision)
    note(f"{db}: schema at {current_revision(engine)}")


@command(db_app, "downgrade", context_settings={"ignore_unknown_options": True})  # `downgrade -1`
def db_downgrade(revision: Annotated[str, typer.Argument(help="Target revision (e.g. -1, base, 0001).")]) -> None:
    """Migrate the database down to REVISION."""
    db = db_path()
    from tgstore.db import current_revision, downgrade

    engine = open_db(db, migrate=False)
    downgrade(engine, revision)
    note(f"{db}: schema at {current_revision(engine)}")


@command(db_app, "gc")
def db_gc(vacuum: Annotated[bool, typer.Option("--vacuum", help="Also VACUUM to give the space back to the "
                                               "filesystem (rewrites the file).")] = False) -> None:
    """Delete stored artifacts that no run refers to any more (left by --force, retries or widened runs)."""
    db = db_path()
    from tgstore.db.gc import collect_garbage

    engine = open_db(db)
    deleted = collect_garbage(engine)
    if vacuum:
        with engine.connect() as conn:
            conn.connection.dbapi_connection.execute("VACUUM")
    removed = ", ".join(f"{n} {table}" for table, n in deleted.items() if n) or "nothing"
    note(f"{db}: removed {removed}" + (", vacuumed" if vacuum else ""))


@command(db_app, "current")
def db_current(as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False) -> None:
    """Print the database's schema revision and the newest this tgstore knows (read without Alembic)."""
    db = db_path()
    from tgstore.cli.common import open_reader
    from tgstore.db.read import head, stored_revision

    current = stored_revision(open_reader(db, check=False))
    if as_json:
        emit(json.dumps({"current": current, "head": head()}))
        return
    emit(f"current: {current}  head: {head()}")


@command(db_app, "check")
def db_check(fix: Annotated[bool, typer.Option("--fix", help="Repair what can be repaired: JSON values with NaN or "
                                               "Infinity (written by older tgstores) become valid JSON.")] = False,
             as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False) -> None:
    """Check the database: SQLite's integrity and foreign-key checks, every JSON column valid, every view readable.
    Exits 1 if a problem is left (after --fix, if given)."""
    db = db_path()
    from tgstore.db.repair import check_database

    engine = open_db(db, migrate=False, writer=fix)
    report = check_database(engine, repair=fix)
    if as_json:
        emit(json.dumps(report.to_json()))
    else:
        for line in report.integrity:
            note(f"integrity: {line}")
        if report.foreign_keys:
            note(f"foreign keys: {report.foreign_keys} rows refer to rows that do not exist")
        for where, rowids in report.bad_json.items():
            note(f"{where}: {len(rowids)} values are not valid JSON (NaN or Infinity?); `tgstore db check --fix` "
                 "repairs them")
        for view, problem in report.unreadable_views.items():
            note(f"view {view} cannot be read: {problem}")
        if report.fixed:
            note(f"fixed {report.fixed} values")
        emit(f"{db}: {'ok' if report.ok else 'problems found'}")
    if not report.ok:
        raise typer.Exit(1)
