"""Database access: opening a tgstore SQLite file and migrating it."""

from tgstore.db.engine import DatabaseError, DatabaseLocked, open_engine
from tgstore.db.migrate import current_revision, downgrade, head_revision, upgrade

__all__ = ["DatabaseError", "DatabaseLocked", "open_engine", "upgrade", "downgrade", "current_revision",
           "head_revision"]
