"""regression triage and confirmations: what people and re-timing said about a step `tgstore regressions` found

Revision ID: 0024
Revises: 0022
Create Date: 2026-12-04 23:40:00

* regression_triage: a regression's state (new, acknowledged, fixed, ignored) with a note and its date, as LNT keeps
  it; keyed by the series (metric, machine, case, kernel position, renderer) and the commit range (good, bad), so a
  rerun of the analysis that finds the same step finds its state. `tgstore triage` sets it.
* regression_confirmations: each re-timing of a step's two commits, interleaved in one session
  (`tgstore regressions --confirm`): the per-round best times of both, the ratio, the exact Mann-Whitney p over
  rounds, and the verdict. The latest per key is the regression's confirmation.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = ("metric", "machine", "case_name", "position", "renderer", "good", "bad")


def _key_columns() -> list[sa.Column]:
    return [sa.Column("metric", sa.String(20), nullable=False), sa.Column("machine", sa.String(64), nullable=False),
            sa.Column("case_name", sa.String(200), nullable=False), sa.Column("position", sa.Integer, nullable=False),
            sa.Column("renderer", sa.String(40), nullable=False), sa.Column("good", sa.String(64), nullable=False),
            sa.Column("bad", sa.String(64), nullable=False)]


def upgrade() -> None:
    op.create_table(
        "regression_triage",
        sa.Column("id", sa.Integer, primary_key=True),
        *_key_columns(),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.UniqueConstraint(*KEY, name="uq_regression_triage_key"),
    )
    op.create_table(
        "regression_confirmations",
        sa.Column("id", sa.Integer, primary_key=True),
        *_key_columns(),
        sa.Column("rounds", sa.Integer, nullable=False),
        sa.Column("good_ns", sa.Text, nullable=False),
        sa.Column("bad_ns", sa.Text, nullable=False),
        sa.Column("ratio", sa.Float),
        sa.Column("p", sa.Float),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("confirmed_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_regression_confirmations_machine", "regression_confirmations", ["machine"])


def downgrade() -> None:
    op.drop_index("ix_regression_confirmations_machine", "regression_confirmations")
    op.drop_table("regression_confirmations")
    op.drop_table("regression_triage")
