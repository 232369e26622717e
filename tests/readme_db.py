"""The database the README's first line builds: `tgstore ingest --db tgstore.db`, the built-in suite of the installed
tinygrad with the default renderers and stages. CI runs that line before the tests, so a test that needs this very
extraction reads it rather than extracting the 90 cases again (minutes on 2 cores). When the file is missing or holds
no such run stored by this very code (`runs.code_hash` against tgstore.resources.code_hash(): a developer's stale
copy) of this very tinygrad (its path and the hash of its files), the same command runs into a temporary directory
instead. Staleness is decided by content, not file times: a checkout, a `touch` or a copy does not change it. Tests
only read it (copy it to change it)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from slack import generous
from tinygrad_releases import REPO_ROOT

from tgstore.extract.child.header import tree_hash
from tgstore.extract.runner import locate_installed_tinygrad
from tgstore.resources import code_hash

README_DB = REPO_ROOT / "tgstore.db"


def _current_builtin_run(db: Path) -> bool:
    """Whether `db` holds an ok current run of the built-in suite of the installed tinygrad (same path, same files),
    stored by tgstore's code as it is now (same code hash). A database from before `runs.code_hash` has no such run."""
    if not db.is_file():
        return False
    tinygrad = locate_installed_tinygrad()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            found = conn.execute(
                "SELECT count(*) FROM runs r JOIN suites s ON s.id = r.suite_id JOIN tinygrad_commits c "
                "ON c.id = r.commit_id WHERE r.status = 'ok' AND r.is_current AND s.name = 'builtin' "
                "AND r.tinygrad_path = ? AND r.code_hash = ? AND c.tree_hash = ?",
                (str(tinygrad), code_hash(), tree_hash(tinygrad))).fetchone()[0]
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
