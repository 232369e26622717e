"""Text that goes into a bundle: process-independent (no addresses, colours or absolute paths), and the writer."""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import re

ADDR_RE = re.compile(r" at 0x[0-9a-fA-F]+")
ANSI_RE = re.compile("\x1b\\[(K|.*?m)")
# the same color codes inside a repr (kernel names in KernelInfo args are colored in some releases)
ESCAPED_ANSI_RE = re.compile(r"\\x1b\[[0-9;]*[mK]")
# tinygrad's DEBUG lines name their caller; that is this package, wherever tgstore happens to be installed
CHILD_PREFIX = str(pathlib.Path(__file__).resolve().parent) + os.sep
# ... and at which line ("scheduled 1 kernels ... | patterns.py:93": the counting rewrite's call of a rule): the
# line is dropped, so that editing the child does not change every stored case's DEBUG text
CHILD_LOCATION_RE = re.compile(r"(?<![\w/.])(" + "|".join(
    re.escape(p.name) for p in sorted(pathlib.Path(__file__).resolve().parent.glob("*.py"))) + r"):\d+\b")
_ITEM = r"[\w.]+(?:\([^(){}]*\))?"
SET_RE = re.compile(r"\{((?:" + _ITEM + r", )+" + _ITEM + r")\}")
# Wall-clock figures in DEBUG output ("scheduled 1 kernels in 6.30 ms") differ on every run; masked so that unchanged
# output stays byte-identical across runs and commits.
TIMING_RE = re.compile(r"[ \t]*\b\d+\.\d+[ \t]*(ms|us|µs|s)\b")

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
    if ROOT_PREFIX:
        s = s.replace(ROOT_PREFIX, "")
    return SET_RE.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", s)


def mask_timings(s: str) -> str:
    return TIMING_RE.sub(r" x.xx \1", s)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class BundleWriter:
    """One JSON object per line, flushed as written so the parent can follow progress and a crash keeps what came
    before."""

    def __init__(self, path: pathlib.Path):
        self.f = open(path, "w", encoding="utf-8")

    def write(self, rec: dict) -> None:
        self.f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()
