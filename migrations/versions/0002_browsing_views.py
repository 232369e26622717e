"""browsing views: runs, cases, kernels, sources and pattern matches joined with their commit

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 15:30:00
"""
from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The content-addressed tables are normalized for size; these views put commit, case and text side by side for
# queries and Datasette browsing.
VIEWS = {
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
               kn.id AS kernel_id, kn.hash AS kernel_hash, kn.node_count,
               (SELECT p.name FROM programs p WHERE p.schedule_item_id = si.id AND p.name IS NOT NULL
                ORDER BY p.renderer = 'C' DESC, p.renderer LIMIT 1) AS kernel_name,
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


def upgrade() -> None:
    for name, select in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {select}")


def downgrade() -> None:
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
