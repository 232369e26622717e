"""Database access: opening a tgstore SQLite file (db/read.py for a read, without SQLAlchemy; db/engine.py for a
writer) and migrating it (db/migrate.py, Alembic). The SQLAlchemy side is imported when first named here, so
`from tgstore.db import DatabaseError` costs no SQLAlchemy."""

from __future__ import annotations

from typing import Any

from tgstore.db.files import DatabaseError, DatabaseLocked
from tgstore.db.read import open_reader

_LAZY = {"open_engine": "tgstore.db.engine", "upgrade": "tgstore.db.migrate", "downgrade": "tgstore.db.migrate",
         "current_revision": "tgstore.db.migrate", "head_revision": "tgstore.db.migrate"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tgstore.db' has no attribute {name!r}")


__all__ = ["DatabaseError", "DatabaseLocked", "open_reader", "open_engine", "upgrade", "downgrade",
           "current_revision", "head_revision"]
