"""svod sessions: a run per libtest test, its outcome and failure; stages no kernel can be proven to own

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 04:00:00

A log of several tests is one Svod run per test (`test`, `variant`: clang, llvm, amd, metal, cuda); `outcome` is
ok, FAILED, ignored, skipped (a GPU variant that printed only its skip line) or NULL (the log ends inside the test);
a panic's location and message, the kernel it hit and the last stage that kernel reached. Stages of kernels optimized
in parallel that the log holds no evidence to attribute are stored `unattributed` (kernel_index NULL), never as
kernels of their own.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE ADD COLUMN (no batch copy): the views over svod_runs/svod_stages stay valid
    op.add_column("svod_runs", sa.Column("test", sa.String(300)))
    op.add_column("svod_runs", sa.Column("variant", sa.String(20)))
    op.add_column("svod_runs", sa.Column("outcome", sa.String(20)))
    op.add_column("svod_runs", sa.Column("panic_location", sa.Text()))
    op.add_column("svod_runs", sa.Column("panic_message", sa.Text()))
    op.add_column("svod_runs", sa.Column("failed_kernel", sa.Integer()))
    op.add_column("svod_runs", sa.Column("last_stage", sa.String(200)))
    op.add_column("svod_stages", sa.Column("unattributed", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("svod_stages", "unattributed")  # SQLite >= 3.35 drops a column in place
    for column in ("last_stage", "failed_kernel", "panic_message", "panic_location", "outcome", "variant", "test"):
        op.drop_column("svod_runs", column)
