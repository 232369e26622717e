"""history order (git position, UTC time, version key) and run attempts (an ok run is only replaced by an ok run)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 19:00:00

* tinygrad_commits gains `committed_utc` (the committer date in UTC), `git_position` (position on the first-parent
  line) and `version_key` (a sortable form of `version`); the `v_commits` view ranks commits in history order
  (see tgstore/history.py). Existing rows get `committed_utc` and `version_key`; `git_position` needs the
  repository, so old rows keep NULL and sort by time until re-ingested.
* runs: several runs may exist per (commit, suite, backend); `is_current` marks the one that answers for it (at
  most one, a partial unique index), the others are failed attempts kept for `failed_runs`. The table gets
  AUTOINCREMENT so a deleted run's id is never given to another run.
* the browsing views show current runs only and carry `history_rank`; `v_runs` shows every run.
"""
import re
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

# A migration is a snapshot: these copies of tgstore.history's functions do not change when the package does.
_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|rc|c|dev|post)[-_.]?(\d*))?")
_SUFFIX_RANK = {"dev": "0", "a": "1", "alpha": "1", "b": "2", "beta": "2", "c": "3", "rc": "3", None: "5", "post": "6"}


def to_utc(date: str | None) -> str | None:
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
    match = _VERSION.match((version or "").strip().lower())
    if not match:
        return None
    release = [int(part) for part in match.group(1).split(".")][:6]
    release += [0] * (6 - len(release))
    suffix = f"{_SUFFIX_RANK.get(match.group(2), '5')}{int(match.group(3) or 0):06d}"
    return ".".join(f"{part:06d}" for part in release) + "-" + suffix

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_VIEWS = ["v_svod_kernels", "v_svod_stages", "v_commit_patterns", "v_pattern_matches", "v_sources", "v_kernels",
             "v_run_cases", "v_runs"]

# A release without git sits just before the first git commit carrying its version or a later one.
V_COMMITS = """
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

VIEWS = {
    "v_commits": V_COMMITS,
    "v_runs": """
        SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.subject, c.history_rank, s.name AS suite,
               s.hash AS suite_hash, r.backend, r.status, r.is_current, r.renderers, r.started_at, r.finished_at,
               r.error
        FROM runs r JOIN v_commits c ON c.commit_id = r.commit_id JOIN suites s ON s.id = r.suite_id""",
    "v_run_cases": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, s.name AS suite, r.backend,
               k.name AS "case", rc.status, rc.seconds, cr.hash AS result_hash, cr.item_count, cr.kernel_count,
               d.text AS debug, e.text AS error
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN suites s ON s.id = r.suite_id JOIN cases k ON k.id = rc.case_id
        JOIN case_results cr ON cr.id = rc.case_result_id
        LEFT JOIN blobs d ON d.id = rc.debug_blob_id LEFT JOIN blobs e ON e.id = rc.error_blob_id""",
    "v_kernels": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name AS "case", si.position,
               si.root_op, kn.id AS kernel_id, kn.hash AS kernel_hash, kn.node_count, kn.name AS kernel_name,
               pr.text AS pyrender, at.text AS ast_text
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN kernels kn ON kn.id = si.kernel_id
        LEFT JOIN blobs pr ON pr.id = kn.pyrender_blob_id LEFT JOIN blobs at ON at.id = kn.ast_text_blob_id""",
    "v_sources": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name AS "case",
               si.position, p.renderer, p.name AS kernel_name, b.hash AS source_hash, b.text AS source,
               l.uop_count, p.error
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN programs p ON p.schedule_item_id = si.id
        LEFT JOIN blobs b ON b.id = p.source_blob_id LEFT JOIN linears l ON l.id = p.linear_id""",
    "v_pattern_matches": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, k.name AS "case", pt.matcher,
               pt.function_name, pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN pattern_matches pm ON pm.case_result_id = rc.case_result_id
        JOIN patterns pt ON pt.id = pm.pattern_id""",
    "v_commit_patterns": """
        SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.history_rank, pt.id AS pattern_id, pt.matcher,
               pt.function_name, pt.file, pt.line, pt.ops, pt.upat
        FROM runs r JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN pattern_set_members m ON m.pattern_set_id = r.pattern_set_id JOIN patterns pt ON pt.id = m.pattern_id
        WHERE r.is_current = 1""",
}


def saved_views() -> dict[str, str]:
    """The CREATE VIEW statements of the views this migration drops, as the database has them (for downgrade)."""
    conn = op.get_bind()
    rows = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'view'").fetchall()
    return {name: sql for name, sql in rows if name in OLD_VIEWS}


SVOD_VIEWS: dict[str, str] = {}


def upgrade() -> None:
    SVOD_VIEWS.update({k: v for k, v in saved_views().items() if k.startswith("v_svod")})
    for name in OLD_VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {name}")
    with op.batch_alter_table("tinygrad_commits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("committed_utc", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("git_position", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("version_key", sa.String(length=80), nullable=True))
        batch_op.create_index(batch_op.f("ix_tinygrad_commits_git_position"), ["git_position"], unique=False)
    conn = op.get_bind()
    for commit_id, committed_at, version in conn.exec_driver_sql(
            "SELECT id, committed_at, version FROM tinygrad_commits").fetchall():
        conn.exec_driver_sql("UPDATE tinygrad_commits SET committed_utc = ?, version_key = ? WHERE id = ?",
                             (to_utc(committed_at), version_key(version), commit_id))
    with op.batch_alter_table("runs", schema=None, recreate="always",
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.add_column(sa.Column("is_current", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.drop_constraint("uq_runs_commit_suite_backend", type_="unique")
        batch_op.create_index("uq_runs_current", ["commit_id", "suite_id", "backend"], unique=True,
                              sqlite_where=sa.text("is_current = 1"))
    for name, select in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {select}")
    for sql in SVOD_VIEWS.values():
        op.execute(sql)


def downgrade() -> None:
    svod = {k: v for k, v in saved_views().items() if k.startswith("v_svod")}
    for name in [*OLD_VIEWS, "v_commits"]:
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.execute("DELETE FROM runs WHERE is_current = 0")
    with op.batch_alter_table("runs", schema=None, recreate="always",
                              table_kwargs={"sqlite_autoincrement": False}) as batch_op:
        batch_op.drop_index("uq_runs_current")
        batch_op.drop_column("is_current")
        batch_op.create_unique_constraint("uq_runs_commit_suite_backend", ["commit_id", "suite_id", "backend"])
    with op.batch_alter_table("tinygrad_commits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tinygrad_commits_git_position"))
        batch_op.drop_column("version_key")
        batch_op.drop_column("git_position")
        batch_op.drop_column("committed_utc")
    for name, select in PREVIOUS_VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {select}")
    for sql in svod.values():
        op.execute(sql)


# The views as revision 0004 defined them (0002's, with v_kernels reading kernels.name), restored by downgrade.
PREVIOUS_VIEWS = {
    "v_runs": """
        SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.subject, s.name AS suite, s.hash AS suite_hash,
               r.backend, r.status, r.renderers, r.started_at, r.finished_at, r.error
        FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON s.id = r.suite_id""",
    "v_run_cases": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, s.name AS suite, r.backend, k.name AS "case",
               rc.status, rc.seconds, cr.hash AS result_hash, cr.item_count, cr.kernel_count,
               d.text AS debug, e.text AS error
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN suites s ON s.id = r.suite_id JOIN cases k ON k.id = rc.case_id
        JOIN case_results cr ON cr.id = rc.case_result_id
        LEFT JOIN blobs d ON d.id = rc.debug_blob_id LEFT JOIN blobs e ON e.id = rc.error_blob_id""",
    "v_kernels": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, r.backend, k.name AS "case", si.position, si.root_op,
               kn.id AS kernel_id, kn.hash AS kernel_hash, kn.node_count, kn.name AS kernel_name,
               pr.text AS pyrender, at.text AS ast_text
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN kernels kn ON kn.id = si.kernel_id
        LEFT JOIN blobs pr ON pr.id = kn.pyrender_blob_id LEFT JOIN blobs at ON at.id = kn.ast_text_blob_id""",
    "v_sources": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, r.backend, k.name AS "case", si.position, p.renderer,
               p.name AS kernel_name, b.hash AS source_hash, b.text AS source, l.uop_count, p.error
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN programs p ON p.schedule_item_id = si.id
        LEFT JOIN blobs b ON b.id = p.source_blob_id LEFT JOIN linears l ON l.id = p.linear_id""",
    "v_pattern_matches": """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, k.name AS "case", pt.matcher, pt.function_name,
               pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN pattern_matches pm ON pm.case_result_id = rc.case_result_id
        JOIN patterns pt ON pt.id = pm.pattern_id""",
    "v_commit_patterns": """
        SELECT r.id AS run_id, c.sha, c.version, c.committed_at, pt.id AS pattern_id, pt.matcher,
               pt.function_name, pt.file, pt.line, pt.ops, pt.upat
        FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN pattern_set_members m ON m.pattern_set_id = r.pattern_set_id JOIN patterns pt ON pt.id = m.pattern_id""",
}
