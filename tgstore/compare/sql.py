"""Reading rows the same way from either connection a comparison is given: a SQLAlchemy Connection (the CLI) or a
plain sqlite3 connection (the web pages read through Datasette's own connection). SQL uses `:name` parameters,
which both accept as written."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection

    AnyConnection = Connection | sqlite3.Connection
else:  # a read opens sqlite3 alone (db/read.py): SQLAlchemy is imported only where a caller already has it
    AnyConnection = Any


def raw(conn: AnyConnection) -> sqlite3.Connection:
    """The sqlite3 connection under either kind."""
    if isinstance(conn, sqlite3.Connection):
        return conn
    found = conn.connection.driver_connection
    assert isinstance(found, sqlite3.Connection)
    return found


def rows(conn: AnyConnection, sql: str, **params: Any) -> list[dict[str, Any]]:
    if isinstance(conn, sqlite3.Connection):
        cursor = conn.execute(sql, params)
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    from sqlalchemy import text

    return [dict(row._mapping) for row in conn.execute(text(sql), params)]


def scalar(conn: AnyConnection, sql: str, **params: Any) -> Any:
    if isinstance(conn, sqlite3.Connection):
        found = conn.execute(sql, params).fetchone()
        return found[0] if found else None
    from sqlalchemy import text

    return conn.execute(text(sql), params).scalar()
