"""The schema comes from real Alembic migrations on a real SQLite file."""

import shutil
import sqlite3
import threading
import time

import pytest
from sqlalchemy import text

from tgstore.db import DatabaseError, current_revision, downgrade, head_revision, open_engine, upgrade
from tgstore.db.models import Base


def table_names(path):
    with sqlite3.connect(path) as conn:
        # sqlite_sequence (SQLite's own, made by AUTOINCREMENT) is not part of the schema and cannot be dropped
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                                                 "AND name <> 'sqlite_sequence'")}


def test_upgrade_from_empty_creates_every_model_table(tmp_path):
    db = tmp_path / "t.db"
    engine = open_engine(db)
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    names = table_names(db)
    assert set(Base.metadata.tables) <= names
    assert {"v_runs", "v_kernels", "v_sources", "v_pattern_matches"} <= names


def schema(path) -> dict[str, list]:
    """A database's schema as SQLite holds it, each statement's lines sorted (Alembic's batch rebuilds write a
    table's constraints in an order that differs between runs), its revision and journal mode."""
    with sqlite3.connect(path) as conn:
        statements = sorted((kind, name, sorted(line.strip().removesuffix(",") for line in (sql or "").splitlines()))
                            for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"))
        return {"schema": statements, "revision": conn.execute("SELECT * FROM alembic_version").fetchall(),
                "journal": conn.execute("PRAGMA journal_mode").fetchall(),
                "checks": conn.execute("PRAGMA integrity_check").fetchall()
                + conn.execute("PRAGMA foreign_key_check").fetchall()}


def test_a_new_database_gets_the_schema_the_migrations_build(tmp_path, monkeypatch):
    """A new file migrated to head copies the template the migrations built once (db/schema_copy.py): the same
    tables, columns, constraints, indexes, views and revision as running every migration on it, in WAL mode; a file
    that held a schema is migrated; an edited migration names another template."""
    from tgstore.db import migrate, schema_copy

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copied = open_engine(tmp_path / "copied.db")
    upgrade(copied)  # builds the template, then copies it
    again = open_engine(tmp_path / "again.db")
    upgrade(again)
    migrated = open_engine(tmp_path / "migrated.db")
    migrate._migrate_to_head(migrated)  # every migration, as before templates
    for engine in (copied, again, migrated):
        engine.dispose()
    assert [p.name for p in (tmp_path / "cache" / "tgstore").iterdir()] == [schema_copy.template_name()]
    expected = schema(tmp_path / "migrated.db")
    assert expected["revision"] == [(head_revision(),)] and expected["journal"] == [("wal",)]
    assert expected["checks"] == [("ok",)] and len(expected["schema"]) > 100
    assert schema(tmp_path / "copied.db") == schema(tmp_path / "again.db") == expected

    # a file that ever held a schema is migrated, never copied over: down to base (alembic_version stays) and up
    engine = open_engine(tmp_path / "again.db")
    downgrade(engine, "base")
    assert table_names(tmp_path / "again.db") == {"alembic_version"}
    upgrade(engine)
    engine.dispose()
    assert schema(tmp_path / "again.db") == expected

    edited = tmp_path / "migrations"
    shutil.copytree(schema_copy.MIGRATIONS_DIR, edited, ignore=shutil.ignore_patterns("__pycache__"))
    first = sorted(edited.rglob("*.py"))[-1]
    first.write_text(first.read_text() + "\n# edited\n")
    monkeypatch.setattr(schema_copy, "MIGRATIONS_DIR", edited)
    schema_copy.template_name.cache_clear()
    try:
        assert schema_copy.template_name() != (tmp_path / "cache" / "tgstore").iterdir().__next__().name
    finally:
        schema_copy.template_name.cache_clear()


def test_migrations_match_the_models(tmp_path):
    """Alembic's autogenerate finds nothing to add: the migrations and the models describe the same schema."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_downgrade_to_base_and_back(tmp_path):
    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    downgrade(engine, "base")
    assert current_revision(engine) is None
    assert table_names(db) <= {"alembic_version"}
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert set(Base.metadata.tables) <= table_names(db)


def test_step_down_one_revision_and_up(tmp_path):
    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    downgrade(engine, "-1")
    assert current_revision(engine) != head_revision()
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_wal_and_foreign_keys_are_on(tmp_path):
    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_not_a_database_is_refused_without_touching_it(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not sqlite\n")
    with pytest.raises(DatabaseError, match="not a SQLite database"):
        open_engine(path)
    assert path.read_text() == "this is not sqlite\n"


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'ffff_from_the_future'")
    with pytest.raises(DatabaseError, match="newer tgstore"):
        upgrade(engine)


def test_second_writer_waits_for_the_first(tmp_path):
    """BEGIN IMMEDIATE: a second writer blocks on the busy timeout rather than failing mid-transaction."""
    db = tmp_path / "t.db"
    first = open_engine(db)
    upgrade(first)
    second = open_engine(db, busy_timeout_ms=5000)
    started = threading.Event()

    def hold_lock():
        with first.begin() as conn:
            conn.execute(text("INSERT INTO cases (name) VALUES ('held')"))
            started.set()
            time.sleep(0.5)

    thread = threading.Thread(target=hold_lock)
    thread.start()
    started.wait()
    t0 = time.monotonic()
    with second.begin() as conn:
        conn.execute(text("INSERT INTO cases (name) VALUES ('waited')"))
    waited = time.monotonic() - t0
    thread.join()
    assert waited > 0.2
    with second.connect() as conn:
        assert {r[0] for r in conn.execute(text("SELECT name FROM cases"))} == {"held", "waited"}


@pytest.mark.slow  # a dozen CLI processes
def test_db_commands_create_migrate_and_report(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "new.db"

    def tgstore(*args):
        return subprocess.run([sys.executable, "-m", "tgstore", *args, "--db", str(db)], capture_output=True,
                              text=True)

    assert tgstore("runs").returncode == 1 and not db.exists()  # readers never create a database
    assert tgstore("db", "upgrade").returncode == 0
    assert f"current: {head_revision()}" in tgstore("db", "current").stdout
    assert tgstore("db", "downgrade", "base").returncode == 0
    assert "current: None" in tgstore("db", "current").stdout
    assert table_names(db) <= {"alembic_version"}
    assert tgstore("db", "upgrade").returncode == 0
    assert set(Base.metadata.tables) <= table_names(db)


def test_kernel_names_survive_a_downgrade_and_are_backfilled(tmp_path):
    """0004 adds kernels.name and fills it from the stored programs: after 0004 -> 0003 -> 0004 the names are back."""
    from sample_bundles import bundle_a, bundle_b, write_bundle

    from tgstore.bundle import read_bundle
    from tgstore.store.ingest import ingest_bundle

    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    for i, records in enumerate([bundle_a(), bundle_b()]):
        ingest_bundle(engine, read_bundle(write_bundle(tmp_path / f"{i}.jsonl", records)))

    def names():
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT hash, name FROM kernels ORDER BY hash").fetchall()

    before = names()
    assert before and any(name for _, name in before)
    downgrade(engine, "0003")
    assert "name" not in {row[1] for row in sqlite3.connect(db).execute("PRAGMA table_info(kernels)")}
    upgrade(engine)
    assert names() == before


def test_gc_removes_what_no_run_refers_to_and_nothing_else(tmp_path):
    """Replacing runs leaves their artifacts behind (they may be shared); gc removes exactly the unshared ones."""
    import subprocess
    import sys

    from sample_bundles import bundle_a, bundle_b, write_bundle

    from tgstore.bundle import read_bundle
    from tgstore.store.ingest import ingest_bundle

    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    bundle_a_path = write_bundle(tmp_path / "a.jsonl", bundle_a())
    ingest_bundle(engine, read_bundle(bundle_a_path))
    before = content_counts(db)
    views_before = view_rows(db)
    # B, then A again with force: B's run stays, and so do its artifacts; replacing A's run with an identical one
    # orphans nothing
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "b.jsonl", bundle_b())))
    with_b = content_counts(db)
    ingest_bundle(engine, read_bundle(bundle_a_path), force=True)
    from tgstore.db.gc import collect_garbage

    assert not any(collect_garbage(engine).values())
    assert content_counts(db) == with_b
    # dropping B's run orphans everything only B used: gc takes the database back to A alone
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM runs WHERE id IN (SELECT run_id FROM v_runs WHERE sha NOT IN "
                     "(SELECT sha FROM v_runs ORDER BY run_id DESC LIMIT 1))")
    result = subprocess.run([sys.executable, "-m", "tgstore", "db", "gc", "--vacuum", "--db", str(db)],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "removed" in result.stderr and "case_results" in result.stderr, result.stderr
    assert content_counts(db) == before
    assert view_rows(db) == views_before
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def content_counts(db):
    tables = ["blobs", "kernels", "uop_nodes", "linears", "linear_uops", "case_results", "schedule_items", "programs",
              "pattern_matches", "patterns", "pattern_sets", "pattern_set_members"]
    with sqlite3.connect(db) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def view_rows(db):
    """What the views show, but the run ids (a re-ingested run gets a new one)."""
    with sqlite3.connect(db) as conn:
        return {v: sorted(repr(row[1:]) for row in conn.execute(f"SELECT * FROM {v}"))
                for v in ["v_kernels", "v_sources", "v_pattern_matches"]}


def test_a_run_records_the_code_that_stored_it(tmp_path):
    """0018's runs.code_hash: the hash of tgstore's code (its .py files, queries and migrations) that stored the run,
    which is how tests/readme_db.py tells a stale README database (a content hash, not a file time)."""
    from sample_bundles import bundle_a, write_bundle

    from tgstore.bundle import read_bundle
    from tgstore.resources import PACKAGE_DIR, code_hash
    from tgstore.store.ingest import ingest_bundle

    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "a.jsonl", bundle_a())))
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT code_hash FROM runs")).scalars().all()
    assert stored == [code_hash()] and len(stored[0]) == 64
    (PACKAGE_DIR / "__init__.py").touch()  # a file time is no change
    code_hash.cache_clear()
    assert code_hash() == stored[0]
    downgrade(engine, "0014")
    assert "code_hash" not in {row[1] for row in sqlite3.connect(tmp_path / "t.db").execute("PRAGMA table_info(runs)")}
