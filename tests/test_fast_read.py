"""A question reads SQLite with the standard library alone (tgstore/db/read.py): the schema head it checks against,
read from migrations/versions/ as text, is Alembic's own head; `tgstore runs`, `tgstore query` and a refused
`ingest-svod` load neither SQLAlchemy nor Alembic; a database at an older or unknown revision is refused with the
words the SQLAlchemy side uses."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sample_bundles import build_sample_db

from tgstore.db import DatabaseError, head_revision
from tgstore.db.read import check_schema, head, open_reader, revisions

PROBE = """
import runpy, sys
sys.argv = ["tgstore", *sys.argv[1:]]
try:
    runpy.run_module("tgstore", run_name="__main__")
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in ("sqlalchemy", "alembic") if m in sys.modules)
sys.stderr.write(f"\\nexit {code} loaded {loaded}\\n")
"""


def probe(*args: object) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, timeout=120)
    return done.stdout, done.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return build_sample_db(tmp_path_factory.mktemp("fast")).path


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert head() == head_revision()
    from tgstore.db.migrate import known_revisions

    assert set(revisions()) == known_revisions()


def test_a_read_loads_neither_sqlalchemy_nor_alembic(sample: Path, tmp_path: Path) -> None:
    out, last = probe("runs", "--db", sample)
    assert last == "exit 0 loaded []" and "ok" in out
    out, last = probe("query", "kernels_changed", "-p", "a=0.13.0", "-p", "b=0.14.0", "--json", "--db", sample)
    assert last == "exit 0 loaded []" and '"rows": [' in out
    empty = tmp_path / "empty.log"
    empty.write_text("")
    _out, last = probe("ingest-svod", empty, "--case", "add", "--db", tmp_path / "new.db")
    assert last == "exit 2 loaded []"
    assert not (tmp_path / "new.db").exists()  # refused before anything was written


def test_an_older_or_unknown_schema_is_refused(sample: Path, tmp_path: Path) -> None:
    copy = tmp_path / "old.db"
    copy.write_bytes(sample.read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0022'")
    with pytest.raises(DatabaseError, match="older than this tgstore's .*tgstore db upgrade"):
        open_reader(copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
        with pytest.raises(DatabaseError, match="does not know"):
            check_schema(conn, str(copy))
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(DatabaseError, match="holds no tgstore schema"):
        open_reader(foreign)
