"""stages: the graph after each named pass (content-addressed), canonical documents, pass times per run

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 21:00:00

* graphs: a UOp graph as compact JSON ([op, dtype, arg, [src positions]] per node, toposort order), stored once by
  hash; graph_ops counts each op in it (what `op_first_pass` asks).
* pass_lists / pass_entries: an ordered list of passes (name, nesting depth, node count, changed, graph), stored once
  by hash; programs.pass_list_id (a kernel lowered with one renderer) and case_results.schedule_pass_list_id (the
  scheduler's passes of a case) point at them.
* canonical_docs: Svod's canonical JSON (schema v7) documents, or the typed reason a stage could not be serialized,
  stored once by hash; canonical_links ties them to a case result's kernel (position -1: the case's
  schedule-level stages).
* runs.pass_times: seconds per pass name in the run (JSON), kept apart from the content-addressed rows so that an
  unchanged commit adds no graph or pass rows.
* v_passes: every pass of every current run, with commit, case, kernel and renderer.
"""
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

V_PASSES = """
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name AS "case",
           'lower' AS scope, si.position, kn.name AS kernel_name, p.renderer, pe.position AS pass_position,
           pe.name AS pass_name, pe.depth, pe.node_count, pe.changed, g.hash AS graph_hash, pe.graph_id
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = rc.case_id
    JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
    JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id
    UNION ALL
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, r.backend, k.name, 'schedule', NULL, NULL,
           NULL, pe.position, pe.name, pe.depth, pe.node_count, pe.changed, g.hash, pe.graph_id
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = rc.case_id
    JOIN case_results cr ON cr.id = rc.case_result_id
    JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id
    LEFT JOIN graphs g ON g.id = pe.graph_id"""


@contextmanager
def views_set_aside() -> Iterator[None]:
    """Drop every view for the block (batch operations rebuild the tables views refer to), then recreate them as
    they were, in creation order."""
    views = op.get_bind().exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"
                                          ).fetchall()
    for name, _sql in reversed(views):
        op.execute(f"DROP VIEW {name}")
    yield
    for _name, sql in views:
        op.execute(sql)


def upgrade() -> None:
    op.create_table(
        "graphs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("root_op", sa.String(length=40), nullable=True),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_graphs")),
        sa.UniqueConstraint("hash", name=op.f("uq_graphs_hash")),
    )
    op.create_table(
        "graph_ops",
        sa.Column("graph_id", sa.Integer(), nullable=False),
        sa.Column("op", sa.String(length=40), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], name=op.f("fk_graph_ops_graph_id_graphs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("graph_id", "op", name=op.f("pk_graph_ops")),
    )
    with op.batch_alter_table("graph_ops", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_graph_ops_op"), ["op"], unique=False)
    op.create_table(
        "pass_lists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("pass_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pass_lists")),
        sa.UniqueConstraint("hash", name=op.f("uq_pass_lists_hash")),
    )
    op.create_table(
        "pass_entries",
        sa.Column("pass_list_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=True),
        sa.Column("changed", sa.Boolean(), nullable=False),
        sa.Column("graph_id", sa.Integer(), nullable=True),
        sa.Column("rewrites_blob_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["pass_list_id"], ["pass_lists.id"],
                                name=op.f("fk_pass_entries_pass_list_id_pass_lists"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], name=op.f("fk_pass_entries_graph_id_graphs")),
        sa.ForeignKeyConstraint(["rewrites_blob_id"], ["blobs.id"],
                                name=op.f("fk_pass_entries_rewrites_blob_id_blobs")),
        sa.PrimaryKeyConstraint("pass_list_id", "position", name=op.f("pk_pass_entries")),
    )
    with op.batch_alter_table("pass_entries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pass_entries_graph_id"), ["graph_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_pass_entries_name"), ["name"], unique=False)
    op.create_table(
        "canonical_docs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=True),
        sa.Column("document", sa.Text(), nullable=True),
        sa.Column("unsupported", sa.String(length=80), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_canonical_docs")),
        sa.UniqueConstraint("hash", name=op.f("uq_canonical_docs_hash")),
    )
    op.create_table(
        "canonical_links",
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=False),
        sa.Column("doc_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"],
                                name=op.f("fk_canonical_links_case_result_id_case_results"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["doc_id"], ["canonical_docs.id"],
                                name=op.f("fk_canonical_links_doc_id_canonical_docs")),
        sa.PrimaryKeyConstraint("case_result_id", "position", "stage", name=op.f("pk_canonical_links")),
    )
    with op.batch_alter_table("canonical_links", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_canonical_links_doc_id"), ["doc_id"], unique=False)
    with views_set_aside():
        with op.batch_alter_table("programs", schema=None) as batch_op:
            batch_op.add_column(sa.Column("pass_list_id", sa.Integer(), nullable=True))
            batch_op.create_index(batch_op.f("ix_programs_pass_list_id"), ["pass_list_id"], unique=False)
            batch_op.create_foreign_key(batch_op.f("fk_programs_pass_list_id_pass_lists"), "pass_lists",
                                        ["pass_list_id"], ["id"])
        with op.batch_alter_table("case_results", schema=None) as batch_op:
            batch_op.add_column(sa.Column("schedule_pass_list_id", sa.Integer(), nullable=True))
            batch_op.create_index(batch_op.f("ix_case_results_schedule_pass_list_id"), ["schedule_pass_list_id"],
                                  unique=False)
            batch_op.create_foreign_key(batch_op.f("fk_case_results_schedule_pass_list_id_pass_lists"),
                                        "pass_lists", ["schedule_pass_list_id"], ["id"])
        op.add_column("runs", sa.Column("pass_times", sa.Text(), nullable=True))
    op.execute(f"CREATE VIEW v_passes AS {V_PASSES}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_passes")
    with views_set_aside():
        with op.batch_alter_table("runs", schema=None, table_kwargs={"sqlite_autoincrement": True}) as batch_op:
            batch_op.drop_column("pass_times")
        with op.batch_alter_table("case_results", schema=None) as batch_op:
            batch_op.drop_constraint(batch_op.f("fk_case_results_schedule_pass_list_id_pass_lists"),
                                     type_="foreignkey")
            batch_op.drop_index(batch_op.f("ix_case_results_schedule_pass_list_id"))
            batch_op.drop_column("schedule_pass_list_id")
        with op.batch_alter_table("programs", schema=None) as batch_op:
            batch_op.drop_constraint(batch_op.f("fk_programs_pass_list_id_pass_lists"), type_="foreignkey")
            batch_op.drop_index(batch_op.f("ix_programs_pass_list_id"))
            batch_op.drop_column("pass_list_id")
    op.drop_table("canonical_links")
    op.drop_table("canonical_docs")
    op.drop_table("pass_entries")
    op.drop_table("pass_lists")
    op.drop_table("graph_ops")
    op.drop_table("graphs")
