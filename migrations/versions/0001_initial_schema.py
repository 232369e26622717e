"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-02 15:20:52.864191
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "blobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_blobs")),
        sa.UniqueConstraint("hash", name=op.f("uq_blobs_hash")),
    )
    op.create_table(
        "case_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("kernel_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_results")),
        sa.UniqueConstraint("hash", name=op.f("uq_case_results_hash")),
    )
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cases")),
        sa.UniqueConstraint("name", name=op.f("uq_cases_name")),
    )
    op.create_table(
        "linears",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("uop_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linears")),
        sa.UniqueConstraint("hash", name=op.f("uq_linears_hash")),
    )
    op.create_table(
        "pattern_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("pattern_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pattern_sets")),
        sa.UniqueConstraint("hash", name=op.f("uq_pattern_sets_hash")),
    )
    op.create_table(
        "patterns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("matcher", sa.String(length=200), nullable=True),
        sa.Column("ops", sa.Text(), nullable=True),
        sa.Column("upat", sa.Text(), nullable=True),
        sa.Column("function_name", sa.String(length=200), nullable=True),
        sa.Column("file", sa.String(length=300), nullable=True),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_patterns")),
        sa.UniqueConstraint("hash", name=op.f("uq_patterns_hash")),
    )
    with op.batch_alter_table("patterns", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_patterns_matcher"), ["matcher"], unique=False)

    op.create_table(
        "suites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suites")),
        sa.UniqueConstraint("hash", name=op.f("uq_suites_hash")),
    )
    op.create_table(
        "tinygrad_commits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha", sa.String(length=80), nullable=False),
        sa.Column("tree_hash", sa.String(length=64), nullable=False),
        sa.Column("version", sa.String(length=40), nullable=True),
        sa.Column("committed_at", sa.String(length=40), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tinygrad_commits")),
        sa.UniqueConstraint("sha", name=op.f("uq_tinygrad_commits_sha")),
    )
    with op.batch_alter_table("tinygrad_commits", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tinygrad_commits_tree_hash"), ["tree_hash"], unique=False)

    op.create_table(
        "case_missing",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("feature", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["case_result_id"],
            ["case_results.id"],
            name=op.f("fk_case_missing_case_result_id_case_results"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_missing")),
    )
    with op.batch_alter_table("case_missing", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_case_missing_case_result_id"), ["case_result_id"], unique=False)

    op.create_table(
        "kernels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("root_op", sa.String(length=40), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("ast_text_blob_id", sa.Integer(), nullable=True),
        sa.Column("pyrender_blob_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["ast_text_blob_id"], ["blobs.id"], name=op.f("fk_kernels_ast_text_blob_id_blobs")),
        sa.ForeignKeyConstraint(["pyrender_blob_id"], ["blobs.id"], name=op.f("fk_kernels_pyrender_blob_id_blobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kernels")),
        sa.UniqueConstraint("hash", name=op.f("uq_kernels_hash")),
    )
    op.create_table(
        "linear_uops",
        sa.Column("linear_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("op", sa.String(length=40), nullable=False),
        sa.Column("dtype", sa.String(length=200), nullable=True),
        sa.Column("arg", sa.Text(), nullable=True),
        sa.Column("src", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["linear_id"], ["linears.id"], name=op.f("fk_linear_uops_linear_id_linears"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("linear_id", "idx", name=op.f("pk_linear_uops")),
    )
    op.create_table(
        "pattern_matches",
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("pattern_id", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["case_result_id"],
            ["case_results.id"],
            name=op.f("fk_pattern_matches_case_result_id_case_results"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["pattern_id"], ["patterns.id"], name=op.f("fk_pattern_matches_pattern_id_patterns")),
        sa.PrimaryKeyConstraint("case_result_id", "pattern_id", name=op.f("pk_pattern_matches")),
    )
    with op.batch_alter_table("pattern_matches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pattern_matches_pattern_id"), ["pattern_id"], unique=False)

    op.create_table(
        "pattern_set_members",
        sa.Column("pattern_set_id", sa.Integer(), nullable=False),
        sa.Column("pattern_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["pattern_id"], ["patterns.id"], name=op.f("fk_pattern_set_members_pattern_id_patterns")
        ),
        sa.ForeignKeyConstraint(
            ["pattern_set_id"],
            ["pattern_sets.id"],
            name=op.f("fk_pattern_set_members_pattern_set_id_pattern_sets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("pattern_set_id", "pattern_id", name=op.f("pk_pattern_set_members")),
    )
    with op.batch_alter_table("pattern_set_members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pattern_set_members_pattern_id"), ["pattern_id"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("suite_id", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=40), nullable=False),
        sa.Column("renderers", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("started_at", sa.String(length=40), nullable=True),
        sa.Column("finished_at", sa.String(length=40), nullable=True),
        sa.Column("ingested_at", sa.String(length=40), nullable=False),
        sa.Column("tgstore_version", sa.String(length=40), nullable=False),
        sa.Column("bundle_version", sa.Integer(), nullable=True),
        sa.Column("debug_level", sa.Integer(), nullable=True),
        sa.Column("python", sa.String(length=40), nullable=True),
        sa.Column("tinygrad_path", sa.Text(), nullable=True),
        sa.Column("features", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("stderr", sa.Text(), nullable=True),
        sa.Column("pattern_set_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["commit_id"], ["tinygrad_commits.id"], name=op.f("fk_runs_commit_id_tinygrad_commits")
        ),
        sa.ForeignKeyConstraint(
            ["pattern_set_id"], ["pattern_sets.id"], name=op.f("fk_runs_pattern_set_id_pattern_sets")
        ),
        sa.ForeignKeyConstraint(["suite_id"], ["suites.id"], name=op.f("fk_runs_suite_id_suites")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("commit_id", "suite_id", "backend", name="uq_runs_commit_suite_backend"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_commit_id"), ["commit_id"], unique=False)
        batch_op.create_index("ix_runs_status", ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_suite_id"), ["suite_id"], unique=False)

    op.create_table(
        "run_cases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("debug_blob_id", sa.Integer(), nullable=True),
        sa.Column("error_blob_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_run_cases_case_id_cases")),
        sa.ForeignKeyConstraint(
            ["case_result_id"], ["case_results.id"], name=op.f("fk_run_cases_case_result_id_case_results")
        ),
        sa.ForeignKeyConstraint(["debug_blob_id"], ["blobs.id"], name=op.f("fk_run_cases_debug_blob_id_blobs")),
        sa.ForeignKeyConstraint(["error_blob_id"], ["blobs.id"], name=op.f("fk_run_cases_error_blob_id_blobs")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_cases_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_cases")),
        sa.UniqueConstraint("run_id", "case_id", name="uq_run_cases_run_case"),
    )
    with op.batch_alter_table("run_cases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_cases_case_id"), ["case_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_cases_case_result_id"), ["case_result_id"], unique=False)

    op.create_table(
        "run_missing",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("case_name", sa.String(length=200), nullable=True),
        sa.Column("feature", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_missing_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_missing")),
    )
    with op.batch_alter_table("run_missing", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_missing_run_id"), ["run_id"], unique=False)

    op.create_table(
        "schedule_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        sa.Column("root_op", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["case_result_id"],
            ["case_results.id"],
            name=op.f("fk_schedule_items_case_result_id_case_results"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["kernel_id"], ["kernels.id"], name=op.f("fk_schedule_items_kernel_id_kernels")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedule_items")),
        sa.UniqueConstraint("case_result_id", "position", name="uq_schedule_items_result_position"),
    )
    with op.batch_alter_table("schedule_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_schedule_items_kernel_id"), ["kernel_id"], unique=False)

    op.create_table(
        "uop_edges",
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        sa.Column("parent_idx", sa.Integer(), nullable=False),
        sa.Column("src_pos", sa.Integer(), nullable=False),
        sa.Column("child_idx", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["kernel_id"], ["kernels.id"], name=op.f("fk_uop_edges_kernel_id_kernels"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("kernel_id", "parent_idx", "src_pos", name=op.f("pk_uop_edges")),
    )
    op.create_table(
        "uop_nodes",
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("op", sa.String(length=40), nullable=False),
        sa.Column("dtype", sa.String(length=200), nullable=True),
        sa.Column("arg", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["kernel_id"], ["kernels.id"], name=op.f("fk_uop_nodes_kernel_id_kernels"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("kernel_id", "idx", name=op.f("pk_uop_nodes")),
    )
    op.create_table(
        "programs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schedule_item_id", sa.Integer(), nullable=False),
        sa.Column("renderer", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("source_blob_id", sa.Integer(), nullable=True),
        sa.Column("linear_id", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["linear_id"], ["linears.id"], name=op.f("fk_programs_linear_id_linears")),
        sa.ForeignKeyConstraint(
            ["schedule_item_id"],
            ["schedule_items.id"],
            name=op.f("fk_programs_schedule_item_id_schedule_items"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["source_blob_id"], ["blobs.id"], name=op.f("fk_programs_source_blob_id_blobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_programs")),
        sa.UniqueConstraint("schedule_item_id", "renderer", name="uq_programs_item_renderer"),
    )
    with op.batch_alter_table("programs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_programs_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_programs_source_blob_id"), ["source_blob_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("programs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_programs_source_blob_id"))
        batch_op.drop_index(batch_op.f("ix_programs_name"))

    op.drop_table("programs")
    op.drop_table("uop_nodes")
    op.drop_table("uop_edges")
    with op.batch_alter_table("schedule_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_schedule_items_kernel_id"))

    op.drop_table("schedule_items")
    with op.batch_alter_table("run_missing", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_missing_run_id"))

    op.drop_table("run_missing")
    with op.batch_alter_table("run_cases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_cases_case_result_id"))
        batch_op.drop_index(batch_op.f("ix_run_cases_case_id"))

    op.drop_table("run_cases")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_suite_id"))
        batch_op.drop_index("ix_runs_status")
        batch_op.drop_index(batch_op.f("ix_runs_commit_id"))

    op.drop_table("runs")
    with op.batch_alter_table("pattern_set_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pattern_set_members_pattern_id"))

    op.drop_table("pattern_set_members")
    with op.batch_alter_table("pattern_matches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pattern_matches_pattern_id"))

    op.drop_table("pattern_matches")
    op.drop_table("linear_uops")
    op.drop_table("kernels")
    with op.batch_alter_table("case_missing", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_case_missing_case_result_id"))

    op.drop_table("case_missing")
    with op.batch_alter_table("tinygrad_commits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tinygrad_commits_tree_hash"))

    op.drop_table("tinygrad_commits")
    op.drop_table("suites")
    with op.batch_alter_table("patterns", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_patterns_matcher"))

    op.drop_table("patterns")
    op.drop_table("pattern_sets")
    op.drop_table("linears")
    op.drop_table("cases")
    op.drop_table("case_results")
    op.drop_table("blobs")
