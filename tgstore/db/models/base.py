"""The declarative base every model of the tgstore schema derives from.

The schema is created and changed only by the Alembic migrations in `migrations/`; these models describe it for
the code. Artifacts are content-addressed (a `hash` column, sha256 hex of a canonical encoding) so what did not
change between two tinygrad commits is stored once: a run of an unchanged commit adds a `runs` row and one
`run_cases` row per case, all pointing at existing `case_results`.
"""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

# Explicit constraint names keep Alembic batch migrations on SQLite deterministic.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
