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
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        fn(config, revision)


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
