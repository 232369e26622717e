"""Svod as it really runs: captured output, schedules, proven fragments; parity decided once and stored

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05 10:00:00

svod_runs.output_captured (libtest/nextest kept the test's output: kernels unknown, not 0) and schedule_count (a
test realizing twice prints two schedules); svod_kernels.schedule and svod_stages.schedule (which schedule);
svod_stages.fragment (unattributed stages proven to be one kernel's). svod_parity and svod_parity_pairs hold the
verdicts tgstore.svod.parity decides, per Svod run and tinygrad run, which the parity_matrix query reads. Additive.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = [("svod_runs", sa.Column("output_captured", sa.Boolean(), server_default=sa.false(), nullable=False)),
           ("svod_runs", sa.Column("schedule_count", sa.Integer(), server_default="0", nullable=False)),
           ("svod_kernels", sa.Column("schedule", sa.Integer(), server_default="0", nullable=False)),
           ("svod_stages", sa.Column("fragment", sa.Integer(), nullable=True)),
           ("svod_stages", sa.Column("schedule", sa.Integer(), server_default="0", nullable=False))]


# Plain ALTER TABLE, as 0018 and 0020 do (no batch rebuild under views).
def upgrade() -> None:
    for table, column in COLUMNS:
        op.add_column(table, column)
    op.create_table(
        "svod_parity",
        sa.Column("svod_run", sa.Integer(), nullable=False),
        sa.Column("tinygrad_run", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=20), nullable=False),
        sa.Column("kernel_index", sa.Integer(), nullable=True),
        sa.Column("svod_name", sa.String(length=200), nullable=True),
        sa.Column("tinygrad_position", sa.Integer(), nullable=True),
        sa.Column("tinygrad_name", sa.String(length=200), nullable=True),
        sa.Column("renderer", sa.String(length=20), nullable=True),
        sa.Column("paired_by", sa.String(length=40), nullable=True),
        sa.Column("stage", sa.String(length=200), nullable=False),
        sa.Column("basis", sa.String(length=20), nullable=False),
        sa.Column("verdict", sa.String(length=40), nullable=False),
        sa.Column("svod_nodes", sa.Integer(), nullable=True),
        sa.Column("tinygrad_nodes", sa.Integer(), nullable=True),
        sa.Column("tinygrad_pass", sa.String(length=200), nullable=True),
        sa.Column("why", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["svod_run"], ["svod_runs.id"], name=op.f("fk_svod_parity_svod_run_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tinygrad_run"], ["runs.id"], name=op.f("fk_svod_parity_tinygrad_run_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("svod_run", "tinygrad_run", "seq", name=op.f("pk_svod_parity")),
    )
    op.create_index(op.f("ix_svod_parity_tinygrad_run"), "svod_parity", ["tinygrad_run"])
    op.create_table(
        "svod_parity_pairs",
        sa.Column("svod_run", sa.Integer(), nullable=False),
        sa.Column("tinygrad_run", sa.Integer(), nullable=False),
        sa.Column("decided_at", sa.String(length=40), nullable=False),
        sa.Column("decider", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["svod_run"], ["svod_runs.id"], name=op.f("fk_svod_parity_pairs_svod_run_svod_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tinygrad_run"], ["runs.id"], name=op.f("fk_svod_parity_pairs_tinygrad_run_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("svod_run", "tinygrad_run", name=op.f("pk_svod_parity_pairs")),
    )
    op.create_index(op.f("ix_svod_parity_pairs_tinygrad_run"), "svod_parity_pairs", ["tinygrad_run"])


def downgrade() -> None:
    op.drop_index(op.f("ix_svod_parity_pairs_tinygrad_run"), table_name="svod_parity_pairs")
    op.drop_table("svod_parity_pairs")
    op.drop_index(op.f("ix_svod_parity_tinygrad_run"), table_name="svod_parity")
    op.drop_table("svod_parity")
    for table, column in reversed(COLUMNS):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column.name}")
