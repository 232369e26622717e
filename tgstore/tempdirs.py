"""Temporary directories that a killed tgstore leaves behind are removed by the next one.

Every temporary directory tgstore makes is named `tgstore-<purpose>-*` and holds an `owner` file naming the process
that made it (pid and start time, so a reused pid is not mistaken for the owner). `clean_stale()` removes the ones
whose owner is gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "tgstore-"
OWNER = "owner"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:].split()[19]
    except (OSError, ValueError, IndexError):
        return None


def owner_line(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid} {_start_time(pid) or '-'}\n"


def _alive(line: str) -> bool:
    try:
        pid_text, started = line.split()[:2]
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now_started = _start_time(pid)
    return started == "-" or now_started is None or now_started == started


def make(purpose: str) -> Path:
    """A new `tgstore-<purpose>-*` directory owned by this process."""
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{purpose}-"))
    (path / OWNER).write_text(owner_line())
    return path


@contextmanager
def owned(purpose: str) -> Iterator[Path]:
    """A temporary directory removed on exit, or by a later tgstore if this one is killed."""
    path = make(purpose)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def owner_alive(path: Path) -> bool:
    """The process that made the tgstore temporary directory `path` is still running."""
    try:
        return _alive((path / OWNER).read_text())
    except OSError:
        return False


def clean_stale(root: Path | None = None) -> list[Path]:
    """Remove the tgstore temporary directories whose owner process is gone; returns them."""
    removed = []
    base = Path(root or tempfile.gettempdir())
    for path in base.glob(f"{PREFIX}*"):
        if not path.is_dir() or path.is_symlink():
            continue
        try:
            line = (path / OWNER).read_text()
        except OSError:
            line = ""
            try:
                if time.time() - path.stat().st_mtime < 60:  # just made by another tgstore, owner not yet written
                    continue
            except OSError:
                continue
        if not _alive(line):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
