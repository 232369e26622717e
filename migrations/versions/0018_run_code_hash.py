"""runs.code_hash: the hash of the tgstore code that stored a run

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 03:45:00

`tgstore_version` stays 0.1.0 while the code changes; `code_hash` (tgstore.resources.code_hash: the package's *.py,
the queries and the migrations) says which code stored a run, so a stale database is found by content (the tests'
README database is rebuilt when it differs), not by file times. Runs stored before this migration have none.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, as 0009 does: a batch rebuild of runs would trip over the views on it.
def upgrade() -> None:
    op.add_column("runs", sa.Column("code_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN code_hash")
