"""browse speed: v_passes, v_pattern_matches and v_run_cases join case sets to their current runs once

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04 13:30:00

* v_passes: the same rows and columns, from case_set_members joined once to runs (0006's went through the run_cases
  view and joined runs a second time for is_current). `+r.is_current` keeps SQLite from building an automatic
  index on is_current and starting there: a page of the view filtered by case and pass name (a Datasette page of
  v_passes) took 0.3-0.8 s on the 10,000-commit bench database and takes a few ms; filtered by run, graph or sha
  it is as fast or faster (bench/README.md, "Browsing at 10,000 commits").
* v_pattern_matches: the same change (filtered by case, a page took 0.15 s and takes 1 ms).
* v_run_cases: the same change (filtered by a status no row has, 2.3 s -> 0.04 s; rows and columns unchanged,
  `seconds` read from the run's case_seconds as run_cases does).
"""
from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MEMBERS_TO_CURRENT_RUNS = ("FROM case_set_members m JOIN runs r ON r.case_set_id = m.case_set_id "
                           "AND +r.is_current = 1")
V_PASSES = f"""
    SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name AS "case",
           'lower' AS scope, si.position, kn.name AS kernel_name, p.renderer, pe.position AS pass_position,
           pe.name AS pass_name, pe.depth, pe.node_count, pe.changed, g.hash AS graph_hash, pe.graph_id
    {MEMBERS_TO_CURRENT_RUNS}
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = m.case_id
    JOIN schedule_items si ON si.case_result_id = m.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
    JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id
    UNION ALL
    SELECT r.id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name, 'schedule', NULL, NULL,
           NULL, pe.position, pe.name, pe.depth, pe.node_count, pe.changed, g.hash, pe.graph_id
    {MEMBERS_TO_CURRENT_RUNS}
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = m.case_id
    JOIN case_results cr ON cr.id = m.case_result_id
    JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id"""

V_PATTERN_MATCHES = f"""
    SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.history_rank, k.name AS "case", pt.matcher,
           pt.function_name, pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
    {MEMBERS_TO_CURRENT_RUNS}
    JOIN v_commits c ON c.commit_id = r.commit_id
    JOIN cases k ON k.id = m.case_id JOIN pattern_matches pm ON pm.match_set_id = m.match_set_id
    JOIN patterns pt ON pt.id = pm.pattern_id"""

V_RUN_CASES = f"""
    SELECT r.id AS run_id, c.sha, c.version, c.committed_at, c.history_rank, s.name AS suite, r.backend,
           k.name AS "case", m.status, json_extract(r.case_seconds, '$[' || m.position || ']') AS seconds,
           cr.hash AS result_hash, cr.item_count, cr.kernel_count, d.text AS debug, e.text AS error
    {MEMBERS_TO_CURRENT_RUNS}
    JOIN v_commits c ON c.commit_id = r.commit_id
    JOIN suites s ON s.id = r.suite_id JOIN cases k ON k.id = m.case_id
    JOIN case_results cr ON cr.id = m.case_result_id
    LEFT JOIN blobs d ON d.id = m.debug_blob_id LEFT JOIN blobs e ON e.id = m.error_blob_id"""

# 0005's, 0006's and 0007's definitions, restored by downgrade
OLD_V_PASSES = """
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name AS "case",
           'lower' AS scope, si.position, kn.name AS kernel_name, p.renderer, pe.position AS pass_position,
           pe.name AS pass_name, pe.depth, pe.node_count, pe.changed, g.hash AS graph_hash, pe.graph_id
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = rc.case_id
    JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
    JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id
    UNION ALL
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name, 'schedule', NULL, NULL,
           NULL, pe.position, pe.name, pe.depth, pe.node_count, pe.changed, g.hash, pe.graph_id
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = rc.case_id
    JOIN case_results cr ON cr.id = rc.case_result_id
    JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id"""

OLD_V_PATTERN_MATCHES = """
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, k.name AS "case", pt.matcher,
           pt.function_name, pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id
    JOIN cases k ON k.id = rc.case_id JOIN pattern_matches pm ON pm.match_set_id = rc.match_set_id
    JOIN patterns pt ON pt.id = pm.pattern_id"""

OLD_V_RUN_CASES = """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, s.name AS suite, r.backend,
               k.name AS "case", rc.status, rc.seconds, cr.hash AS result_hash, cr.item_count, cr.kernel_count,
               d.text AS debug, e.text AS error
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id
        JOIN suites s ON s.id = r.suite_id JOIN cases k ON k.id = rc.case_id
        JOIN case_results cr ON cr.id = rc.case_result_id
        LEFT JOIN blobs d ON d.id = rc.debug_blob_id LEFT JOIN blobs e ON e.id = rc.error_blob_id"""


def replace_views(views: dict[str, str]) -> None:
    for name, select in views.items():
        op.execute(f"DROP VIEW {name}")
        op.execute(f"CREATE VIEW {name} AS {select}")


def upgrade() -> None:
    replace_views({"v_passes": V_PASSES, "v_pattern_matches": V_PATTERN_MATCHES, "v_run_cases": V_RUN_CASES})


def downgrade() -> None:
    replace_views({"v_passes": OLD_V_PASSES, "v_pattern_matches": OLD_V_PATTERN_MATCHES,
                   "v_run_cases": OLD_V_RUN_CASES})
