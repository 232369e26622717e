"""lowering context: the ContextVars a kernel was lowered under, and the renderer tinygrad used

Revision ID: 0013
Revises: 0011
Create Date: 2026-12-03 11:20:00

A captured kernel is stored as tinygrad lowered it when the command ran: schedule_items.context holds the codegen
ContextVars that were in force (JSON object, e.g. {"NOOPT": 1}; NULL: none), and schedule_items.lowered_by the
renderer tinygrad used (C, LLVM, ...; NULL for suite cases, which every renderer lowers alike). A suite case that
declares a Context stores it the same way.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("schedule_items", sa.Column("context", sa.Text(), nullable=True))
    op.add_column("schedule_items", sa.Column("lowered_by", sa.String(length=40), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE schedule_items DROP COLUMN lowered_by")
    op.execute("ALTER TABLE schedule_items DROP COLUMN context")
