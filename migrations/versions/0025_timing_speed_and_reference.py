"""timing speed and the reference kernel: v_kernel_times and v_compile_times find a commit's latest session through
an index, and each timing session stores the reference kernel's time

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06 20:45:00

* The views pick each commit's latest session per machine, backend and case with a subquery per row. Without an index
  on (commit_id, machine_id, backend) SQLite planned it through ix_timing_sessions_machine_id: every session of the
  machine for each row (10,000 commits x 1 kernel: 26-28 s for `tgstore regressions`). The index
  ix_timing_sessions_commit_machine (commit_id, machine_id, backend, id) makes it a seek of the commit's few
  sessions (the views themselves are unchanged); ANALYZE gives the planner the tables' sizes (tgstore runs
  `PRAGMA optimize` after an ingest that stored timings).
* timing_sessions.reference_ns: the best time of a fixed C loop built with the machine's compiler, timed in the
  session beside the kernels (extract/child/reference.py): a persistent machine state (frequency, another host)
  shows there and is divided out of the session's times by `tgstore regressions`.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_timing_sessions_commit_machine", "timing_sessions",
                    ["commit_id", "machine_id", "backend", "id"])
    op.add_column("timing_sessions", sa.Column("reference_ns", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("timing_sessions", "reference_ns")  # SQLite 3.35+: no index or view names the column
    op.drop_index("ix_timing_sessions_commit_machine", "timing_sessions")
