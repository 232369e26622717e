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

from typing import Any

from sqlalchemy import Connection, update

from tgstore.db.models.run_tables import TinygradCommit
from tgstore.store.commit_names import (  # noqa: F401 - re-exported: where writers and tests have found them
    HEX,
    MIN_PREFIX,
    CommitNotFound,
    CommitRow,
    resolve_commit,
    to_utc,
    version_key,
)
from tgstore.store.rows import get_or_create

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
