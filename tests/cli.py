"""The tgstore command as a user runs it (a fresh process, no terminal input, a generous timeout that only stops a
hang), and a database's rows, for the tests."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from slack import generous

TGSTORE = [sys.executable, "-m", "tgstore"]


def tgstore(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TGSTORE, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=generous() if timeout is None else timeout, stdin=subprocess.DEVNULL)


def rows(db: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def ingest_source(base: Path, source: str, tinygrad: Path, renderers: str = "C,LLVM") -> Path:
    """A database of `tinygrad`'s extraction of the cases in `source` (default stages), in `base`."""
    cases = base / "cases.py"
    cases.write_text(source)
    db = base / "cases.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad, "--cases", cases, "--renderers", renderers)
    assert proc.returncode == 0, proc.stderr
    return db
