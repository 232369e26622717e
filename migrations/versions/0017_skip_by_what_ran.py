"""skip by what ran: a run's inputs, where a copied run comes from and why, paths a partial clone lacked

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 04:00:00

* runs.inputs_blob_id: what the extraction read of its tinygrad (a JSON blob: each loaded or opened file's git blob
  id, each listed directory's entries, the version files, the settings), shared by the runs that read the same.
* runs.copied_from, runs.copy_reason: a run a sweep copied instead of extracting (the sha of the commit whose run it
  is, and why that is the same output: the package is identical, or no file the run read changed).
* ix_runs_case_set_current: a covering index for the history queries' case set -> current runs -> commits join.
* runs.missing_paths: files of the commit the clone could not read (JSON list; a blobless or damaged clone); the
  extraction ran without them, since it read none of them, or the run says it is untestable.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE (a batch rebuild of runs would trip over the views on it), as 0010 does
    op.execute("ALTER TABLE runs ADD COLUMN inputs_blob_id INTEGER "
               "CONSTRAINT fk_runs_inputs_blob_id_blobs REFERENCES blobs (id)")
    op.add_column("runs", sa.Column("copied_from", sa.String(length=80), nullable=True))
    op.add_column("runs", sa.Column("copy_reason", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("missing_paths", sa.Text(), nullable=True))
    # history queries (pass_history, source_history, kernel_counts, ...) join a case's case sets to their current
    # runs and those to commits: covered by this index, without a row lookup per run (10,000 runs a case)
    op.create_index("ix_runs_case_set_current", "runs", ["case_set_id", "is_current", "commit_id", "suite_id",
                                                          "backend"])


def downgrade() -> None:
    op.drop_index("ix_runs_case_set_current", "runs")
    for column in ("missing_paths", "copy_reason", "copied_from", "inputs_blob_id"):
        op.execute(f"ALTER TABLE runs DROP COLUMN {column}")
