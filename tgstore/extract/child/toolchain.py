"""What an extraction used of the machine beyond the tinygrad package, as keys whose identity can be asked again
on any machine: `identify(keys)` is both what a run records and what a sweep probes before copying a run (two runs
whose keys identify alike on the machine that would extract, and that read the same package bytes, store the same
facts; history/skip.py).

Keys, one per thing used:
  python              the interpreter (sys.version: version, build, compiler)
  cpu                 the architecture and the CPU's model and flags (renderers ask LLVM for the host's features)
  program:NAME        a program the run started (clang, uname): where PATH finds it, its bytes' sha256 and, for
                      compilers, the first line of `NAME --version`
  library:PATH|NAME   a shared library it loaded with ctypes (libc, libLLVM): the file it resolves to and its sha256
  file:PATH           a file it opened outside the package: its sha256, "directory", or None when absent
  path:PATH           a path it only stat()ed, outside every directory it listed: "file SIZE", "directory" or None
  dir:PATH            a directory it listed: the hash of its entries' names, kinds and file sizes (a library search
                      lists a directory and stat()s every entry), or None when absent
Paths under the interpreter's prefixes and the home directory are written with $prefix, $base and $home, so a
probe from another virtual environment or user looks where its own extraction would.

Not covered (docs/design.md, "What a skip cannot prove"): what a started program reads (clang's own libraries and
headers, git's repository); the run records the programs it started (`subprocesses`).
Standard library only.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import sys
from typing import Any

# programs whose `--version` names a version their bytes alone may not (a compiler driver loads its libLLVM)
VERSIONED = ("clang", "gcc", "cc", "c++", "clang++", "ld", "ld.lld", "llc", "opt", "nvcc", "hipcc")
_CACHE: dict[tuple, Any] = {}


def roots() -> list[tuple[str, str]]:
    """($token, directory) pairs a path is written relative to, longest directory first."""
    found = {"$prefix": sys.prefix, "$base": sys.base_prefix, "$home": os.path.expanduser("~")}
    pairs = [(token, os.path.realpath(d)) for token, d in found.items() if d and d != "~"]
    return sorted(pairs, key=lambda p: -len(p[1]))


def portable(path: str) -> str:
    """`path` with the first root it lies under replaced by its token."""
    for token, directory in roots():
        if path == directory or path.startswith(directory + os.sep):
            return token + path[len(directory):]
    return path


def local(path: str) -> str:
    """The path a portable one names on this machine."""
    for token, directory in roots():
        if path == token or path.startswith(token + os.sep):
            return directory + path[len(token):]
    return path


def sha256_of(path: str) -> str | None:
    """The file's sha256 (cached by inode, size and modification time: a sweep asks again and again)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = ("sha", path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        _CACHE[key] = digest.hexdigest()
    return _CACHE[key]


def kind_of(path: str) -> str | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    return f"file {st.st_size}" if stat.S_ISREG(st.st_mode) else "other"


def cpu() -> str:
    described = [platform.machine()]
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            for line in f:
                name = line.split(":", 1)[0].strip()
                if name in ("model name", "flags", "Features", "CPU part"):
                    described.append(line.strip())
                elif not line.strip() and len(described) > 1:
                    break  # the first processor says it
    except OSError:
        described.append(platform.processor())
    return hashlib.sha256("\n".join(described).encode()).hexdigest()


def program(name: str) -> str | None:
    found = name if os.sep in name else shutil.which(name)
    if not found or not os.path.isfile(found):
        return None
    real = os.path.realpath(found)
    identity = f"{real} {sha256_of(real)}"
    if os.path.basename(name) in VERSIONED:
        key = ("version", real, identity)
        if key not in _CACHE:
            try:
                out = subprocess.run([real, "--version"], capture_output=True, text=True, timeout=30,
                                     stdin=subprocess.DEVNULL).stdout
            except (OSError, subprocess.SubprocessError):
                out = ""
            _CACHE[key] = (out.strip().splitlines() or [""])[0]
        identity += f" {_CACHE[key]}"
    return identity


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


def library(name: str) -> str | None:
    """A library given by path: that file; by name: the file the dynamic linker loads for it (glibc's dlinfo)."""
    if os.sep in name:
        path = os.path.realpath(name)
        return f"{path} {sha256_of(path)}" if os.path.isfile(path) else None
    try:
        handle = ctypes.CDLL(name)
        libc = ctypes.CDLL(None)
        link = ctypes.POINTER(_LinkMap)()
        if libc.dlinfo(ctypes.c_void_p(handle._handle), 2, ctypes.byref(link)) != 0:  # RTLD_DI_LINKMAP
            return f"{name} unresolved"
        path = os.path.realpath(os.fsdecode(link.contents.l_name))
    except (OSError, AttributeError, ValueError):
        return None
    return f"{path} {sha256_of(path)}"


def file_identity(path: str) -> str | None:
    if os.path.isdir(path):
        return "directory"
    return sha256_of(path) if os.path.exists(path) else None


def dir_identity(path: str) -> str | None:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    lines = "".join(f"{name} {kind_of(os.path.join(path, name))}\n" for name in names)
    return hashlib.sha256(lines.encode()).hexdigest()


IDENTIFY = {"program": program, "library": lambda p: library(local(p)), "file": lambda p: file_identity(local(p)),
            "path": lambda p: kind_of(local(p)), "dir": lambda p: dir_identity(local(p))}


def identify(keys: list[str]) -> dict[str, str | None]:
    """Each key's identity on this machine (see the module docstring)."""
    found: dict[str, str | None] = {}
    for key in keys:
        if key == "python":
            found[key] = sys.version
        elif key == "cpu":
            found[key] = cpu()
        else:
            kind, _, what = key.partition(":")
            found[key] = IDENTIFY[kind](what) if kind in IDENTIFY else f"unknown key {key}"
    return found
