"""compile times: each kernel's lowering per renderer (and each case's scheduling), per named pass, per timing session

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 04:00:00

Compile times vary run to run, so, like kernel run times, they belong to a timing session (a commit timed on one
machine), never to the content-addressed results. One row per kernel and renderer (position -1, renderer
'schedule': the case's scheduling): the total in µs and each named pass's µs as a JSON array, in the order they ran;
the pass names and depths are a list stored once (compile_pass_lists, by hash), since most kernels of most commits
run the same passes (a row per pass would be 30 to 150 rows per kernel and renderer). `v_compile_times` is the latest
session per commit, machine and case, in history order.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

V_COMPILE_TIMES = """
    SELECT t.id AS compile_id, s.id AS session_id, s.run_id, c.sha, c.history_rank, c.git_position, c.subject,
           c.committed_at,
           m.fingerprint AS machine, m.hostname, s.backend, su.name AS suite, cs.name AS "case", t.position,
           t.renderer, k.name AS kernel_name, k.hash AS kernel_hash, t.total_us, l.names AS pass_names,
           t.pass_us, s.calibration_ns
    FROM compile_times t
    LEFT JOIN compile_pass_lists l ON l.id = t.pass_list_id
    JOIN timing_sessions s ON s.id = t.session_id
    JOIN tinygrad_commits c ON c.id = s.commit_id
    JOIN machines m ON m.id = s.machine_id
    JOIN suites su ON su.id = s.suite_id
    JOIN cases cs ON cs.id = t.case_id
    LEFT JOIN kernels k ON k.id = t.kernel_id
    WHERE s.id = (SELECT max(s2.id) FROM timing_sessions s2 JOIN compile_times t2 ON t2.session_id = s2.id
                  WHERE s2.commit_id = s.commit_id AND s2.machine_id = s.machine_id AND s2.backend = s.backend
                    AND t2.case_id = t.case_id)"""


def upgrade() -> None:
    op.create_table(
        "compile_pass_lists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("names", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compile_pass_lists")),
        sa.UniqueConstraint("hash", name=op.f("uq_compile_pass_lists_hash")),
    )
    op.create_table(
        "compile_times",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("renderer", sa.String(length=40), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=True),
        sa.Column("total_us", sa.Integer(), nullable=False),
        sa.Column("pass_list_id", sa.Integer(), nullable=True),
        sa.Column("pass_us", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_compile_times_case_id_cases")),
        sa.ForeignKeyConstraint(["kernel_id"], ["kernels.id"], name=op.f("fk_compile_times_kernel_id_kernels")),
        sa.ForeignKeyConstraint(["pass_list_id"], ["compile_pass_lists.id"],
                                name=op.f("fk_compile_times_pass_list_id_compile_pass_lists")),
        sa.ForeignKeyConstraint(["session_id"], ["timing_sessions.id"],
                                name=op.f("fk_compile_times_session_id_timing_sessions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compile_times")),
        sa.UniqueConstraint("session_id", "case_id", "position", "renderer", name="uq_compile_times_session_id"),
    )
    op.create_index(op.f("ix_compile_times_case_id"), "compile_times", ["case_id"])
    op.execute(f"CREATE VIEW v_compile_times AS {V_COMPILE_TIMES}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_compile_times")
    op.drop_table("compile_times")
    op.drop_table("compile_pass_lists")
