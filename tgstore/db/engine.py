"""Opening a tgstore database: SQLite in WAL mode, one writer, foreign keys on; readers read-only."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from tgstore import settings
from tgstore.db.files import (  # noqa: F401 - re-exported: where the store and tests have always found them
    DatabaseError,
    DatabaseLocked,
    check_file,
    read_only_media,
    sqlite_error_message,
)


def open_engine(path: Path | str, *, writer: bool = True, busy_timeout_ms: int | None = None) -> Engine:
    """An engine on the SQLite file `path`. A writer creates it if absent; a reader opens it read-only (immutable
    on read-only media) and never waits for writers. Does not migrate; see tgstore.db.migrate.

    A `writer` engine takes the write lock when a transaction begins, so a second writer waits for it (up to the
    busy timeout) instead of failing half-way.
    """
    path = Path(path)
    if busy_timeout_ms is None:
        try:
            busy_timeout_ms = settings.busy_timeout_ms()
        except settings.SettingError as exc:
            raise DatabaseError(str(exc)) from None
    check_file(path, writer=writer)
    if writer:
        uri = f"file:{quote(str(path))}"
    else:
        uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if read_only_media(path) else "")

    def connect() -> sqlite3.Connection:
        try:
            return sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, check_same_thread=False)
        except sqlite3.Error as exc:
            raise DatabaseError(sqlite_error_message(path, exc)) from None

    # the URL names the file (engine.url.database, for messages); connections come from `connect`
    engine = create_engine(f"sqlite:///{path}", creator=connect, poolclass=QueuePool)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # pysqlite's implicit transactions would defeat BEGIN IMMEDIATE; let SQLAlchemy emit BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            if writer:
                cursor.execute("PRAGMA journal_mode = WAL")  # readers (Datasette) never block the one writer
                cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise DatabaseError(sqlite_error_message(path, exc)) from None
        finally:
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
            raise DatabaseError(sqlite_error_message(path, exc.orig)) from None

    return engine


def engine_path(engine: Engine) -> Path | None:
    return Path(engine.url.database) if engine.url.database else None


def is_locked_error(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and "locked" in str(exc.orig).lower()
