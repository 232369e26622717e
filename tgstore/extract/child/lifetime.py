"""A process of the extraction dies with the one that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import sys


def die_with_parent(expected: int | None) -> None:
    """Ask Linux to kill this process when the process that started it (pid `expected`) dies, so that a killed
    `tgstore ingest` (its children run in their own sessions, out of reach of the terminal's signals) leaves no
    extraction, and an extraction no worker (workers.py), behind."""
    if not sys.platform.startswith("linux"):
        return
    try:
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except Exception:
        return
    if expected and os.getppid() != expected:  # the parent died before prctl took effect
        os._exit(1)
