"""case sets: an unchanged commit stores a run row, not a row per case

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 23:00:00

A run held one run_cases row per case (with four indexes) and its tinygrad's features and per-pass times as JSON
text: an unchanged commit cost ~7.5 KB for the 65-case suite. What a run's cases produced (case result, match set,
status, DEBUG text and traceback) now lives in content-addressed `case_sets` whose members the runs with the same
output share; the run keeps its case timings as one JSON list (`case_seconds`, in member order) and its features as
a blob. `run_cases` becomes a view with the same columns, so every query and view reads as before. Per-pass times
are no longer kept per run (bench/ measures what stage capture costs).
"""
import hashlib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUN_CASES_VIEW = """
    SELECT r.id AS run_id, m.case_id, m.case_result_id, m.match_set_id, m.status,
           json_extract(r.case_seconds, '$[' || m.position || ']') AS seconds, m.debug_blob_id, m.error_blob_id
    FROM runs r JOIN case_set_members m ON m.case_set_id = r.case_set_id"""
MEMBER_COLUMNS = ("case_id", "case_result_id", "match_set_id", "status", "debug_blob_id", "error_blob_id")


def case_set_hash(members: list[list]) -> str:
    """sha256 of the members' canonical JSON, in run order (as tgstore.ingest computes it)."""
    text = json.dumps(members, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def blob_id(conn, text: str) -> int:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    found = conn.exec_driver_sql("SELECT id FROM blobs WHERE hash = ?", (digest,)).scalar()
    if found is None:
        found = (conn.exec_driver_sql("SELECT max(id) FROM blobs").scalar() or 0) + 1
        conn.exec_driver_sql("INSERT INTO blobs (id, hash, size, text) VALUES (?, ?, ?, ?)",
                             (found, digest, len(text), text))
    return found


def upgrade() -> None:
    conn = op.get_bind()
    op.create_table(
        "case_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("case_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_sets")),
        sa.UniqueConstraint("hash", name=op.f("uq_case_sets_hash")),
    )
    op.create_table(
        "case_set_members",
        sa.Column("case_set_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("match_set_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("debug_blob_id", sa.Integer(), nullable=True),
        sa.Column("error_blob_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["case_set_id"], ["case_sets.id"],
                                name=op.f("fk_case_set_members_case_set_id_case_sets"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_case_set_members_case_id_cases")),
        sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"],
                                name=op.f("fk_case_set_members_case_result_id_case_results")),
        sa.ForeignKeyConstraint(["match_set_id"], ["match_sets.id"],
                                name=op.f("fk_case_set_members_match_set_id_match_sets")),
        sa.ForeignKeyConstraint(["debug_blob_id"], ["blobs.id"], name=op.f("fk_case_set_members_debug_blob_id_blobs")),
        sa.ForeignKeyConstraint(["error_blob_id"], ["blobs.id"], name=op.f("fk_case_set_members_error_blob_id_blobs")),
        sa.PrimaryKeyConstraint("case_set_id", "case_id", name=op.f("pk_case_set_members")),
    )
    op.create_index(op.f("ix_case_set_members_case_id"), "case_set_members", ["case_id"])
    op.create_index(op.f("ix_case_set_members_case_result_id"), "case_set_members", ["case_result_id"])
    op.create_index(op.f("ix_case_set_members_match_set_id"), "case_set_members", ["match_set_id"])
    # plain ALTER TABLE (a batch rebuild of runs would trip over the views on it); SQLite takes a named column
    # constraint here, which Alembic's add_column cannot emit
    op.execute("ALTER TABLE runs ADD COLUMN case_set_id INTEGER "
               "CONSTRAINT fk_runs_case_set_id_case_sets REFERENCES case_sets (id)")
    op.add_column("runs", sa.Column("case_seconds", sa.Text(), nullable=True))
    op.execute("ALTER TABLE runs ADD COLUMN features_blob_id INTEGER "
               "CONSTRAINT fk_runs_features_blob_id_blobs REFERENCES blobs (id)")
    op.create_index(op.f("ix_runs_case_set_id"), "runs", ["case_set_id"])

    by_run: dict[int, list[tuple]] = {}
    for run_id, *member, seconds in conn.exec_driver_sql(
            f"SELECT run_id, {', '.join(MEMBER_COLUMNS)}, seconds FROM run_cases ORDER BY run_id, id").fetchall():
        by_run.setdefault(run_id, []).append((tuple(member), seconds))
    set_ids: dict[str, int] = {}
    for run_id, members in by_run.items():
        digest = case_set_hash([list(m) for m, _s in members])
        if digest not in set_ids:
            set_ids[digest] = len(set_ids) + 1
            conn.exec_driver_sql("INSERT INTO case_sets (id, hash, case_count) VALUES (?, ?, ?)",
                                 (set_ids[digest], digest, len(members)))
            conn.exec_driver_sql(f"INSERT INTO case_set_members (case_set_id, position, {', '.join(MEMBER_COLUMNS)}) "
                                 f"VALUES (?, ?, {', '.join('?' * len(MEMBER_COLUMNS))})",
                                 [(set_ids[digest], i, *m) for i, (m, _s) in enumerate(members)])
        conn.exec_driver_sql("UPDATE runs SET case_set_id = ?, case_seconds = ? WHERE id = ?",
                             (set_ids[digest], json.dumps([s for _m, s in members]), run_id))
    for run_id, features in conn.exec_driver_sql("SELECT id, features FROM runs WHERE features IS NOT NULL"
                                                 ).fetchall():
        conn.exec_driver_sql("UPDATE runs SET features_blob_id = ? WHERE id = ?", (blob_id(conn, features), run_id))
    op.drop_table("run_cases")  # the views that read it resolve to the view below by name
    op.execute(f"CREATE VIEW run_cases AS {RUN_CASES_VIEW}")
    op.execute("ALTER TABLE runs DROP COLUMN features")
    op.execute("ALTER TABLE runs DROP COLUMN pass_times")


def downgrade() -> None:
    conn = op.get_bind()
    op.add_column("runs", sa.Column("features", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("pass_times", sa.Text(), nullable=True))
    conn.exec_driver_sql("UPDATE runs SET features = (SELECT text FROM blobs WHERE blobs.id = runs.features_blob_id)")
    rows = conn.exec_driver_sql(f"SELECT run_id, {', '.join(MEMBER_COLUMNS)}, seconds FROM run_cases").fetchall()
    op.execute("DROP VIEW run_cases")
    op.create_table(
        "run_cases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("case_result_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("debug_blob_id", sa.Integer(), nullable=True),
        sa.Column("error_blob_id", sa.Integer(), nullable=True),
        sa.Column("match_set_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_run_cases_case_id_cases")),
        sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"],
                                name=op.f("fk_run_cases_case_result_id_case_results")),
        sa.ForeignKeyConstraint(["debug_blob_id"], ["blobs.id"], name=op.f("fk_run_cases_debug_blob_id_blobs")),
        sa.ForeignKeyConstraint(["error_blob_id"], ["blobs.id"], name=op.f("fk_run_cases_error_blob_id_blobs")),
        sa.ForeignKeyConstraint(["match_set_id"], ["match_sets.id"], name=op.f("fk_run_cases_match_set_id_match_sets")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_cases_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_cases")),
        sa.UniqueConstraint("run_id", "case_id", name="uq_run_cases_run_case"),
    )
    op.create_index(op.f("ix_run_cases_case_id"), "run_cases", ["case_id"])
    op.create_index(op.f("ix_run_cases_case_result_id"), "run_cases", ["case_result_id"])
    op.create_index(op.f("ix_run_cases_match_set_id"), "run_cases", ["match_set_id"])
    if rows:
        conn.exec_driver_sql("INSERT INTO run_cases (run_id, case_id, case_result_id, match_set_id, status, "
                             "debug_blob_id, error_blob_id, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [tuple(r) for r in rows])
    op.drop_index(op.f("ix_runs_case_set_id"), "runs")
    op.execute("ALTER TABLE runs DROP COLUMN features_blob_id")
    op.execute("ALTER TABLE runs DROP COLUMN case_seconds")
    op.execute("ALTER TABLE runs DROP COLUMN case_set_id")
    op.drop_table("case_set_members")
    op.drop_table("case_sets")
