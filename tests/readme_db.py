"""The database the README's first line builds: `tgstore ingest --db tgstore.db`, the built-in suite of the installed
tinygrad with the default renderers and stages. CI runs that line before the tests, so a test that needs this very
extraction reads it rather than extracting the 90 cases again (minutes on 2 cores). When the file is missing, holds
no such run, or is older than tgstore's code (a developer's stale copy), the same command runs into a temporary
directory instead. Tests only read it (copy it to change it)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from slack import generous
from tinygrad_releases import REPO_ROOT

from tgstore.extract.runner import locate_installed_tinygrad

README_DB = REPO_ROOT / "tgstore.db"


def _current_builtin_run(db: Path) -> bool:
    """Whether `db` holds an ok current run of the built-in suite of the installed tinygrad, written after the last
    change to tgstore's code."""
    code = max(p.stat().st_mtime for p in (REPO_ROOT / "tgstore").rglob("*.py"))  # not __pycache__: written later
    if not db.is_file() or db.stat().st_mtime < code:
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            found = conn.execute("SELECT count(*) FROM runs r JOIN suites s ON s.id = r.suite_id WHERE r.status = 'ok' "
                                 "AND r.is_current AND s.name = 'builtin' AND r.tinygrad_path = ?",
                                 (str(locate_installed_tinygrad()),)).fetchone()[0]
    except sqlite3.Error:
        return False
    return found == 1


@pytest.fixture(scope="session")
def readme_db(tmp_path_factory) -> Path:
    if _current_builtin_run(README_DB):
        return README_DB
    work = tmp_path_factory.mktemp("readme")
    proc = subprocess.run([sys.executable, "-m", "tgstore", "ingest", "--db", "tgstore.db"], cwd=work,
                          capture_output=True, text=True, timeout=generous())
    assert proc.returncode == 0, proc.stderr
    return work / "tgstore.db"
