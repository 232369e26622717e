"""A read: the database opened with the standard library's sqlite3, read-only, and its schema checked by comparing
the Alembic revision it stores (the alembic_version table) with the head this tgstore ships, read from the text of
migrations/versions/ (no Alembic or SQLAlchemy import: a question costs milliseconds, not the 0.7 s their import
does). tests/test_db_read.py checks that this head is Alembic's own."""

from __future__ import annotations

import re
import sqlite3
from functools import cache
from pathlib import Path
from urllib.parse import quote

from tgstore.db.files import DatabaseError, check_file, read_only_media, sqlite_error_message
from tgstore.resources import MIGRATIONS_DIR

# `revision: str = "0024"` and `down_revision: str | None = "0022"` as Alembic writes them in a migration file
_REVISION = re.compile(r'^revision(?:\s*:\s*[^=]+)?\s*=\s*["\']([^"\']+)["\']', re.M)
_DOWN = re.compile(r'^down_revision(?:\s*:\s*[^=]+)?\s*=\s*(?:["\']([^"\']+)["\']|None)', re.M)


@cache
def revisions() -> dict[str, str | None]:
    """Every migration this tgstore ships: revision -> the revision it follows (None for the first)."""
    found: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(text), _DOWN.search(text)
        if revision and down:
            found[revision.group(1)] = down.group(1)
    if not found:
        raise DatabaseError(f"migrations not found at {MIGRATIONS_DIR}; reinstall tgstore")
    return found


@cache
def head() -> str:
    """The newest revision: the one no other follows."""
    known = revisions()
    heads = set(known) - {down for down in known.values() if down}
    if len(heads) != 1:
        raise DatabaseError(f"migrations/versions has {len(heads)} heads ({', '.join(sorted(heads))}); reinstall "
                            "tgstore")
    return heads.pop()


def stored_revision(conn: sqlite3.Connection) -> str | None:
    """The revision the database says it is at; None for a file with no tgstore schema."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'").fetchone() is None:
        return None
    found = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return found[0] if found else None


def check_schema(conn: sqlite3.Connection, name: str) -> None:
    """A reader's check: a tgstore schema this tgstore knows, at its head (what migrate.check_readable says, with
    the same words)."""
    current = stored_revision(conn)
    if current is None:
        raise DatabaseError(f"{name} holds no tgstore schema; create it with `tgstore ingest` or `tgstore db upgrade`")
    if current not in revisions():
        raise DatabaseError(f"the database is at schema revision {current}, which this tgstore does not know "
                            f"(it was written by a newer tgstore, whose head is past {head()}); upgrade tgstore; "
                            "nothing was changed")
    if current != head():
        raise DatabaseError(f"{name} is at schema revision {current}, older than this tgstore's {head()}; run "
                            "`tgstore db upgrade` (a writer) first")


def open_reader(path: Path | str, *, check: bool = True) -> sqlite3.Connection:
    """The database at `path` for reading: read-only (immutable on read-only media, where SQLite cannot make the WAL
    index), waiting on a writer as long as TGSTORE_BUSY_TIMEOUT says, its schema checked unless not `check`."""
    from tgstore import settings

    path = Path(path)
    try:  # the same wait as the engine's readers (TGSTORE_BUSY_TIMEOUT), and the same one-line error for a bad one
        timeout = settings.busy_timeout_ms() / 1000
    except settings.SettingError as exc:
        raise DatabaseError(str(exc)) from None
    check_file(path, writer=False)
    uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if read_only_media(path) else "")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
        conn.execute("PRAGMA foreign_keys = ON")
        if check:
            check_schema(conn, str(path))
    except sqlite3.Error as exc:
        raise DatabaseError(sqlite_error_message(path, exc)) from None
    return conn


def as_sqlalchemy(conn: sqlite3.Connection):
    """A SQLAlchemy Connection over the reader's own sqlite3 connection, for the few questions whose library code
    is written against SQLAlchemy (Svod parity, rule activity, kernel times): SQLAlchemy is imported by them alone,
    and the reader stays the one connection (never closed by SQLAlchemy)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    engine = create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    return engine.connect()
