"""A seeded mutation fuzz over the Svod fixtures: no input gives a traceback; each is read with its problems at
lines of its own file, or refused with one message; stored, it is stored whole or not at all, and the database
stays sound (`tgstore db check`'s checks)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text as sql
from svod_fuzz import inputs

from tgstore.db.engine import open_engine
from tgstore.db.migrate import upgrade
from tgstore.db.repair import check_database
from tgstore.svod.readers import read_runs
from tgstore.svod.store import SvodLogError, ingest_svod_runs

READ = 5000  # read only: about a millisecond each
STORED = 40  # read, stored into a real database and checked after each


def test_five_thousand_mutated_logs_are_read_without_a_traceback() -> None:
    read = problems = 0
    for name, text in inputs(READ):
        lines = text.count("\n") + 1
        runs = read_runs([(name, text)])  # interleaved tests are stored too now, never refused
        read += 1
        for run in runs:
            for problem in run.problems:
                assert problem.file == 0 and 0 <= problem.line <= lines, (name, problem)
                problems += 1
    assert read == READ
    assert problems > READ * 0.1, problems  # the mutations did make problems whose places were checked


def test_mutated_logs_are_stored_whole_or_not_at_all(tmp_path: Path) -> None:
    db = tmp_path / "fuzz.db"
    engine = open_engine(db)
    upgrade(engine)
    stored = refused = logs = 0
    for name, text in inputs(STORED, seed=7):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with engine.connect() as conn:
            before = conn.execute(sql("SELECT count(*) FROM svod_runs")).scalar()
        try:
            reports = ingest_svod_runs(engine, path, "sum_rows")
            stored += 1
            for report in reports:
                if report.log is not None:
                    assert all(0 <= p.line <= text.count("\n") + 1 for p in report.problems)
                    logs += 1
        except SvodLogError as exc:
            assert "nothing stored" in str(exc) and "\n" not in str(exc)
            with engine.connect() as conn:
                assert conn.execute(sql("SELECT count(*) FROM svod_runs")).scalar() == before
            refused += 1
        assert check_database(engine, repair=False).ok, name
    assert stored + refused == STORED and stored > 0 and logs > 0, (stored, refused, logs)
