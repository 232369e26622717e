"""svod formats: kernels and stages from every format Svod prints; trees in tinygrad's spelling; parity columns

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 23:00:00

The Svod tables of 0003 were built from a wrong description of Svod's output. They are replaced:
* svod_runs keeps its rows (one per ingested path), loses the derived counts it had, and gains `kind`,
  `parser_version` (0 for the rows kept here: `tgstore ingest-svod` re-reads them from their stored text) and
  file_count / stage_count; each run's text moves to svod_files (a directory input has several files).
* svod_kernels, svod_stages: what the readers found, kernel by kernel and stage by stage (a `[per-stage]` line, a
  `[dump-stage]` tree, a tracing event's tree, an extract-ir.sh section, a canonical dump, a linear dump).
* svod_trees: a tree's structure in tinygrad's spelling, ids gone, stored once by that normalized graph's hash.
* svod_stage_map: Svod's stage labels and tracing messages against tinygrad's pass names (tgstore/spelling/maps.toml,
  copied in by each `ingest-svod`), for the parity_matrix query.
* graphs.norm_hash and kernels.norm_hash: a tinygrad graph's hash in the same spelling, so that SQL can tell
  whether a Svod stage and a tinygrad pass hold the same structure.
"""
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_TABLES = ["svod_event_trees", "svod_stage_dumps", "svod_per_stage", "svod_pattern_matches", "svod_kernels",
              "svod_events", "svod_problems"]
VIEWS = {
    "v_svod_stages": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, s.kernel_index, k.name AS kernel_name,
               k.test, s.seq, s.label, s.source, s.node_count, t.hash AS tree_hash, s.tree_id, s.canonical_doc_id,
               s.message, s.elapsed_ms, s.file_position, s.line_no, m.pass_name AS tinygrad_pass, m.canonical
        FROM svod_stages s JOIN svod_runs r ON r.id = s.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN svod_kernels k ON k.run_id = s.run_id AND k.kernel_index = s.kernel_index
        LEFT JOIN svod_trees t ON t.id = s.tree_id LEFT JOIN svod_stage_map m ON m.label = s.label""",
    "v_svod_kernels": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, k.kernel_index, k.name AS kernel_name,
               k.test, k.code_kind, (SELECT count(*) FROM svod_stages s WHERE s.run_id = k.run_id
                                     AND s.kernel_index = k.kernel_index) AS stages,
               b.text AS code
        FROM svod_kernels k JOIN svod_runs r ON r.id = k.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN blobs b ON b.id = k.code_blob_id""",
}


@contextmanager
def views_set_aside() -> Iterator[None]:
    views = op.get_bind().exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"
                                          ).fetchall()
    for name, _sql in reversed(views):
        op.execute(f"DROP VIEW {name}")
    yield
    for name, sql in views:
        if name not in VIEWS:
            op.execute(sql)


def upgrade() -> None:
    conn = op.get_bind()
    runs = conn.exec_driver_sql("SELECT id, log_blob_id, source_path FROM svod_runs").fetchall()
    with views_set_aside():
        for table in OLD_TABLES:
            op.drop_table(table)
        op.drop_table("svod_trees")
        op.create_table(
            "svod_trees",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("hash", sa.String(length=64), nullable=False),
            sa.Column("node_count", sa.Integer(), nullable=False),
            sa.Column("root_op", sa.String(length=40), nullable=True),
            sa.Column("graph", sa.Text(), nullable=False),
            sa.Column("unknown", sa.Text(), nullable=True),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_trees")),
            sa.UniqueConstraint("hash", name=op.f("uq_svod_trees_hash")),
        )
        with op.batch_alter_table("svod_runs", schema=None, recreate="always",
                                  table_kwargs={"sqlite_autoincrement": True}) as batch_op:
            batch_op.drop_column("log_blob_id")
            for column in ("event_count", "kernel_count", "stage_dump_count", "per_stage_count", "raw_line_count",
                           "problem_count", "line_count"):
                batch_op.drop_column(column)
            batch_op.alter_column("log_hash", new_column_name="source_hash")
            batch_op.add_column(sa.Column("kind", sa.String(length=40), nullable=False, server_default="log"))
            batch_op.add_column(sa.Column("parser_version", sa.Integer(), nullable=False, server_default="0"))
            for column in ("file_count", "line_count", "event_count", "kernel_count", "stage_count", "raw_line_count",
                           "problem_count"):
                batch_op.add_column(sa.Column(column, sa.Integer(), nullable=False, server_default="0"))
        op.create_table(
            "svod_files",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("position", sa.Integer(), nullable=False),
            sa.Column("path", sa.Text(), nullable=False),
            sa.Column("kind", sa.String(length=40), nullable=False),
            sa.Column("blob_id", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_files_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["blob_id"], ["blobs.id"], name=op.f("fk_svod_files_blob_id_blobs")),
            sa.PrimaryKeyConstraint("run_id", "position", name=op.f("pk_svod_files")),
        )
        if runs:
            conn.exec_driver_sql("INSERT INTO svod_files (run_id, position, path, kind, blob_id) VALUES (?, 0, ?, "
                                 "'log', ?)", [(rid, path or "", blob) for rid, blob, path in runs])
        op.create_table(
            "svod_kernels",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("kernel_index", sa.Integer(), nullable=False),
            sa.Column("test", sa.String(length=300), nullable=True),
            sa.Column("name", sa.String(length=200), nullable=True),
            sa.Column("file_position", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("code_blob_id", sa.Integer(), nullable=True),
            sa.Column("code_kind", sa.String(length=20), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_kernels_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["code_blob_id"], ["blobs.id"], name=op.f("fk_svod_kernels_code_blob_id_blobs")),
            sa.PrimaryKeyConstraint("run_id", "kernel_index", name=op.f("pk_svod_kernels")),
        )
        op.create_table(
            "svod_stages",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("seq", sa.Integer(), nullable=False),
            sa.Column("kernel_index", sa.Integer(), nullable=True),
            sa.Column("label", sa.String(length=200), nullable=False),
            sa.Column("source", sa.String(length=40), nullable=False),
            sa.Column("file_position", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("node_count", sa.Integer(), nullable=True),
            sa.Column("tree_id", sa.Integer(), nullable=True),
            sa.Column("text_blob_id", sa.Integer(), nullable=True),
            sa.Column("canonical_doc_id", sa.Integer(), nullable=True),
            sa.Column("message", sa.Text(), nullable=True),
            sa.Column("elapsed_ms", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_stages_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"], name=op.f("fk_svod_stages_tree_id_svod_trees")),
            sa.ForeignKeyConstraint(["text_blob_id"], ["blobs.id"], name=op.f("fk_svod_stages_text_blob_id_blobs")),
            sa.ForeignKeyConstraint(["canonical_doc_id"], ["canonical_docs.id"],
                                    name=op.f("fk_svod_stages_canonical_doc_id_canonical_docs")),
            sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_svod_stages")),
        )
        with op.batch_alter_table("svod_stages", schema=None) as batch_op:
            batch_op.create_index(batch_op.f("ix_svod_stages_tree_id"), ["tree_id"], unique=False)
            batch_op.create_index(batch_op.f("ix_svod_stages_canonical_doc_id"), ["canonical_doc_id"], unique=False)
            batch_op.create_index(batch_op.f("ix_svod_stages_label"), ["label"], unique=False)
        op.create_table(
            "svod_events",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("file_position", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("timestamp", sa.String(length=40), nullable=True),
            sa.Column("level", sa.String(length=20), nullable=True),
            sa.Column("target", sa.String(length=200), nullable=True),
            sa.Column("message", sa.Text(), nullable=True),
            sa.Column("fields", sa.Text(), nullable=False),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_events_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("run_id", "file_position", "line_no", name=op.f("pk_svod_events")),
        )
        op.create_table(
            "svod_problems",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("file_position", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("message", sa.Text(), nullable=False),
            sa.Column("text", sa.Text(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_problems_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_problems")),
        )
        with op.batch_alter_table("svod_problems", schema=None) as batch_op:
            batch_op.create_index(batch_op.f("ix_svod_problems_run_id"), ["run_id"], unique=False)
        op.create_table(
            "svod_stage_map",
            sa.Column("label", sa.String(length=200), nullable=False),
            sa.Column("position", sa.Integer(), nullable=False),
            sa.Column("scope", sa.String(length=20), nullable=False),
            sa.Column("pass_name", sa.String(length=200), nullable=True),
            sa.Column("pass_input", sa.Boolean(), nullable=False),
            sa.Column("canonical", sa.String(length=40), nullable=True),
            sa.PrimaryKeyConstraint("label", name=op.f("pk_svod_stage_map")),
        )
        op.add_column("graphs", sa.Column("norm_hash", sa.String(length=64), nullable=True))
        op.create_index(op.f("ix_graphs_norm_hash"), "graphs", ["norm_hash"], unique=False)
        op.add_column("kernels", sa.Column("norm_hash", sa.String(length=64), nullable=True))
    for name, sql in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {sql}")


def downgrade() -> None:
    """Back to 0003's tables: runs keep their first file's text; what was derived from the logs is left empty (the
    0003 parser would rebuild it when the logs are ingested again)."""
    conn = op.get_bind()
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    firsts = conn.exec_driver_sql("SELECT run_id, blob_id FROM svod_files WHERE position = 0").fetchall()
    with views_set_aside():
        op.drop_index(op.f("ix_graphs_norm_hash"), table_name="graphs")
        with op.batch_alter_table("graphs", schema=None) as batch_op:
            batch_op.drop_column("norm_hash")
        with op.batch_alter_table("kernels", schema=None) as batch_op:
            batch_op.drop_column("norm_hash")
        for table in ("svod_stage_map", "svod_problems", "svod_events", "svod_stages", "svod_kernels", "svod_files",
                      "svod_trees"):
            op.drop_table(table)
        with op.batch_alter_table("svod_runs", schema=None, recreate="always",
                                  table_kwargs={"sqlite_autoincrement": False}) as batch_op:
            for column in ("kind", "parser_version", "file_count", "stage_count"):
                batch_op.drop_column(column)
            batch_op.alter_column("source_hash", new_column_name="log_hash")
            batch_op.add_column(sa.Column("log_blob_id", sa.Integer(), nullable=True))
            for column in ("stage_dump_count", "per_stage_count"):
                batch_op.add_column(sa.Column(column, sa.Integer(), nullable=False, server_default="0"))
        if firsts:
            conn.exec_driver_sql("UPDATE svod_runs SET log_blob_id = ? WHERE id = ?",
                                 [(blob, run) for run, blob in firsts])
        conn.exec_driver_sql("UPDATE svod_runs SET event_count = 0, kernel_count = 0, raw_line_count = 0, "
                             "problem_count = 0")
        op.create_table(
            "svod_trees",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("hash", sa.String(length=64), nullable=False),
            sa.Column("node_count", sa.Integer(), nullable=False),
            sa.Column("root_op", sa.String(length=40), nullable=True),
            sa.Column("structure_blob_id", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["structure_blob_id"], ["blobs.id"],
                                    name=op.f("fk_svod_trees_structure_blob_id_blobs")),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_trees")),
            sa.UniqueConstraint("hash", name=op.f("uq_svod_trees_hash")),
        )
        op.create_table(
            "svod_events",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("timestamp", sa.String(length=40), nullable=True),
            sa.Column("level", sa.String(length=20), nullable=True),
            sa.Column("target", sa.String(length=200), nullable=True),
            sa.Column("message", sa.Text(), nullable=True),
            sa.Column("elapsed_ms", sa.Float(), nullable=True),
            sa.Column("node_count", sa.Integer(), nullable=True),
            sa.Column("kernel_index", sa.Integer(), nullable=True),
            sa.Column("tree_field", sa.String(length=40), nullable=True),
            sa.Column("tree_id", sa.Integer(), nullable=True),
            sa.Column("fields", sa.Text(), nullable=False),
            sa.Column("extra", sa.Text(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_events_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"], name=op.f("fk_svod_events_tree_id_svod_trees")),
            sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_events")),
        )
        op.create_index(op.f("ix_svod_events_tree_id"), "svod_events", ["tree_id"], unique=False)
        op.create_table(
            "svod_event_trees",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("field", sa.String(length=40), nullable=False),
            sa.Column("tree_id", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_event_trees_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"],
                                    name=op.f("fk_svod_event_trees_tree_id_svod_trees")),
            sa.PrimaryKeyConstraint("run_id", "line_no", "field", name=op.f("pk_svod_event_trees")),
        )
        op.create_index(op.f("ix_svod_event_trees_tree_id"), "svod_event_trees", ["tree_id"], unique=False)
        op.create_table(
            "svod_stage_dumps",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("end_line_no", sa.Integer(), nullable=True),
            sa.Column("kernel_index", sa.Integer(), nullable=True),
            sa.Column("label", sa.String(length=200), nullable=False),
            sa.Column("tree_id", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_stage_dumps_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["tree_id"], ["svod_trees.id"],
                                    name=op.f("fk_svod_stage_dumps_tree_id_svod_trees")),
            sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_stage_dumps")),
        )
        op.create_index(op.f("ix_svod_stage_dumps_tree_id"), "svod_stage_dumps", ["tree_id"], unique=False)
        op.create_table(
            "svod_per_stage",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("kernel_index", sa.Integer(), nullable=True),
            sa.Column("label", sa.String(length=200), nullable=False),
            sa.Column("node_count", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_per_stage_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("run_id", "line_no", name=op.f("pk_svod_per_stage")),
        )
        op.create_table(
            "svod_kernels",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("kernel_index", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("name", sa.String(length=200), nullable=True),
            sa.Column("initial_tree_id", sa.Integer(), nullable=True),
            sa.Column("pre_tree_id", sa.Integer(), nullable=True),
            sa.Column("optimized_tree_id", sa.Integer(), nullable=True),
            sa.Column("code_blob_id", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_kernels_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["initial_tree_id"], ["svod_trees.id"],
                                    name=op.f("fk_svod_kernels_initial_tree_id_svod_trees")),
            sa.ForeignKeyConstraint(["pre_tree_id"], ["svod_trees.id"],
                                    name=op.f("fk_svod_kernels_pre_tree_id_svod_trees")),
            sa.ForeignKeyConstraint(["optimized_tree_id"], ["svod_trees.id"],
                                    name=op.f("fk_svod_kernels_optimized_tree_id_svod_trees")),
            sa.ForeignKeyConstraint(["code_blob_id"], ["blobs.id"], name=op.f("fk_svod_kernels_code_blob_id_blobs")),
            sa.PrimaryKeyConstraint("run_id", "kernel_index", name=op.f("pk_svod_kernels")),
        )
        op.create_table(
            "svod_pattern_matches",
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("op_key", sa.String(length=200), nullable=False),
            sa.Column("count", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"],
                                    name=op.f("fk_svod_pattern_matches_run_id_svod_runs"), ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("run_id", "op_key", name=op.f("pk_svod_pattern_matches")),
        )
        op.create_table(
            "svod_problems",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("run_id", sa.Integer(), nullable=False),
            sa.Column("line_no", sa.Integer(), nullable=False),
            sa.Column("message", sa.Text(), nullable=False),
            sa.Column("text", sa.Text(), nullable=True),
            sa.ForeignKeyConstraint(["run_id"], ["svod_runs.id"], name=op.f("fk_svod_problems_run_id_svod_runs"),
                                    ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_svod_problems")),
        )
        op.create_index(op.f("ix_svod_problems_run_id"), "svod_problems", ["run_id"], unique=False)

    for name, select in OLD_VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {select}")


# The views 0003 made, restored by downgrade.
OLD_VIEWS = {
    "v_svod_stages": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, s.kernel_index, s.label AS stage,
               s.line_no, s.node_count, 'per-stage' AS source,
               (SELECT d.tree_id FROM svod_stage_dumps d WHERE d.run_id = s.run_id AND d.label = s.label
                  AND d.kernel_index IS s.kernel_index ORDER BY d.line_no LIMIT 1) AS tree_id
        FROM svod_per_stage s JOIN svod_runs r ON r.id = s.run_id JOIN cases c ON c.id = r.case_id
        UNION ALL
        SELECT c.name, r.svod_commit, r.id, r.ingested_at, d.kernel_index, d.label, d.line_no, t.node_count,
               CASE WHEN d.end_line_no IS NULL THEN 'dump-stage (unterminated)' ELSE 'dump-stage' END, d.tree_id
        FROM svod_stage_dumps d JOIN svod_runs r ON r.id = d.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN svod_trees t ON t.id = d.tree_id
        WHERE NOT EXISTS (SELECT 1 FROM svod_per_stage s WHERE s.run_id = d.run_id AND s.label = d.label
                            AND s.kernel_index IS d.kernel_index)""",
    "v_svod_kernels": """
        SELECT c.name AS "case", r.svod_commit, r.id AS run_id, r.ingested_at, k.kernel_index,
               k.name AS kernel_name, k.line_no, ti.node_count AS initial_nodes, tp.node_count AS pre_nodes,
               tz.node_count AS optimized_nodes,
               (SELECT st.stage FROM v_svod_stages st WHERE st.run_id = k.run_id AND st.kernel_index = k.kernel_index
                  AND st.source <> 'dump-stage (unterminated)'
                ORDER BY st.stage = '20-final_rewrite' DESC, st.line_no DESC LIMIT 1) AS final_stage,
               (SELECT st.node_count FROM v_svod_stages st WHERE st.run_id = k.run_id
                  AND st.kernel_index = k.kernel_index AND st.source <> 'dump-stage (unterminated)'
                ORDER BY st.stage = '20-final_rewrite' DESC, st.line_no DESC LIMIT 1) AS final_nodes,
               b.text AS code
        FROM svod_kernels k JOIN svod_runs r ON r.id = k.run_id JOIN cases c ON c.id = r.case_id
        LEFT JOIN svod_trees ti ON ti.id = k.initial_tree_id LEFT JOIN svod_trees tp ON tp.id = k.pre_tree_id
        LEFT JOIN svod_trees tz ON tz.id = k.optimized_tree_id LEFT JOIN blobs b ON b.id = k.code_blob_id""",
}
