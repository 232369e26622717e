"""Naming a tinygrad commit: what a user typed (a sha, a unique prefix, a version, tree:<hash>) as a stored row,
with a one-line error when nothing or several match; read with sqlite3 or SQLAlchemy alike, importing neither
SQLAlchemy nor the models (a read answers without them). tgstore.store.commits stores commits and orders them."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection


HEX = re.compile(r"^[0-9a-fA-F]+$")
MIN_PREFIX = 4  # a shorter hex prefix is almost always a typo rather than a sha
_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|rc|c|dev|post)[-_.]?(\d*))?")
# pre-releases sort before the release, post-releases after it
_SUFFIX_RANK = {"dev": "0", "a": "1", "alpha": "1", "b": "2", "beta": "2", "c": "3", "rc": "3", None: "5", "post": "6"}


def to_utc(date: str | None) -> str | None:
    """An ISO 8601 date with any offset as UTC, `YYYY-MM-DDTHH:MM:SSZ`; None for None or an unreadable date."""
    if not date:
        return None
    try:
        parsed = datetime.fromisoformat(date.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def version_key(version: str | None) -> str | None:
    """A string that sorts like the version (PEP 440's common forms): `0.9.2` < `0.10.0rc1` < `0.10.0` <
    `0.10.0.post1`; None when the text is not a version."""
    match = _VERSION.match((version or "").strip().lower())
    if not match:
        return None
    release = [int(part) for part in match.group(1).split(".")][:6]
    release += [0] * (6 - len(release))
    suffix = f"{_SUFFIX_RANK.get(match.group(2), '5')}{int(match.group(3) or 0):06d}"
    return ".".join(f"{part:06d}" for part in release) + "-" + suffix


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
    history_rank: int | None = None

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


_COLUMNS = "commit_id, sha, tree_hash, version, committed_at, subject, history_rank"


def _execute(conn: Connection | sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    if isinstance(conn, sqlite3.Connection):
        return [tuple(row) for row in conn.execute(sql, params)]
    from sqlalchemy import text  # a SQLAlchemy connection: SQLAlchemy is loaded already

    return [tuple(row) for row in conn.execute(text(sql), params)]


def _rows(conn: Connection | sqlite3.Connection, where: str, params: dict[str, Any]) -> list[CommitRow]:
    rows = _execute(conn, f"SELECT {_COLUMNS} FROM v_commits WHERE {where} ORDER BY history_rank DESC", params)
    return [CommitRow(*row) for row in rows]


def _ambiguous(ref: str, what: str, rows: list[CommitRow]) -> CommitNotFound:
    listed = "; ".join(row.describe() for row in rows[:5])
    more = f"; and {len(rows) - 5} more" if len(rows) > 5 else ""
    return CommitNotFound(f"{ref!r} is ambiguous: it is {what} of {len(rows)} commits ({listed}{more}); name one "
                          "by a longer sha prefix")


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
