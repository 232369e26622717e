"""capture mode: where a captured kernel came from, and the command a run captured

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 22:00:00

`tgstore ingest --capture -- COMMAND` stores every kernel tinygrad lowered while a command ran: each schedule item
keeps its call site (file:line in function, outside tinygrad), and the run keeps the command (JSON: argv, working
directory, exit status, seconds). A case that an era cannot express has run_cases.status 'unsupported' (no schema
change: the column is free text).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE (SQLite 3.35+ drops columns in place): a batch rebuild of runs would trip over the views on it.
def upgrade() -> None:
    op.add_column("schedule_items", sa.Column("call_site", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("command", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN command")
    op.execute("ALTER TABLE schedule_items DROP COLUMN call_site")
