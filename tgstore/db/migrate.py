"""Running the Alembic migrations in `migrations/` against a tgstore database."""

from __future__ import annotations

import sqlite3

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from tgstore.db.engine import DatabaseError, engine_path, sqlite_error_message
from tgstore.db.schema_copy import copy_head_schema
from tgstore.resources import MIGRATIONS_DIR


def _config() -> Config:
    if not (MIGRATIONS_DIR / "env.py").exists():
        raise DatabaseError(f"migrations not found at {MIGRATIONS_DIR}; reinstall tgstore")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def known_revisions() -> set[str]:
    return {rev.revision for rev in _script().walk_revisions()}


def head_revision() -> str:
    head = _script().get_current_head()
    assert head is not None, "migrations/ has no revisions"
    return head


def _database_name(engine: Engine) -> str:
    return str(engine_path(engine) or "the database")


def current_revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except DBAPIError as exc:
        raise DatabaseError(sqlite_error_message(engine_path(engine), exc.orig)) from None


def _refuse_unknown(engine: Engine, current: str | None) -> None:
    if current is not None and current not in known_revisions():
        raise DatabaseError(f"the database is at schema revision {current}, which this tgstore does not know "
                            f"(it was written by a newer tgstore, whose head is past {head_revision()}); "
                            "upgrade tgstore; nothing was changed")


def _run(engine: Engine, fn, revision: str) -> None:
    config = _config()
    try:
        with engine.connect() as conn:
            # Batch migrations rebuild tables (copy, drop, rename); with foreign keys enforced, dropping a table that
            # others reference fails. SQLite only honours this pragma outside a transaction, hence the raw
            # connection before SQLAlchemy begins one; the references are checked once the migration is done.
            raw = conn.connection.dbapi_connection
            raw.execute("PRAGMA foreign_keys = OFF")
            try:
                with conn.begin():
                    config.attributes["connection"] = conn
                    fn(config, revision)
                    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise DatabaseError(f"migrating to {revision} would break {len(broken)} foreign key "
                                            f"references (first: {broken[0]}); nothing was changed")
            finally:
                raw.execute("PRAGMA foreign_keys = ON")
    except CommandError as exc:
        raise DatabaseError(f"cannot migrate to {revision!r}: {exc}; nothing was changed") from None
    except (DBAPIError, sqlite3.Error) as exc:
        raise DatabaseError(sqlite_error_message(engine_path(engine), getattr(exc, "orig", exc))
                            + "; nothing was changed") from None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate up to `revision`. Refuses a database whose schema is newer than this tgstore knows. A new, empty
    database migrated to head gets the schema the migrations built into a template (db/schema_copy.py)."""
    current = current_revision(engine)
    _refuse_unknown(engine, current)
    new_at_head = current is None and (revision == "head" or revision == head_revision())
    if new_at_head and copy_head_schema(engine, _migrate_to_head):
        return
    _run(engine, command.upgrade, revision)


def _migrate_to_head(engine: Engine) -> None:
    _run(engine, command.upgrade, "head")


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate down to `revision` (a revision id, `-N` or `base`). Refuses a database newer than this tgstore."""
    _refuse_unknown(engine, current_revision(engine))
    _run(engine, command.downgrade, revision)


def ensure_current(engine: Engine) -> None:
    """Upgrade to head if needed (ingest does this for new databases)."""
    if current_revision(engine) != head_revision():
        upgrade(engine)


def check_readable(engine: Engine) -> None:
    """A reader's check: the file holds a tgstore schema that this tgstore can read, at head."""
    current = current_revision(engine)
    if current is None:
        raise DatabaseError(f"{_database_name(engine)} holds no tgstore schema; create it with `tgstore ingest` "
                            "or `tgstore db upgrade`")
    _refuse_unknown(engine, current)
    if current != head_revision():
        raise DatabaseError(f"{_database_name(engine)} is at schema revision {current}, older than this tgstore's "
                            f"{head_revision()}; run `tgstore db upgrade` (a writer) first")
