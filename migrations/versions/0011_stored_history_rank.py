"""tinygrad_commits.history_rank: history order stored, not computed by every query

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 23:40:00

v_commits ranked every commit (window function, correlated subqueries) each time a query used it, and most queries
use it several times: on a thousand commits that alone made queries take tenths of seconds. The rank is now a column,
recomputed by each ingest (tgstore.history.RANK_COMMITS, the same SQL as here), and v_commits reads it.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A release without git sits just before the first git commit carrying its version or a later one.
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
V_COMMITS = """
    SELECT id AS commit_id, sha, tree_hash, version, committed_at, committed_utc, subject, git_position, version_key,
           history_rank
    FROM tinygrad_commits"""
OLD_V_COMMITS = """
    WITH placed AS (
      SELECT c.*,
             CASE WHEN c.git_position IS NOT NULL THEN c.git_position
                  WHEN c.version_key IS NULL THEN NULL
                  ELSE coalesce((SELECT min(g.git_position) FROM tinygrad_commits g
                                 WHERE g.git_position IS NOT NULL AND g.version_key >= c.version_key) - 0.5,
                                (SELECT max(g.git_position) FROM tinygrad_commits g) + 0.5) END AS place
      FROM tinygrad_commits c)
    SELECT id AS commit_id, sha, tree_hash, version, committed_at, committed_utc, subject, git_position, version_key,
           row_number() OVER (ORDER BY place IS NULL, place, version_key IS NULL, version_key, committed_utc, id)
             AS history_rank
    FROM placed"""


def upgrade() -> None:
    op.add_column("tinygrad_commits", sa.Column("history_rank", sa.Integer(), nullable=True))
    op.create_index(op.f("ix_tinygrad_commits_history_rank"), "tinygrad_commits", ["history_rank"])
    op.execute(RANK_COMMITS)
    op.execute("DROP VIEW v_commits")  # the views that read it resolve to the new one by name
    op.execute(f"CREATE VIEW v_commits AS {V_COMMITS}")


def downgrade() -> None:
    op.execute("DROP VIEW v_commits")
    op.execute(f"CREATE VIEW v_commits AS {OLD_V_COMMITS}")
    op.drop_index(op.f("ix_tinygrad_commits_history_rank"), "tinygrad_commits")
    op.execute("ALTER TABLE tinygrad_commits DROP COLUMN history_rank")
