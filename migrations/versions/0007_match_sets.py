"""match sets: pattern-match counts apart from case results

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 21:30:00

A case result held its pattern-match counts, so a commit that changed only how often rules fired stored every case
result again (kernels and sources unchanged). Counts now live in content-addressed `match_sets` that run_cases point
at: such a commit adds a match set per case whose counts changed, and nothing else.

Existing counts move into match sets (one per distinct content, hashed as tgstore.ingest hashes them), and each
run_case points at the set its case result had.
"""
import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

V_PATTERN_MATCHES = """
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, k.name AS "case", pt.matcher,
           pt.function_name, pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id
    JOIN cases k ON k.id = rc.case_id JOIN pattern_matches pm ON pm.match_set_id = rc.match_set_id
    JOIN patterns pt ON pt.id = pm.pattern_id"""
OLD_V_PATTERN_MATCHES = """
    SELECT rc.run_id, c.sha, c.version, c.committed_at, c.history_rank, k.name AS "case", pt.matcher,
           pt.function_name, pt.file, pt.line, pt.ops, pt.upat, pm.matches, pm.tries
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1
    JOIN v_commits c ON c.commit_id = r.commit_id
    JOIN cases k ON k.id = rc.case_id JOIN pattern_matches pm ON pm.case_result_id = rc.case_result_id
    JOIN patterns pt ON pt.id = pm.pattern_id"""


def match_set_hash(rows: list[list]) -> str:
    """sha256 of the sorted [pattern hash, matches, tries] rows' canonical JSON (as tgstore.ingest computes it)."""
    text = json.dumps(sorted(rows), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@contextmanager
def views_set_aside() -> Iterator[None]:
    views = op.get_bind().exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"
                                          ).fetchall()
    for name, _sql in reversed(views):
        op.execute(f"DROP VIEW {name}")
    yield
    for name, sql in views:
        if name != "v_pattern_matches":
            op.execute(sql)


def upgrade() -> None:
    conn = op.get_bind()
    op.create_table(
        "match_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("pattern_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_match_sets")),
        sa.UniqueConstraint("hash", name=op.f("uq_match_sets_hash")),
    )
    by_result: dict[int, list] = {}
    for result_id, pattern_id, pattern_hash, matches, tries in conn.exec_driver_sql(
            "SELECT pm.case_result_id, pm.pattern_id, p.hash, pm.matches, pm.tries FROM pattern_matches pm "
            "JOIN patterns p ON p.id = pm.pattern_id").fetchall():
        by_result.setdefault(result_id, []).append((pattern_id, pattern_hash, matches, tries))
    set_of_result: dict[int, int] = {}
    set_ids: dict[str, int] = {}
    members: list[tuple] = []
    for result_id, rows in by_result.items():
        digest = match_set_hash([[h, m, t] for _pid, h, m, t in rows])
        if digest not in set_ids:
            set_ids[digest] = len(set_ids) + 1
            conn.exec_driver_sql("INSERT INTO match_sets (id, hash, pattern_count) VALUES (?, ?, ?)",
                                 (set_ids[digest], digest, len(rows)))
            members += [(set_ids[digest], pid, m, t) for pid, _h, m, t in rows]
        set_of_result[result_id] = set_ids[digest]
    with views_set_aside():
        op.drop_table("pattern_matches")
        op.create_table(
            "pattern_matches",
            sa.Column("match_set_id", sa.Integer(), nullable=False),
            sa.Column("pattern_id", sa.Integer(), nullable=False),
            sa.Column("matches", sa.Integer(), nullable=False),
            sa.Column("tries", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["match_set_id"], ["match_sets.id"],
                                    name=op.f("fk_pattern_matches_match_set_id_match_sets"), ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["pattern_id"], ["patterns.id"],
                                    name=op.f("fk_pattern_matches_pattern_id_patterns")),
            sa.PrimaryKeyConstraint("match_set_id", "pattern_id", name=op.f("pk_pattern_matches")),
        )
        with op.batch_alter_table("pattern_matches", schema=None) as batch_op:
            batch_op.create_index(batch_op.f("ix_pattern_matches_pattern_id"), ["pattern_id"], unique=False)
        if members:
            conn.exec_driver_sql("INSERT INTO pattern_matches (match_set_id, pattern_id, matches, tries) "
                                 "VALUES (?, ?, ?, ?)", members)
        with op.batch_alter_table("run_cases", schema=None) as batch_op:
            batch_op.add_column(sa.Column("match_set_id", sa.Integer(), nullable=True))
            batch_op.create_index(batch_op.f("ix_run_cases_match_set_id"), ["match_set_id"], unique=False)
            batch_op.create_foreign_key(batch_op.f("fk_run_cases_match_set_id_match_sets"), "match_sets",
                                        ["match_set_id"], ["id"])
        if set_of_result:
            conn.exec_driver_sql("UPDATE run_cases SET match_set_id = ? WHERE case_result_id = ?",
                                 [(set_id, result_id) for result_id, set_id in set_of_result.items()])
    op.execute(f"CREATE VIEW v_pattern_matches AS {V_PATTERN_MATCHES}")


def downgrade() -> None:
    conn = op.get_bind()
    rows = conn.exec_driver_sql(
        "SELECT DISTINCT rc.case_result_id, pm.pattern_id, pm.matches, pm.tries FROM run_cases rc "
        "JOIN pattern_matches pm ON pm.match_set_id = rc.match_set_id").fetchall()
    kept: dict[tuple[int, int], tuple] = {}
    for result_id, pattern_id, matches, tries in rows:  # a case result shared by runs keeps one run's counts
        kept.setdefault((result_id, pattern_id), (result_id, pattern_id, matches, tries))
    with views_set_aside():
        with op.batch_alter_table("run_cases", schema=None) as batch_op:
            batch_op.drop_constraint(batch_op.f("fk_run_cases_match_set_id_match_sets"), type_="foreignkey")
            batch_op.drop_index(batch_op.f("ix_run_cases_match_set_id"))
            batch_op.drop_column("match_set_id")
        op.drop_table("pattern_matches")
        op.create_table(
            "pattern_matches",
            sa.Column("case_result_id", sa.Integer(), nullable=False),
            sa.Column("pattern_id", sa.Integer(), nullable=False),
            sa.Column("matches", sa.Integer(), nullable=False),
            sa.Column("tries", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["case_result_id"], ["case_results.id"],
                                    name=op.f("fk_pattern_matches_case_result_id_case_results"), ondelete="CASCADE"),
            sa.ForeignKeyConstraint(["pattern_id"], ["patterns.id"],
                                    name=op.f("fk_pattern_matches_pattern_id_patterns")),
            sa.PrimaryKeyConstraint("case_result_id", "pattern_id", name=op.f("pk_pattern_matches")),
        )
        with op.batch_alter_table("pattern_matches", schema=None) as batch_op:
            batch_op.create_index(batch_op.f("ix_pattern_matches_pattern_id"), ["pattern_id"], unique=False)
        if kept:
            conn.exec_driver_sql("INSERT INTO pattern_matches (case_result_id, pattern_id, matches, tries) "
                                 "VALUES (?, ?, ?, ?)", list(kept.values()))
        op.drop_table("match_sets")
    op.execute(f"CREATE VIEW v_pattern_matches AS {OLD_V_PATTERN_MATCHES}")
