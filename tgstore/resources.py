"""Where tgstore's data files are (the SQL queries and the Alembic migrations), and the hash of tgstore's code.

In the source tree they are the top-level `queries/` and `migrations/`; a wheel ships them inside the package as
`tgstore/sql/` and `tgstore/migrations/` (see `[tool.setuptools.package-dir]` in pyproject.toml). An editable
install reads the source tree, so an edited query is live without reinstalling.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _data_dir(packaged: str, source: str) -> Path:
    for candidate in (PACKAGE_DIR / packaged, PACKAGE_DIR.parent / source):
        if candidate.is_dir():
            return candidate
    return PACKAGE_DIR / packaged  # absent: callers report it with this path


QUERIES_DIR = _data_dir("sql", "queries")
MIGRATIONS_DIR = _data_dir("migrations", "migrations")


@cache
def code_hash() -> str:
    """sha256 over tgstore's code: the package's *.py, the queries and the migrations, each by its path within its
    directory and its bytes, read once per process (when it first stores a run). Every run records it
    (`runs.code_hash`), so "was this stored by the code here?" is a comparison of contents, not of file times."""
    digest = hashlib.sha256()
    for label, root, pattern in (("tgstore", PACKAGE_DIR, "*.py"), ("queries", QUERIES_DIR, "*.sql"),
                                 ("migrations", MIGRATIONS_DIR, "*.py")):
        hash_files(digest, root, pattern, f"{label}/")
    return digest.hexdigest()


def hash_files(digest: hashlib._Hash, root: Path, pattern: str, prefix: str = "") -> None:
    """Feed `digest` every file under `root` matching `pattern` (none in __pycache__), in path order, each as
    `prefix` + its path within `root`, a NUL, and its bytes."""
    for path in sorted(root.rglob(pattern)):
        if "__pycache__" not in path.parts:
            digest.update(f"{prefix}{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
