"""kernel timings: machines, timing sessions and per-kernel times (`ingest --time`)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 11:00:00

A timed extraction stores, apart from the content-addressed results (which stay free of timings), the machine it ran
on (fingerprinted: times are compared only within one machine), a session per commit timed (calibration figures
before and after), and each kernel's min / median / max ns, spread, samples and tinygrad's ops and memory
estimates, or why it has none (error, crashed, timeout). `v_kernel_times` joins them with commits in history order.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each commit's latest session per machine and suite; rows of kernels that ran, with throughputs.
V_KERNEL_TIMES = """
    SELECT t.id AS timing_id, s.id AS session_id, s.run_id, c.sha, c.history_rank, c.subject, c.committed_at,
           m.fingerprint AS machine, m.hostname, s.backend, su.name AS suite, cs.name AS "case", t.position,
           coalesce(k.name, t.program) AS kernel_name, k.hash AS kernel_hash, t.program, t.status, t.ns_min,
           t.ns_median, t.ns_max, t.spread, t.ops, t.mem_bytes,
           CASE WHEN t.ns_min > 0 AND t.ops IS NOT NULL THEN round(1.0 * t.ops / t.ns_min, 4) END AS gflops,
           CASE WHEN t.ns_min > 0 AND t.mem_bytes IS NOT NULL THEN round(1.0 * t.mem_bytes / t.ns_min, 4) END
             AS gbps,
           s.calibration_ns, t.error
    FROM kernel_timings t
    JOIN timing_sessions s ON s.id = t.session_id
    JOIN tinygrad_commits c ON c.id = s.commit_id
    JOIN machines m ON m.id = s.machine_id
    JOIN suites su ON su.id = s.suite_id
    JOIN cases cs ON cs.id = t.case_id
    LEFT JOIN kernels k ON k.id = t.kernel_id
    WHERE s.id = (SELECT max(s2.id) FROM timing_sessions s2 JOIN kernel_timings t2 ON t2.session_id = s2.id
                  WHERE s2.commit_id = s.commit_id AND s2.machine_id = s.machine_id AND s2.backend = s.backend
                    AND t2.case_id = t.case_id)"""


def upgrade() -> None:
    op.create_table(
        "machines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("hostname", sa.String(length=200), nullable=True),
        sa.Column("cpu_model", sa.String(length=200), nullable=True),
        sa.Column("cores", sa.Integer(), nullable=True),
        sa.Column("device", sa.String(length=40), nullable=True),
        sa.Column("compiler", sa.String(length=200), nullable=True),
        sa.Column("compiler_version", sa.String(length=200), nullable=True),
        sa.Column("details", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machines")),
        sa.UniqueConstraint("fingerprint", name=op.f("uq_machines_fingerprint")),
    )
    op.create_table(
        "timing_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("suite_id", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=40), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("machine_id", sa.Integer(), nullable=False),
        sa.Column("timer", sa.String(length=40), nullable=True),
        sa.Column("runs", sa.Integer(), nullable=True),
        sa.Column("warmup", sa.Integer(), nullable=True),
        sa.Column("calibration_ns", sa.Integer(), nullable=True),
        sa.Column("calibration_end_ns", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.String(length=40), nullable=True),
        sa.Column("ingested_at", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["commit_id"], ["tinygrad_commits.id"],
                                name=op.f("fk_timing_sessions_commit_id_tinygrad_commits")),
        sa.ForeignKeyConstraint(["machine_id"], ["machines.id"], name=op.f("fk_timing_sessions_machine_id_machines")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_timing_sessions_run_id_runs"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["suite_id"], ["suites.id"], name=op.f("fk_timing_sessions_suite_id_suites")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timing_sessions")),
    )
    op.create_index(op.f("ix_timing_sessions_commit_id"), "timing_sessions", ["commit_id"])
    op.create_index(op.f("ix_timing_sessions_machine_id"), "timing_sessions", ["machine_id"])
    op.create_index(op.f("ix_timing_sessions_run_id"), "timing_sessions", ["run_id"])
    op.create_table(
        "kernel_timings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=True),
        sa.Column("program", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("ns_min", sa.Integer(), nullable=True),
        sa.Column("ns_median", sa.Integer(), nullable=True),
        sa.Column("ns_max", sa.Integer(), nullable=True),
        sa.Column("spread", sa.Float(), nullable=True),
        sa.Column("samples", sa.Text(), nullable=True),
        sa.Column("ops", sa.Integer(), nullable=True),
        sa.Column("mem_bytes", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_kernel_timings_case_id_cases")),
        sa.ForeignKeyConstraint(["kernel_id"], ["kernels.id"], name=op.f("fk_kernel_timings_kernel_id_kernels")),
        sa.ForeignKeyConstraint(["session_id"], ["timing_sessions.id"],
                                name=op.f("fk_kernel_timings_session_id_timing_sessions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kernel_timings")),
        sa.UniqueConstraint("session_id", "case_id", "position", name="uq_kernel_timings_session_id"),
    )
    op.create_index(op.f("ix_kernel_timings_case_id"), "kernel_timings", ["case_id"])
    op.create_index(op.f("ix_kernel_timings_kernel_id"), "kernel_timings", ["kernel_id"])
    op.execute(f"CREATE VIEW v_kernel_times AS {V_KERNEL_TIMES}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_kernel_times")
    op.drop_table("kernel_timings")
    op.drop_table("timing_sessions")
    op.drop_table("machines")
