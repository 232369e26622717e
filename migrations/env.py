"""Alembic environment: migrations are the only way tgstore's schema changes.

tgstore passes an open connection in `config.attributes["connection"]`; run by hand, the database file comes from
the TGSTORE_DB environment variable (default tgstore.db).
"""

import os

from alembic import context
from sqlalchemy import create_engine

from tgstore.db.models import Base

target_metadata = Base.metadata


def run_migrations(connection) -> None:
    # render_as_batch: SQLite cannot ALTER most things, so Alembic rebuilds tables in batch mode.
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=f"sqlite:///{os.environ.get('TGSTORE_DB', 'tgstore.db')}", target_metadata=target_metadata,
                      render_as_batch=True, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
    else:
        engine = create_engine(f"sqlite:///{os.environ.get('TGSTORE_DB', 'tgstore.db')}")
        with engine.connect() as conn:
            run_migrations(conn)
