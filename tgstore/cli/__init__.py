"""The `tgstore` command line: the Typer app (cli/app.py); each command group lives in its own module."""

from __future__ import annotations

import sys

# The command modules register themselves on `app` and `db_app`.
from tgstore.cli import (  # noqa: F401
    blame,
    browse,
    db,
    extract,
    gate,
    ingest_forms,
    mcp,
    merge,
    regressions,
    rewrites,
    stages,
    svod,
    times,
    triage,
)
from tgstore.cli.app import app, db_app


def run() -> None:  # pragma: no cover - console entry for `python -m tgstore`
    sys.exit(app())


__all__ = ["app", "db_app", "run"]
