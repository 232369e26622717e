"""tinygrad commits: naming one (a bundle's key, a user's reference), storing one, and putting them in history
order. The one place these live.

History order is what "first", "previous" and "over time" mean in every query, view and listing:

* git commits by their position on the first-parent line (`git rev-list --count --first-parent SHA`, stored as
  `tinygrad_commits.git_position`). Committer dates are not used: tinygrad's committers use mixed timezone offsets
  and rebased commits keep old dates, so date order and git order disagree.
* installed releases (no git, keyed `tree:<hash>`) by version, each placed just before the first git commit that
  carries its version or a later one (a release is the commit that bumped the version).
* what has neither (an old database's rows, a commit from a shallow clone) by UTC commit time, then by when it was
  stored.

The `v_commits` view computes `history_rank` from these columns; SQL and Python share it.

Naming a commit: a full sha, a unique sha prefix, a version string, or "tree:<hash>". `resolve_commit` turns what a
user typed into a row, with a one-line error when nothing or several commits match. The SQL files in `queries/` do
the same lookup in SQL: there an exact sha wins, then the newest commit (in history order) whose sha starts with
the text or whose version equals it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text, update

from tgstore.db.models.run_tables import TinygradCommit
from tgstore.store.rows import get_or_create

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


# History order, stored in tinygrad_commits.history_rank (migration 0011 holds the same statement): git commits by
# their first-parent position; a release without git just before the first git commit carrying its version or a
# later one; then by version, date and id. Run after every change to the commits (tgstore.store.ingest does).
RANK_COMMITS = """
    WITH placed AS (
      SELECT c.id, c.version_key, c.committed_utc,
             CASE WHEN c.git_position IS NOT NULL THEN c.git_position
                  WHEN c.version_key IS NULL THEN NULL
                  ELSE coalesce((SELECT min(g.git_position) FROM tinygrad_commits g
                                 WHERE g.git_position IS NOT NULL AND g.version_key >= c.version_key) - 0.5,
                                (SELECT max(g.git_position) FROM tinygrad_commits g) + 0.5) END AS place
      FROM tinygrad_commits c),
    ranked AS (
      SELECT id, row_number() OVER (ORDER BY place IS NULL, place, version_key IS NULL, version_key, committed_utc, id)
               AS rank
      FROM placed)
    UPDATE tinygrad_commits SET history_rank = ranked.rank FROM ranked
    WHERE ranked.id = tinygrad_commits.id AND tinygrad_commits.history_rank IS NOT ranked.rank"""


def rank_commits(conn: Any) -> None:
    """Recompute every commit's history_rank (a few ms for a thousand commits; only changed ranks are written)."""
    conn.exec_driver_sql(RANK_COMMITS)


def commit_key(tinygrad: dict[str, Any]) -> str:
    """The `tinygrad_commits.sha` of a bundle's tinygrad: its git sha (plus its tree hash when the checkout has
    uncommitted changes), else its source tree hash."""
    git = tinygrad.get("git") or {}
    if git.get("sha") and git.get("dirty"):
        # a checkout with uncommitted changes to tinygrad/ is not that commit: one key per distinct tree
        return f"{git['sha']}+{tinygrad['tree_hash'][:16]}"
    if git.get("sha"):
        return git["sha"]
    if not tinygrad.get("tree_hash"):
        raise ValueError("the bundle's header names neither a git sha nor a tree hash for its tinygrad")
    return f"tree:{tinygrad['tree_hash']}"


def upsert_commit(conn: Connection, sha: str, tree_hash: str, version: str | None, git: dict[str, Any]) -> int:
    """The commit's id, created if new; what an earlier, less informed ingest did not know is filled in."""
    values = {"version": version, "committed_at": git.get("date"), "subject": git.get("subject"),
              "committed_utc": to_utc(git.get("date")), "git_position": git.get("position"),
              "version_key": version_key(version)}
    commit_id = get_or_create(conn, TinygradCommit, {"sha": sha}, {"tree_hash": tree_hash, **values})
    for column, value in values.items():
        if value is not None:
            conn.execute(update(TinygradCommit).where(TinygradCommit.id == commit_id,
                                                      getattr(TinygradCommit, column).is_(None))
                         .values({column: value}))
    if tree_hash:  # a checkout that failed stored none
        conn.execute(update(TinygradCommit).where(TinygradCommit.id == commit_id, TinygradCommit.tree_hash == "")
                     .values(tree_hash=tree_hash))
    rank_commits(conn)
    return commit_id
