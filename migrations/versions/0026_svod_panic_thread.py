"""Svod runs: the thread a panic happened on

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06 20:30:00

svod_runs.panic_thread: the NAME of Rust's `thread 'NAME' panicked at ...` (`<unnamed>` for rayon's workers, the
test's name for libtest's test threads, `main` for a program's main thread). Additive.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("svod_runs", sa.Column("panic_thread", sa.String(length=500), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE svod_runs DROP COLUMN panic_thread")
