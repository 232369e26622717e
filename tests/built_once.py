"""A session fixture's data built once per test run, not once per xdist worker.

pytest-xdist runs a session fixture in every worker that needs it: two workers each extracting the same two tinygrad
releases cost the run a minute of one core (tests/two_releases_db.py). Here the first worker to ask builds into a
directory every worker of the run sees (the base temp dir's parent, which xdist gives its workers in common); the
others wait on a file lock and use what it built. Only data that tests read and never change is shared this way.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Any:
    """`build(directory)`'s result (JSON: paths as strings), from the first worker of this run that called it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    where, done = shared / f"built-{name}", shared / f"built-{name}.json"
    with open(shared / f"built-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this worker dies
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)  # what a worker that failed mid-build left
            where.mkdir()
            done.write_text(json.dumps(build(where), default=str))
        return json.loads(done.read_text())
