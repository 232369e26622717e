"""Text that goes into a bundle: process-independent (no addresses, colours or absolute paths), and the writer."""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import re
import sys
import traceback

ADDR_RE = re.compile(r" at 0x[0-9a-fA-F]+")
ANSI_RE = re.compile("\x1b\\[(K|.*?m)")
# the same color codes inside a repr (kernel names in KernelInfo args are colored in some releases)
ESCAPED_ANSI_RE = re.compile(r"\\x1b\[[0-9;]*[mK]")
# tinygrad's DEBUG lines name their caller; that is this package, wherever tgstore happens to be installed
CHILD_PREFIX = str(pathlib.Path(__file__).resolve().parent) + os.sep
# ... and at which line ("scheduled 1 kernels ... | patterns.py:93": the counting rewrite's call of a rule): the
# line is dropped, so that editing the child does not change every stored case's DEBUG text
_CHILD_FILES = "|".join(re.escape(p.name) for p in sorted(pathlib.Path(__file__).resolve().parent.glob("*.py")))
CHILD_LOCATION_RE = re.compile(r"(?<![\w/.])(" + _CHILD_FILES + r"):\d+\b")
# ... and in a traceback ('File "patterns.py", line 93, in rewrite')
CHILD_FRAME_RE = re.compile(r'(File "(?:' + _CHILD_FILES + r')"), line \d+')
# Frames of tinygrad's first-use trampolines, left out of stored tracebacks: they are there only the first time the
# process calls the function behind them (0.14+: a PatternMatcher compiles a rule on its first call, `lazy_compile`),
# so an error's traceback would differ between the first case to meet the rule and a later one.
FIRST_USE_FRAMES = frozenset({"lazy_compile"})
_ITEM = r"[\w.]+(?:\([^(){}]*\))?"
SET_RE = re.compile(r"\{((?:" + _ITEM + r", )+" + _ITEM + r")\}")
# Wall-clock figures in DEBUG output ("scheduled 1 kernels in 6.30 ms") differ on every run; masked so that unchanged
# output stays byte-identical across runs and commits.
TIMING_RE = re.compile(r"[ \t]*\b\d+\.\d+[ \t]*(ms|us|µs|s)\b")
# What tinygrad prints of the process rather than of the case: how many UOps are alive (0.12+: "| 116 uops in cache",
# counting what earlier cases left in the process, e.g. a device they opened), and that a device was opened, with
# the process id (once per process: in whichever case first used it). Masked and dropped, so that a case's text is
# the same alone, in the suite and in a worker (child/workers.py).
LIVE_UOPS_RE = re.compile(r"[ \t]*\b\d+ uops in cache\b")
OPENED_DEVICE_RE = re.compile(r"^opened device \S+ from pid:\d+\n?", re.MULTILINE)

# Set by main(): where the target tinygrad lives. Paths under it are written relative, so the same commit extracted
# from two temporary worktrees yields identical text (and dedups).
ROOT_PREFIX = ""


def set_root(root: pathlib.Path) -> None:
    global ROOT_PREFIX
    ROOT_PREFIX = str(root) + os.sep


def clean(s: str) -> str:
    """Text stored in the bundle must not depend on the process: drop memory addresses, ANSI colors, the absolute
    tinygrad path and the child's own line numbers, and sort the items of printed sets of plain names (sets of
    identity-hashed objects such as DTypes iterate in address order)."""
    s = ESCAPED_ANSI_RE.sub("", ANSI_RE.sub("", ADDR_RE.sub(" at 0x?", s))).replace(CHILD_PREFIX, "")
    if ".py:" in s:
        s = CHILD_LOCATION_RE.sub(r"\1", s)
    if 'File "' in s:
        s = CHILD_FRAME_RE.sub(r"\1", s)
    if ROOT_PREFIX:
        s = s.replace(ROOT_PREFIX, "")
    return SET_RE.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", s)


def error_text(limit: int | None = None) -> str:
    """The exception being handled, as `traceback.format_exc(limit=-limit)` prints it but for first-use frames
    (FIRST_USE_FRAMES), cleaned."""
    exc = traceback.TracebackException(*sys.exc_info())
    for te in _chain(exc):
        frames = [f for f in te.stack if f.name not in FIRST_USE_FRAMES]
        te.stack = traceback.StackSummary.from_list(frames[-limit:] if limit else frames)
    return clean("".join(exc.format()))


def _chain(exc: traceback.TracebackException) -> list[traceback.TracebackException]:
    found: list[traceback.TracebackException] = []
    seen: set[int] = set()
    todo: list[traceback.TracebackException | None] = [exc]
    while todo:
        te = todo.pop()
        if te is None or id(te) in seen:
            continue
        seen.add(id(te))
        found.append(te)
        todo += [te.__cause__, te.__context__]
    return found


def mask_run_dependent(s: str) -> str:
    """Wall-clock figures and what tinygrad prints of the process (above) masked."""
    return LIVE_UOPS_RE.sub(" x uops in cache", OPENED_DEVICE_RE.sub("", TIMING_RE.sub(r" x.xx \1", s)))


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class BundleWriter:
    """One JSON object per line, flushed as written so the parent can follow progress and a crash keeps what came
    before."""

    def __init__(self, path: pathlib.Path):
        self.f = open(path, "w", encoding="utf-8")

    def write(self, rec: dict) -> None:
        # records are trees built here: no cycle to look for (the look-up is a fifth of encoding a case)
        self.f.write(json.dumps(rec, ensure_ascii=False, check_circular=False) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()
