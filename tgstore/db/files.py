"""What a tgstore database file must be, checked without SQLAlchemy: a reader (db/read.py) and a writer
(db/engine.py) refuse the same files with the same one-line messages."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

SQLITE_MAGIC = b"SQLite format 3\x00"


class DatabaseError(Exception):
    """A database problem worth a clear one-line message (not a file, a newer schema, ...)."""


class DatabaseLocked(DatabaseError):
    """Another process held the write lock for longer than the busy timeout."""


def check_file(path: Path, *, writer: bool) -> None:
    """Refuse, before SQLite touches anything, what cannot be a tgstore database."""
    if not path.exists():
        if not writer:
            raise DatabaseError(f"{path} does not exist; create it with `tgstore ingest` or `tgstore db upgrade`")
        if not path.parent.is_dir():
            raise DatabaseError(f"cannot create {path}: the directory {path.parent} does not exist")
        return
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        raise DatabaseError(f"{path} is a directory, not a database file")
    if not stat.S_ISREG(mode):
        raise DatabaseError(f"{path} is not a regular file (a device or a pipe?), not a database file")
    if writer and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        raise DatabaseError(f"{path} is read-only (a read-only file, directory or filesystem); nothing was written")
    if path.stat().st_size > 0:
        with open(path, "rb") as f:
            if f.read(16) != SQLITE_MAGIC:
                raise DatabaseError(f"{path} is not a SQLite database")
        if writer:
            refuse_foreign(path)


def refuse_foreign(path: Path) -> None:
    """A SQLite file with tables but no tgstore schema version belongs to something else: refused before a writer
    connects (connecting would switch it to WAL), so it is left byte for byte as it was."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        finally:
            conn.close()
    except sqlite3.Error:
        return  # what is wrong with it is said when it is opened
    if names and "alembic_version" not in names:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise DatabaseError(f"{path} is a SQLite database of something else (tables {shown}, no tgstore schema); "
                            "tgstore adds nothing to it: give tgstore a new file")


def read_only_media(path: Path) -> bool:
    """The database's directory cannot be written (a read-only filesystem or directory): SQLite then cannot create
    the WAL index a reader needs, so the file is opened immutable instead."""
    return not os.access(path.parent, os.W_OK)


def sqlite_error_message(path: Path | None, exc: BaseException) -> str:
    """What a SQLite error means for the user, in one line naming the database."""
    text = str(exc).strip()
    low = text.lower()
    where = str(path) if path is not None else "the database"
    if "disk is full" in low or "database or disk is full" in low or ("disk i/o error" in low and disk_full(path)):
        # a write that hits the end of a full filesystem is often reported as an I/O error: say what it is
        return f"no space left on the device holding {where}; nothing was written"
    if "readonly" in low or "read-only" in low:
        return f"{where} is read-only (a read-only file, directory or filesystem); nothing was written"
    if "malformed" in low or "not a database" in low or "file is encrypted" in low:
        return f"{where} is corrupt or not a SQLite database ({text})"
    if "locked" in low or "busy" in low:
        return f"{where} is locked by another process ({text}); nothing was written"
    if "unable to open" in low:
        return f"cannot open {where} ({text})"
    if "no such table" in low or "no such column" in low:
        return f"{where} is not a tgstore database of this version ({text}); run `tgstore db upgrade`"
    return f"{where}: {text}"


def disk_full(path: Path | None) -> bool:
    """The filesystem holding `path` has (almost) no space left."""
    try:
        found = os.statvfs((path or Path(".")).resolve().parent)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 256 * 1024
