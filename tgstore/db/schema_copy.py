"""A new database's schema copied from one the migrations built, instead of running them again.

Alembic's migrations take a third of a second on an empty file (batch table rebuilds and reflection, 24 steps), which
every new database pays: each `tgstore ingest` into a new file, each database a test makes. The schema they build
is the same every time, so the first new database a set of migrations makes is built by Alembic into a template in
the user's cache directory, and later new databases copy its pages (SQLite's backup API): a few milliseconds.
Alembic stays the only writer of a schema (the template is its output, alembic_version included); a template is
named by the hash of the migration files and SQLite's version, so an edited migration builds a new one. Copied only
into a file holding nothing yet; when the cache cannot be written the migrations run as before.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

from sqlalchemy import Engine

from tgstore.resources import MIGRATIONS_DIR, hash_files


@cache
def template_name() -> str:
    """The template's file name: the migrations' files (by path and bytes) and the SQLite that runs them."""
    digest = hashlib.sha256(sqlite3.sqlite_version.encode())
    hash_files(digest, MIGRATIONS_DIR, "*.py")
    return f"schema-{digest.hexdigest()[:24]}.db"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tgstore"


def is_empty(engine: Engine) -> bool:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar() == 0


def copy_head_schema(engine: Engine, build: Callable[[Engine], None]) -> bool:
    """Give the empty database `engine` opens the head schema from the template (built first with `build`, which
    migrates an engine to head, if there is none yet). False, with nothing changed, when the file holds anything or
    no template can be had."""
    if not is_empty(engine):
        return False
    template = _template(build)
    if template is None:
        return False
    source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
    try:
        raw = engine.raw_connection()
        try:
            destination = raw.driver_connection
            source.backup(destination)
            destination.execute("PRAGMA journal_mode = WAL")  # the engine's mode (the template's is rollback)
        finally:
            raw.close()
    finally:
        source.close()
    return True


def _template(build: Callable[[Engine], None]) -> Path | None:
    from tgstore.db.engine import open_engine

    try:
        where = cache_dir()
    except RuntimeError:  # no home directory to be found: the migrations run
        return None
    path = where / template_name()
    if path.is_file():
        return path
    try:
        where.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(prefix=".schema-", suffix=".db", dir=where)
    except OSError:
        return None
    os.close(handle)
    os.unlink(scratch)  # SQLite creates it; only the unique name was wanted
    try:
        engine = open_engine(scratch)
        try:
            build(engine)
            raw = engine.raw_connection()
            try:  # one file, whole (no WAL beside it when it is renamed), without the batch rebuilds' free pages
                raw.driver_connection.execute("PRAGMA journal_mode = DELETE")
                raw.driver_connection.execute("VACUUM")
            finally:
                raw.close()
        finally:
            engine.dispose()
        os.replace(scratch, path)  # whole or absent, whoever else builds one meanwhile
    except OSError:
        return None
    finally:
        for leftover in (scratch, f"{scratch}-wal", f"{scratch}-shm", f"{scratch}-journal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return path
