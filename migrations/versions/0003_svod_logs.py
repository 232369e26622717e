"""svod logs: Svod (Rust port of tinygrad) test logs, their events, stage node counts, trees, kernels, problems

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 16:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# v_svod_stages: one row per stage of a kernel of a Svod log. A stage is a `[per-stage] LABEL : node_count=N` line;
# a `[dump-stage]` block whose stage has no per-stage line in the same kernel adds a row counted from its tree
# (source says which; an unterminated dump's tree may be cut short). v_svod_kernels: per kernel, the AST sizes and
# the final stage (20-final_rewrite, else the last complete stage in log order).
VIEWS = {
    "v_svod_stages": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, s.kernel_index, s.label AS stage,
               s.line_no, s.node_count, 'per-stage' AS source,
               (SELECT d.tree_id FROM svod_stage_dumps d WHERE d.run_id = s.run_id AND d.label = s.label
                  AND d.kernel_index IS s.kernel_index ORDER BY d.line_no LIMIT 1) AS tree_id
        FROM svod_per_stage s JOIN svod_runs r ON r.id = s.run_id JOIN cases c ON c.id = r.case_id
        UNION ALL
        SELECT c.name, r.svod_commit, r.id, r.ingested_at, d.kernel_index, d.label, d.line_no, t.node_count,
               CASE WHEN d.end_line_no IS NULL THEN 'dump-stage (unterminated)' ELSE 'dump-stage' END, d.tree_id
        FROM svod_stage_dumps d JOIN svod_runs r ON r.id = d.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN svod_trees t ON t.id = d.tree_id
        WHERE NOT EXISTS (SELECT 1 FROM svod_per_stage s WHERE s.run_id = d.run_id AND s.label = d.label
                            AND s.kernel_index IS d.kernel_index)""",
    "v_svod_kernels": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, k.kernel_index,
               k.name AS kernel_name, k.line_no, ti.node_count AS initial_nodes, tp.node_count AS pre_nodes,
               tz.node_count AS optimized_nodes,
               (SELECT st.stage FROM v_svod_stages st WHERE st.run_id = k.run_id AND st.kernel_index = k.kernel_index
                  AND st.source <> 'dump-stage (unterminated)'
                ORDER BY st.stage = '20-final_rewrite' DESC, st.line_no DESC LIMIT 1) AS final_stage,
               (SELECT st.node_count FROM v_svod_stages st WHERE st.run_id = k.run_id
                  AND st.kernel_index = k.kernel_index AND st.source <> 'dump-stage (unterminated)'
                ORDER BY st.stage = '20-final_rewrite' DESC, st.line_no DESC LIMIT 1) AS final_nodes,
               b.text AS code
        FROM svod_kernels k JOIN svod_runs r ON r.id = k.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN svod_trees ti ON ti.id = k.initial_tree_id LEFT JOIN svod_trees tp ON tp.id = k.pre_tree_id
        LEFT JOIN svod_trees tz ON tz.id = k.optimized_tree_id LEFT JOIN blobs b ON b.id = k.code_blob_id""",
}


def upgrade() -> None:
    op.create_table(
        "svod_trees",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("root_op", sa.String(length=40), nullable=True),
        sa.Column("structure_blob_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["structure_blob_id"], ["blobs.id"],
                                name=op.f("fk_svod_trees_structure_blob_id_blobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_trees")),
        sa.UniqueConstraint("hash", name=op.f("uq_svod_trees_hash")),
    )
    op.create_table(
        "svod_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("svod_commit", sa.String(length=80), nullable=True),
        sa.Column("log_blob_id", sa.Integer(), nullable=False),
        sa.Column("log_hash", sa.String(length=64), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=True),
        sa.Column("ingested_at", sa.String(length=40), nullable=False),
        sa.Column("tgstore_version", sa.String(length=40), nullable=False),
        sa.Column("line_count", sa.Integer(), nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("kernel_count", sa.Integer(), nullable=False),
        sa.Column("stage_dump_count", sa.Integer(), nullable=False),
        sa.Column("per_stage_count", sa.Integer(), nullable=False),
        sa.Column("raw_line_count", sa.Integer(), nullable=False),
        sa.Column("problem_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_svod_runs_case_id_cases")),
        sa.ForeignKeyConstraint(["log_blob_id"], ["blobs.id"], name=op.f("fk_svod_runs_log_blob_id_blobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_runs")),
        sa.UniqueConstraint("case_id", "log_hash", name="uq_svod_runs_case_log"),
    )
    op.create_index(op.f("ix_svod_runs_case_id"), "svod_runs", ["case_id"], unique=False)
    op.create_index(op.f("ix_svod_runs_svod_commit"), "svod_runs", ["svod_commit"], unique=False)
    op.create_table(
        "svod_events",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.String(length=40), nullable=True),
        sa.Column("level", sa.String(length=20), nullable=True),
        sa.Column("target", sa.String(length=200), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("elapsed_ms", sa.Float(), nullable=True),
        sa.Column("node_count", sa.Integer(), nullable=True),
        sa.Column("kernel_index", sa.Integer(), nullable=True),
        sa.Column("tree_field", sa.String(length=40), nullable=True),
        sa.Column("tree_id", sa.Integer(), nullable=True),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_events_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"], name=op.f("fk_svod_events_tree_id_svod_trees")),
        sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_events")),
    )
    op.create_index(op.f("ix_svod_events_tree_id"), "svod_events", ["tree_id"], unique=False)
    op.create_table(
        "svod_event_trees",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("field", sa.String(length=40), nullable=False),
        sa.Column("tree_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_event_trees_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"],
                                name=op.f("fk_svod_event_trees_tree_id_svod_trees")),
        sa.PrimaryKeyConstraint("run_id", "line_no", "field", name=op.f("pk_svod_event_trees")),
    )
    op.create_index(op.f("ix_svod_event_trees_tree_id"), "svod_event_trees", ["tree_id"], unique=False)
    op.create_table(
        "svod_stage_dumps",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("end_line_no", sa.Integer(), nullable=True),
        sa.Column("kernel_index", sa.Integer(), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("tree_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_stage_dumps_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"],
                                name=op.f("fk_svod_stage_dumps_tree_id_svod_trees")),
        sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_stage_dumps")),
    )
    op.create_index(op.f("ix_svod_stage_dumps_tree_id"), "svod_stage_dumps", ["tree_id"], unique=False)
    op.create_table(
        "svod_per_stage",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("kernel_index", sa.Integer(), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_per_stage_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_per_stage")),
    )
    op.create_table(
        "svod_kernels",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("kernel_index", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("initial_tree_id", sa.Integer(), nullable=True),
        sa.Column("pre_tree_id", sa.Integer(), nullable=True),
        sa.Column("optimized_tree_id", sa.Integer(), nullable=True),
        sa.Column("code_blob_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_kernels_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["initial_tree_id"], ["svod_trees.id"],
                                name=op.f("fk_svod_kernels_initial_tree_id_svod_trees")),
        sa.ForeignKeyConstraint(["pre_tree_id"], ["svod_trees.id"],
                                name=op.f("fk_svod_kernels_pre_tree_id_svod_trees")),
        sa.ForeignKeyConstraint(["optimized_tree_id"], ["svod_trees.id"],
                                name=op.f("fk_svod_kernels_optimized_tree_id_svod_trees")),
        sa.ForeignKeyConstraint(["code_blob_id"], ["blobs.id"], name=op.f("fk_svod_kernels_code_blob_id_blobs")),
        sa.PrimaryKeyConstraint("run_id", "kernel_index", name=op.f("pk_svod_kernels")),
    )
    op.create_table(
        "svod_pattern_matches",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("op_key", sa.String(length=200), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"],
                                name=op.f("fk_svod_pattern_matches_run_id_svod_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "op_key", name=op.f("pk_svod_pattern_matches")),
    )
    op.create_table(
        "svod_problems",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_problems_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_problems")),
    )
    op.create_index(op.f("ix_svod_problems_run_id"), "svod_problems", ["run_id"], unique=False)
    for name, select in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {select}")


def downgrade() -> None:
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.drop_index(op.f("ix_svod_problems_run_id"), table_name="svod_problems")
    op.drop_table("svod_problems")
    op.drop_table("svod_pattern_matches")
    op.drop_table("svod_kernels")
    op.drop_table("svod_per_stage")
    op.drop_index(op.f("ix_svod_stage_dumps_tree_id"), table_name="svod_stage_dumps")
    op.drop_table("svod_stage_dumps")
    op.drop_index(op.f("ix_svod_event_trees_tree_id"), table_name="svod_event_trees")
    op.drop_table("svod_event_trees")
    op.drop_index(op.f("ix_svod_events_tree_id"), table_name="svod_events")
    op.drop_table("svod_events")
    op.drop_index(op.f("ix_svod_runs_svod_commit"), table_name="svod_runs")
    op.drop_index(op.f("ix_svod_runs_case_id"), table_name="svod_runs")
    op.drop_table("svod_runs")
    op.drop_table("svod_trees")
