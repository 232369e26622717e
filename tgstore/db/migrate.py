"""Running the Alembic migrations in `migrations/` against a tgstore database."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from tgstore.db.engine import DatabaseError

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"


def _config() -> Config:
    if not (MIGRATIONS_DIR / "env.py").exists():
        raise DatabaseError(f"migrations not found at {MIGRATIONS_DIR}; install tgstore from its source tree "
                            "(pip install -e .)")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "migrations/ has no revisions"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _run(engine: Engine, fn, revision: str) -> None:
    config = _config()
    with engine.connect() as conn:
        # Batch migrations rebuild tables (copy, drop, rename); with foreign keys enforced, dropping a table that
        # others reference fails. SQLite only honours this pragma outside a transaction, hence the raw connection
        # before SQLAlchemy begins one; the references are checked once the migration is done.
        raw = conn.connection.dbapi_connection
        raw.execute("PRAGMA foreign_keys = OFF")
        try:
            with conn.begin():
                config.attributes["connection"] = conn
                fn(config, revision)
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise DatabaseError(f"migrating to {revision} would break {len(broken)} foreign key references "
                                        f"(first: {broken[0]}); nothing was changed")
        finally:
            raw.execute("PRAGMA foreign_keys = ON")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate up to `revision`. Refuses a database whose schema is newer than this tgstore knows."""
    current = current_revision(engine)
    script = ScriptDirectory.from_config(_config())
    if current is not None and current not in {rev.revision for rev in script.walk_revisions()}:
        raise DatabaseError(f"the database is at schema revision {current}, which this tgstore does not know "
                            "(it was written by a newer tgstore); upgrade tgstore")
    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str) -> None:
    _run(engine, command.downgrade, revision)


def ensure_current(engine: Engine) -> None:
    """Upgrade to head if needed (ingest does this for new databases)."""
    if current_revision(engine) != head_revision():
        upgrade(engine)
