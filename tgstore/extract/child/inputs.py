"""What an extraction read, looked for and used: every file under `tinygrad/` it loaded, opened or stat()ed (by git
blob id), the entries of every directory it listed or loaded a file from, the package paths it looked for and did not
find, and what it used of the machine (child/toolchain.py: programs it started, libraries it loaded, files and
directories outside the package). Standard library only.

A later commit whose tree has the same blob at each of those paths, the same entries in each of those directories
and still nothing at the absent paths gives an extraction the same bytes to read, so the same output on a machine
where the toolchain keys identify alike (a sweep copies the run instead: tgstore/history/skip.py).

Where each comes from: modules from sys.modules at the end; opened files from the interpreter's `open` audit event
(raised before the open, so a file that is not there is seen too); listed directories from `os.listdir` and
`os.scandir` events (the import system lists a directory before it finds a module there, so a module that appears
where an import looks is seen); stat() calls, which raise no audit event, from a wrapper around `os.stat` and
`os.lstat` (`os.path.exists`, `isfile`, `isdir`, pathlib and the import system's own probes all go through them);
programs from the `subprocess.Popen`, `os.exec`, `os.posix_spawn`, `os.spawn` and `os.system` events; libraries from
`ctypes.dlopen`. What is not seen: the files a started program reads (the run lists the programs it started).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import posix
import re
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from typing import Any

from . import toolchain

VERSION_FILES = ("setup.py", "pyproject.toml")  # what the header's version is read from
SKIPPED_NAMES = frozenset({"__pycache__"})  # bytecode: derived from the sources, and not in a commit's tree
PROGRAM_EVENTS = {"subprocess.Popen": 0, "os.exec": 0, "os.posix_spawn": 0, "os.spawn": 1}  # event -> program arg
OPEN_EVENTS = frozenset({"open"})
LIST_EVENTS = frozenset({"os.listdir", "os.scandir"})
WATCHED_EVENTS = OPEN_EVENTS | LIST_EVENTS | PROGRAM_EVENTS.keys() | {"ctypes.dlopen", "os.system"}
VOLATILE = ("/proc", "/sys", "/dev")  # the kernel's views: they change under any process
KINDS = ("opened", "listed", "probed", "programs", "libraries")
PSEUDO = re.compile(r"/<[^/]*>$")  # code objects' pseudo-files: "<string>", "<frozen runpy>"


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


def _absolute(path: Any) -> str | None:
    if path is None or isinstance(path, int):
        return None
    try:
        path = os.fsdecode(path)
    except TypeError:
        return None
    return os.path.abspath(path)


class InputWatch:
    """Started before tinygrad is imported; `record()` at the end of the extraction. `ignored` are paths that are
    not the commit's nor the machine's (the case files: the suite's hash names them; the bundle being written)."""

    def __init__(self, root: pathlib.Path, ignored: list[str] | None = None) -> None:
        self.root = str(root)
        self.package = os.path.join(self.root, "tinygrad")
        self.seen: dict[str, set[str]] = {kind: set() for kind in KINDS}
        self.ignored = {os.path.abspath(p) for p in ignored or []}

    def start(self) -> None:
        sys.addaudithook(self._hook())
        self._watch_stat()

    def _hook(self) -> Callable[[str, tuple], None]:
        """The audit hook. It runs for every audited event of the process, `id()` included (millions in an
        extraction), so the events it ignores cost one set look-up in a plain function: a bound method comparing the
        event's name four times cost 0.7 µs a call, this 0.2 µs (the interpreter's own call is the rest). Paths are
        sorted out at the end (record)."""
        opened, listed = self.seen["opened"], self.seen["listed"]
        programs, libraries = self.seen["programs"], self.seen["libraries"]

        def hook(event: str, args: tuple, watched: frozenset[str] = WATCHED_EVENTS) -> None:
            if event not in watched:
                return
            if event in OPEN_EVENTS:
                if args and (path := _absolute(args[0])) is not None:
                    opened.add(path)
            elif event in LIST_EVENTS:
                if (path := _absolute(args[0] if args and args[0] is not None else ".")) is not None:
                    listed.add(path)
            elif event == "ctypes.dlopen":
                if args and args[0] is not None:
                    libraries.add(os.fsdecode(args[0]))
            elif event == "os.system":
                programs.add("sh")
            else:
                found = args[PROGRAM_EVENTS[event]] if len(args) > PROGRAM_EVENTS[event] else None
                if found is None and event == "subprocess.Popen" and len(args) > 1 and args[1]:
                    found = args[1][0] if not isinstance(args[1], (str, bytes)) else args[1]
                if found is not None:
                    programs.add(os.fsdecode(found))

        return hook

    def _watch_stat(self) -> None:
        """stat() raises no audit event: wrap it where every caller looks it up (`os.stat` for os.path and pathlib,
        `posix.stat` for the import system), recording the path and answering as before."""
        probed = self.seen["probed"]
        for name in ("stat", "lstat"):
            real = getattr(posix, name)

            def watched(path: Any, *args: Any, _real: Callable = real, **kwargs: Any) -> Any:
                if type(path) is str and path[:1] == "/":  # the import system's probes: the hot path
                    probed.add(path)
                elif kwargs.get("dir_fd") is None and (found := _absolute(path)) is not None:
                    probed.add(found)
                return _real(path, *args, **kwargs)

            setattr(posix, name, watched)
            setattr(os, name, watched)

    def paths(self) -> dict[str, set[str]]:
        """What was seen so far (files loaded as modules among the opened)."""
        seen = {kind: set(found) for kind, found in self.seen.items()}
        for module in list(sys.modules.values()):
            found = getattr(module, "__file__", None)
            if isinstance(found, str):
                seen["opened"].add(os.path.abspath(found))
        return seen

    def add(self, seen: dict[str, set[str]]) -> None:
        """What another process of the run saw (a worker's `paths()`, child/workers.py)."""
        for kind, found in seen.items():
            self.seen[kind] |= found

    def record(self) -> dict[str, Any]:
        """{"files": {path: git blob id}, "dirs": {dir: listing hash}, "absent": [path], "present": [dir],
        "versions": {setup.py: blob id or None}} of the package, paths relative to the root in POSIX spelling;
        "machine": {key: identity} (child/toolchain.py) and "subprocesses": the programs started."""
        seen = self.paths()
        package = self._package(seen)
        machine_keys = self._machine_keys(seen)
        versions = {name: file_blob_id(os.path.join(self.root, name)) for name in VERSION_FILES}
        return {**package, "versions": versions, "machine": toolchain.identify(machine_keys),
                "subprocesses": sorted(seen["programs"])}

    def _inside(self, path: str) -> bool:
        return (path == self.package or path.startswith(self.package + os.sep)) and not (
            SKIPPED_NAMES & set(path[len(self.package):].split(os.sep)))

    def _package(self, seen: dict[str, set[str]]) -> dict[str, Any]:
        libraries = {_absolute(lib) or "" for lib in seen["libraries"] if os.sep in lib}
        loaded = {p for p in seen["opened"] | libraries if self._inside(p)}
        listed = {p for p in seen["listed"] if self._inside(p)}
        probed = {p for p in seen["probed"] if self._inside(p)} - loaded - listed
        files, dirs, absent, present = {}, set(), set(), set()
        for path in sorted(loaded | probed):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    files[self._rel(path)] = git_blob_id(f.read())
                if path in loaded:  # a file appearing beside a loaded module could shadow it
                    dirs.add(os.path.dirname(path))
            elif os.path.isdir(path):
                (dirs if path in loaded else present).add(path)
            else:
                absent.add(path)
        recorded_dirs = {}
        for path in sorted(dirs | listed):
            try:
                recorded_dirs[self._rel(path)] = listing_hash(os.listdir(path))
            except OSError:
                absent.add(path)
        return {"files": files, "dirs": recorded_dirs, "absent": sorted(map(self._rel, absent)),
                "present": sorted(self._rel(p) for p in present if self._rel(p) not in recorded_dirs)}

    def _machine_keys(self, seen: dict[str, set[str]]) -> list[str]:
        """The machine's keys (toolchain.identify) for what the run used outside the package and outside the
        interpreter's own installation (whose identity is the `python` key)."""
        outside = Outside(self.root, self.ignored)
        keys = {"python", "cpu"} | {f"program:{p}" for p in seen["programs"]}
        keys |= {f"library:{lib if os.sep not in lib else toolchain.portable(_absolute(lib) or lib)}"
                 for lib in seen["libraries"] if os.sep not in lib or outside.counts(_absolute(lib) or lib)}
        listed = {p for p in seen["listed"] if outside.counts(p)}
        opened = {p for p in seen["opened"] if outside.counts(p)}
        # a path only stat()ed in a listed directory is covered by that directory's entries (names, kinds, sizes);
        # an import path entry stat()ed by the import system is where imports look, not what they found (that is
        # recorded as opened or listed), and whether it was stat()ed depends on which process first imported what
        # (a forked worker imports its pool's modules, one process did so before the watch started)
        entries = {os.path.abspath(e) for e in sys.path if e}
        probed = {p for p in seen["probed"] - opened - listed - entries
                  if outside.counts(p) and os.path.dirname(p) not in listed and not outside.holds(p)}
        for kind, paths in (("file", opened), ("path", probed), ("dir", listed)):
            keys |= {f"{kind}:{toolchain.portable(p)}" for p in paths}
        return sorted(keys)

    def _rel(self, path: str) -> str:
        return pathlib.Path(os.path.relpath(path, self.root)).as_posix()


class Outside:
    """Which paths outside the package are the machine's: not the tinygrad checkout, not the interpreter's own
    installation (its site-packages are the machine's: an optional import finds what is installed there), not the
    extractor's code, the temporary directory, the kernel's views or the paths the run was told to ignore."""

    def __init__(self, root: str, ignored: set[str]) -> None:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the directory holding child/
        temp = tempfile.gettempdir()
        self.skipped = [root, here, temp, os.path.realpath(temp), *VOLATILE]
        self.installs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        self.sites = set()
        for scheme_vars in ({"base": sys.prefix, "platbase": sys.exec_prefix},
                            {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
            paths = sysconfig.get_paths(vars=scheme_vars)
            self.sites |= {os.path.realpath(paths["purelib"]), os.path.realpath(paths["platlib"])}
        self.ignored = ignored

    def counts(self, path: str) -> bool:
        if path in self.ignored or any(_under(path, d) for d in self.skipped) or PSEUDO.search(path) or \
                f"{os.sep}__pycache__{os.sep}" in path:
            return False
        if any(_under(path, d) for d in self.installs):
            return any(_under(path, d) for d in self.sites)
        return True


    def holds(self, path: str) -> bool:
        """Whether `path` is a directory above the checkout, the extractor, the interpreter or an ignored path
        (resolving a path stat()s each of its parents: where things are, not what they are)."""
        return any(_under(d, path) for d in [*self.skipped, *self.installs, *self.ignored])


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
