"""Where tgstore's data files are: the SQL queries and the Alembic migrations.

In the source tree they are the top-level `queries/` and `migrations/`; a wheel ships them inside the package as
`tgstore/sql/` and `tgstore/migrations/` (see `[tool.setuptools.package-dir]` in pyproject.toml). An editable
install reads the source tree, so an edited query is live without reinstalling.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _data_dir(packaged: str, source: str) -> Path:
    for candidate in (PACKAGE_DIR / packaged, PACKAGE_DIR.parent / source):
        if candidate.is_dir():
            return candidate
    return PACKAGE_DIR / packaged  # absent: callers report it with this path


QUERIES_DIR = _data_dir("sql", "queries")
MIGRATIONS_DIR = _data_dir("migrations", "migrations")
