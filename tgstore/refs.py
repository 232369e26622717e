"""Naming a tinygrad commit: a full sha, a unique sha prefix, a version string, or "tree:<hash>".

`resolve_commit` is the one place that turns what a user typed into a `tinygrad_commits` row, with a clear error
when nothing or several commits match. The SQL files in `queries/` do the same lookup in SQL, but SQL cannot
raise: there an exact sha wins, then the newest commit whose sha starts with the text or whose version equals it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

HEX = re.compile(r"^[0-9a-fA-F]+$")
MIN_PREFIX = 4  # a shorter hex prefix is almost always a typo rather than a sha


class CommitNotFound(LookupError):
    """No commit, or more than one, matches the reference; the message says which and what to type instead."""


@dataclass(frozen=True)
class CommitRow:
    id: int
    sha: str
    tree_hash: str
    version: str | None
    committed_at: str | None
    subject: str | None

    @property
    def short(self) -> str:
        return self.sha[:17] if self.sha.startswith("tree:") else self.sha[:12]

    def describe(self) -> str:
        bits = [self.short]
        if self.version:
            bits.append(self.version)
        if self.committed_at:
            bits.append(self.committed_at[:10])
        if self.subject:
            bits.append(repr(self.subject[:60]))
        return " ".join(bits)


_COLUMNS = "id, sha, tree_hash, version, committed_at, subject"


def _execute(conn: Connection | sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    if isinstance(conn, sqlite3.Connection):
        return [tuple(row) for row in conn.execute(sql, params)]
    return [tuple(row) for row in conn.execute(text(sql), params)]


def _rows(conn: Connection | sqlite3.Connection, where: str, params: dict[str, Any]) -> list[CommitRow]:
    rows = _execute(conn, f"SELECT {_COLUMNS} FROM tinygrad_commits WHERE {where} ORDER BY committed_at DESC, id DESC",
                    params)
    return [CommitRow(*row) for row in rows]


def _ambiguous(ref: str, what: str, rows: list[CommitRow]) -> CommitNotFound:
    listed = "\n".join(f"  {row.describe()}" for row in rows[:10])
    more = f"\n  ... and {len(rows) - 10} more" if len(rows) > 10 else ""
    return CommitNotFound(f"{ref!r} is ambiguous: it is {what} of {len(rows)} commits:\n{listed}{more}\n"
                          "name one by a longer sha prefix")


def resolve_commit(conn: Connection | sqlite3.Connection, ref: str) -> CommitRow:
    """The commit `ref` names: an exact sha (or "tree:<hash>"), else a unique sha prefix (at least 4 hex digits,
    or a "tree:" prefix), else a version string shared by exactly one stored commit."""
    ref = (ref or "").strip()
    if not ref:
        raise CommitNotFound("empty commit reference; give a sha, a sha prefix or a version like 0.14.0")
    exact = _rows(conn, "sha = :ref", {"ref": ref})
    if exact:
        return exact[0]
    is_prefix = (HEX.match(ref) and len(ref) >= MIN_PREFIX) or (ref.startswith("tree:") and len(ref) > 5)
    if is_prefix:
        # substr instead of LIKE: a sha prefix has no wildcards and the match is case-sensitive like the shas.
        prefixed = _rows(conn, "substr(sha, 1, :n) = :ref", {"ref": ref.lower() if HEX.match(ref) else ref,
                                                              "n": len(ref)})
        if len(prefixed) == 1:
            return prefixed[0]
        if prefixed:
            raise _ambiguous(ref, "a prefix", prefixed)
    versioned = _rows(conn, "version = :ref", {"ref": ref})
    if len(versioned) == 1:
        return versioned[0]
    if versioned:
        raise _ambiguous(ref, "the version", versioned)
    hint = ""
    if HEX.match(ref) and len(ref) < MIN_PREFIX:
        hint = f" (a sha prefix needs at least {MIN_PREFIX} hex digits)"
    known = _execute(conn, "SELECT count(*) FROM tinygrad_commits", {})[0][0]
    raise CommitNotFound(f"no stored commit matches {ref!r}{hint}; {known} commits are stored "
                         "(`tgstore runs` lists them)")

