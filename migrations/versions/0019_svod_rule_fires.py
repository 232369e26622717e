"""svod_rule_fires: Svod's `pattern matched` events counted per kernel, pass and op key

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04 07:40:00

One row per (stretch of matches, op_key): the matches Svod printed between two pass events of one kernel (or of
the schedule, or before a kernel's generated code), tied to the stage they precede (`stage_seq`, `label`) and the
stage before them (`since`). Matches no pass event ties to a kernel (kernels optimized in parallel, or after the
last pass) have no kernel and no label (`unattributed`). Additive.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "svod_rule_fires",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kernel_index", sa.Integer(), nullable=True),
        sa.Column("stage_seq", sa.Integer(), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("since", sa.String(length=200), nullable=True),
        sa.Column("op_key", sa.String(length=200), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("file_position", sa.Integer(), nullable=False),
        sa.Column("first_line", sa.Integer(), nullable=False),
        sa.Column("last_line", sa.Integer(), nullable=False),
        sa.Column("unattributed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_rule_fires_run_id_svod_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_svod_rule_fires")),
    )


def downgrade() -> None:
    op.drop_table("svod_rule_fires")
