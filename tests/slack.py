"""Timeouts in tests, generous by design: a test's timeout only stops a hang, it never judges speed (bench/ does).

Each is a baseline measured on an idle 2-core machine (the slowest extraction a test runs, the built-in suite at
0.14 with C and LLVM, took 82 s alone) times SLACK (default 4, TGSTORE_TEST_SLACK to change): a loaded machine in
CI, five times slower, still passes; a real hang still ends. Every wait in the tests goes through `generous`, except
the few that are the behaviour under test (a hanging case killed after a few seconds, an extraction killed after half
a second) and short polls inside a loop that waits generously."""

from __future__ import annotations

import os

SLACK = float(os.environ.get("TGSTORE_TEST_SLACK", "4"))
EXTRACTION_BASELINE = 300.0  # seconds: the built-in suite's extraction (82 s idle), rounded up


def generous(baseline: float = EXTRACTION_BASELINE) -> float:
    return baseline * SLACK
