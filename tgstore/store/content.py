"""Content-addressed rows, many at a time: find which hashes a table already holds, insert the rest in one statement.

Inside a writer's transaction (tgstore's writers take the write lock when they begin), new rows get explicit ids
counted up from the table's largest, so a parent's id is known before its children are inserted, without a
round trip per row. Statements are per table, not per row (see artifacts.py for the tables' order).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

CHUNK = 500  # hashes per `IN (...)` lookup, well under SQLite's parameter limit


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def canonical_json(value: Any) -> str:
    """Sorted-key compact JSON: equal content, equal text, whatever the key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    return sha256_text(canonical_json(value))


def document_hash(document: dict[str, Any]) -> str:
    """sha256 of the sorted-key compact ASCII JSON: a document's identity, as Svod's comparator computes it."""
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                     allow_nan=False).encode()).hexdigest()


class ContentStore:
    """Hash -> id for the content-addressed tables, within one transaction."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.known: dict[str, dict[str, int]] = {}  # table -> hash -> id
        self.created: dict[str, set[str]] = {}  # table -> hashes inserted by this store
        self.text_hashes: dict[str, str] = {}  # text -> sha256, each distinct text hashed once

    def lookup(self, table: str, hashes: Iterable[str]) -> dict[str, int]:
        """The ids of those `hashes` that `table` holds."""
        known = self.known.setdefault(table, {})
        wanted = [h for h in dict.fromkeys(hashes) if h not in known]
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            marks = ",".join("?" * len(chunk))
            known.update(self.conn.exec_driver_sql(f"SELECT hash, id FROM {table} WHERE hash IN ({marks})",
                                                   tuple(chunk)).fetchall())
        return known

    def ensure(self, table: str, columns: Sequence[str], rows: dict[str, Sequence[Any]]) -> list[str]:
        """Make `table` hold a row per hash in `rows` (hash -> values of `columns`, besides id and hash); returns the
        hashes that were new, whose parts (child rows) the caller inserts."""
        known = self.lookup(table, rows)
        new = [h for h in rows if h not in known]
        if new:
            next_id = (self.conn.exec_driver_sql(f"SELECT max(id) FROM {table}").scalar() or 0) + 1
            placeholders = ",".join("?" * (len(columns) + 2))
            self.conn.exec_driver_sql(
                f"INSERT INTO {table} (id, hash, {', '.join(columns)}) VALUES ({placeholders})",
                [(next_id + i, h, *rows[h]) for i, h in enumerate(new)])
            known.update((h, next_id + i) for i, h in enumerate(new))
            self.created.setdefault(table, set()).update(new)
        return new

    def id(self, table: str, hash_: str | None) -> int | None:
        return None if hash_ is None else self.known[table][hash_]

    def insert(self, table: str, columns: Sequence[str], rows: list[Sequence[Any]]) -> None:
        """Plain rows (parts of a new content-addressed row, or a run's own rows)."""
        if rows:
            self.conn.exec_driver_sql(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                      f"({','.join('?' * len(columns))})", rows)

    def next_id(self, table: str) -> int:
        return (self.conn.exec_driver_sql(f"SELECT max(id) FROM {table}").scalar() or 0) + 1

    # ---- blobs: texts, the commonest content
    def text_hash(self, text: str) -> str:
        found = self.text_hashes.get(text)
        if found is None:
            found = self.text_hashes[text] = sha256_text(text)
        return found

    def blobs(self, texts: Iterable[str | None]) -> None:
        rows = {self.text_hash(t): (len(t), t) for t in texts if t is not None}
        self.ensure("blobs", ("size", "text"), rows)

    def blob_id(self, text: str | None) -> int | None:
        return None if text is None else self.known["blobs"][self.text_hash(text)]

    def blob(self, text: str | None) -> int | None:
        """One text's blob id (stored if new)."""
        self.blobs([text])
        return self.blob_id(text)
