"""Opening a tgstore database: SQLite in WAL mode, one writer, foreign keys on."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError

# How long a writer waits for another writer (an ingest, a sweep) to finish before giving up.
BUSY_TIMEOUT_MS = int(float(os.environ.get("TGSTORE_BUSY_TIMEOUT", "30")) * 1000)


class DatabaseError(Exception):
    """A database problem worth a clear one-line message (not a file, a newer schema, ...)."""


class DatabaseLocked(DatabaseError):
    """Another process held the write lock for longer than the busy timeout."""


def open_engine(path: Path | str, *, writer: bool = True, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Engine:
    """An engine on the SQLite file `path` (created if absent). Does not migrate; see tgstore.db.migrate.

    A `writer` engine takes the write lock when a transaction begins, so a second writer waits for it
    (up to the busy timeout) instead of failing half-way; readers (`writer=False`) never wait for writers.
    """
    path = Path(path)
    if path.exists() and path.is_dir():
        raise DatabaseError(f"{path} is a directory, not a database file")
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise DatabaseError(f"{path} is not a SQLite database")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": busy_timeout_ms / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # pysqlite's implicit transactions would defeat BEGIN IMMEDIATE; let SQLAlchemy emit BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        cursor.execute("PRAGMA journal_mode = WAL")  # readers (Datasette) never block the one writer
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        # Take the write lock up front: a second writer waits (busy_timeout) instead of failing mid-transaction,
        # and when it gives up, nothing has been written yet.
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")
        except OperationalError as exc:
            if is_locked_error(exc):
                raise DatabaseLocked(
                    f"{path} is locked by another writer (an ingest or sweep still running?) and stayed locked for "
                    f"{busy_timeout_ms / 1000:g}s; nothing was written. Try again when it has finished, or wait "
                    "longer with TGSTORE_BUSY_TIMEOUT=SECONDS") from exc
            raise

    return engine


def is_locked_error(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and "locked" in str(exc.orig).lower()
