"""What an extraction read of its tinygrad: every file under `tinygrad/` it loaded or opened (by git blob id), and
the entries of every directory it listed or loaded a file from. Standard library only.

A later commit whose tree has the same blob at each of those paths and the same entries in each of those directories
gives an extraction the same bytes to read, so the same output (a sweep copies the run instead:
tgstore/history/skip.py). Modules come from sys.modules at the end; other files from the interpreter's `open` audit
events; directories from the `os.listdir`/`os.scandir` events (the import system lists a package's directory before
it finds a module there, so a file that appears where an import looks is seen) and from every loaded file's parent.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

VERSION_FILES = ("setup.py", "pyproject.toml")  # what the header's version is read from
SKIPPED_NAMES = frozenset({"__pycache__"})
OPEN_EVENTS = frozenset({"open", "ctypes.dlopen"})  # audit events naming a file read (args[0])
WATCHED_EVENTS = OPEN_EVENTS | {"os.listdir", "os.scandir"}  # ... and a directory listed


def git_blob_id(data: bytes) -> str:
    """The object id git gives a file with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def listing_hash(names: list[str]) -> str:
    """A directory's entries (names of files and subdirectories, not their content) as one hash."""
    return hashlib.sha256("\n".join(sorted(n for n in names if n not in SKIPPED_NAMES)).encode()).hexdigest()


def file_blob_id(path: str) -> str | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return git_blob_id(f.read())


class InputWatch:
    """Started before tinygrad is imported; `record()` at the end of the extraction."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = str(root)
        self.package = os.path.join(self.root, "tinygrad")
        self.prefix = self.package + os.sep
        self.opened: set[str] = set()
        self.listed: set[str] = set()

    def start(self) -> None:
        sys.addaudithook(self._hook())

    def _inside(self, path: Any) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        try:
            path = os.fsdecode(path)
        except TypeError:
            return None
        path = os.path.abspath(path)
        return path if path == self.package or path.startswith(self.prefix) else None

    def _hook(self) -> Callable[[str, tuple], None]:
        """The audit hook. It runs for every audited event of the process, `id()` included (millions in an
        extraction), so the events it ignores cost one set look-up in a plain function: a bound method comparing the
        event's name four times cost 0.7 µs a call, this 0.2 µs (the interpreter's own call is the rest)."""
        inside, opened, listed = self._inside, self.opened, self.listed

        def hook(event: str, args: tuple, watched: frozenset[str] = WATCHED_EVENTS) -> None:
            if event not in watched:
                return
            if event in OPEN_EVENTS:
                if args and (path := inside(args[0])) is not None:
                    opened.add(path)
            elif (path := inside(args[0] if args and args[0] is not None else ".")) is not None:
                listed.add(path)

        return hook

    def paths(self) -> tuple[set[str], set[str]]:
        """The files (opened or loaded as modules) and the directories listed so far, absolute."""
        files = set(self.opened)
        for module in list(sys.modules.values()):
            found = getattr(module, "__file__", None)
            if isinstance(found, str) and (path := self._inside(found)) is not None:
                files.add(path)
        return files, set(self.listed)

    def add(self, files: set[str], dirs: set[str]) -> None:
        """What another process of the run read (a worker's `paths()`, child/workers.py)."""
        self.opened |= files
        self.listed |= dirs

    def record(self) -> dict[str, Any]:
        """{"files": {path: git blob id}, "dirs": {dir: listing hash}, "versions": {setup.py: blob id or None}},
        paths relative to the root, POSIX spelling."""
        files, listed = self.paths()
        recorded_files, dirs = {}, listed
        for path in sorted(files):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    recorded_files[self._rel(path)] = git_blob_id(f.read())
                dirs.add(os.path.dirname(path))
            elif os.path.isdir(path):
                dirs.add(path)
        recorded_dirs = {}
        for path in sorted(dirs):
            try:
                recorded_dirs[self._rel(path)] = listing_hash(os.listdir(path))
            except OSError:
                continue
        versions = {name: file_blob_id(os.path.join(self.root, name)) for name in VERSION_FILES}
        return {"files": recorded_files, "dirs": recorded_dirs, "versions": versions}

    def _rel(self, path: str) -> str:
        return pathlib.Path(os.path.relpath(path, self.root)).as_posix()
