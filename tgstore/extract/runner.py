"""Parent side of extraction: find a tinygrad and run child.py against it in a clean subprocess.

Standard library only. The child writes the bundle (docs/bundle-format.md) to ``out``; this module never raises for
a failing child, it reports what happened in an ``ExtractionResult``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tgstore import tempdirs

EXTRACT_DIR: Path = Path(__file__).resolve().parent
BUILTIN_CASES: Path = EXTRACT_DIR.parent / "cases" / "builtin.py"
# The child is the package `child/` beside this file, run as `python -m child` with this directory on its path (and
# not tgstore's site-packages): it imports only the standard library, its own modules and the target tinygrad.
CHILD_PACKAGE: Path = EXTRACT_DIR / "child"
STDERR_TAIL = 64 * 1024
# env vars handed down to the child; everything else (PYTHONPATH, DEBUG, device selectors, ...) is dropped
KEEP_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT",
            "TGSTORE_KEEP_GRAPH_CACHES",  # measuring what the per-case reset costs and changes (child/caches.py)
            "TGSTORE_CAPTURE_RELOWER")  # capture lowering every kernel again: tests/test_capture.py compares


class TinygradNotFound(Exception):
    """No tinygrad package where one was expected."""


def locate_installed_tinygrad() -> Path:
    """The directory holding the tinygrad package of this interpreter's environment, found without importing it."""
    try:
        spec = importlib.util.find_spec("tinygrad")
    except (ImportError, ValueError) as e:
        raise TinygradNotFound(
            f"looking up 'tinygrad' in {sys.executable}'s environment failed: {e}; install it "
            f"(pip install tinygrad) or pass the path of a tinygrad checkout"
        ) from e
    if spec is None or not spec.submodule_search_locations:
        raise TinygradNotFound(
            f"no 'tinygrad' package is importable from {sys.executable} (sys.path has none); install "
            f"it (pip install tinygrad) or pass the path of a tinygrad checkout or install dir"
        )
    for loc in spec.submodule_search_locations:
        pkg = Path(loc)
        if (pkg / "__init__.py").is_file():
            return pkg.resolve().parent
    raise TinygradNotFound(
        f"'tinygrad' resolves to {list(spec.submodule_search_locations)}, which has no __init__.py; "
        f"reinstall tinygrad or pass the path of a tinygrad checkout"
    )


def resolve_tinygrad_root(path: Path | None) -> Path:
    """The directory that holds ``tinygrad/``. ``None`` means the installed one; otherwise ``path`` may be a checkout
    root, a site-packages / ``pip install --target`` dir, or the ``tinygrad/`` package dir itself."""
    if path is None:
        return locate_installed_tinygrad()
    p = Path(path).expanduser()
    if not p.exists():
        raise TinygradNotFound(
            f"{p} does not exist; pass a tinygrad checkout root, a dir holding tinygrad/ "
            f"(site-packages or pip --target dir), or the tinygrad/ package dir"
        )
    p = p.resolve()
    if (p / "tinygrad" / "__init__.py").is_file():
        return p
    if p.name == "tinygrad" and (p / "__init__.py").is_file() and (p / "tensor.py").is_file():
        return p.parent
    raise TinygradNotFound(
        f"looked for {p / 'tinygrad' / '__init__.py'} and for {p / '__init__.py'} (if {p} is the "
        f"package itself) and found neither; pass a tinygrad checkout root, a dir holding tinygrad/, "
        f"or the tinygrad/ package dir (install a release with: "
        f"python -m pip install --no-deps --target DIR tinygrad==X.Y.Z)"
    )


@dataclass
class ExtractionResult:
    bundle_path: Path
    status: str  # "ok" | "failed" (nonzero exit or missing end record) | "timeout"
    returncode: int | None
    stderr: str  # child's stderr (tail, at most ~64 KiB)
    seconds: float


def _has_end_record(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
        return bool(lines) and json.loads(lines[-1]).get("kind") == "end"
    except (OSError, ValueError):
        return False


def _tail(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


CASE_RECORD_START = b'{"kind": "case", '
POLL_SECONDS = 0.25


def _wait(proc: subprocess.Popen, timeout: float, bundle: Path, on_case: Callable[[str], None] | None) -> int:
    """proc.wait(timeout), reporting the case records the child appends to the bundle while it runs."""
    if on_case is None:
        return proc.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    offset, pending = 0, b""
    while True:
        try:
            return proc.wait(timeout=max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
        with contextlib.suppress(OSError), open(bundle, "rb") as f:
            f.seek(offset)
            chunk = f.read(READ_CHUNK)  # bounded: a child writing fast (or a device) never fills our memory
            offset += len(chunk)
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[:LINE_HEAD]  # of a long line only its head is needed: the case's name comes first
            for line in lines:
                if line.startswith(CASE_RECORD_START) and (name := _case_name(line[:LINE_HEAD])) is not None:
                    on_case(name)


READ_CHUNK = 1 << 20
LINE_HEAD = 1 << 16
_CASE_NAME = re.compile(rb'^\{"kind": "case", "name": ("(?:[^"\\]|\\.)*")')


def _case_name(head: bytes) -> str | None:
    found = _CASE_NAME.match(head)
    try:
        return json.loads(found.group(1)) if found else None
    except ValueError:
        return None


# Capture mode: the command's own output, passed on as it comes (stream "stdout" or "stderr", one line of bytes).
Echo = Callable[[str, bytes], None]


def _pump(pipe, stream: str, echo: Echo, keep) -> None:
    """Copy a child's pipe line by line to `echo` and to the file `keep` (the stderr tail read afterwards)."""
    for line in iter(pipe.readline, b""):
        with contextlib.suppress(Exception):  # a closed terminal never stops the extraction
            echo(stream, line)
        keep.write(line)
    pipe.close()


def child_command(tinygrad_root: Path, out: Path, args: list[str], *, python: str | None = None,
                  git: dict | None = None) -> list[str]:
    """The command line of an extraction child writing `out` (run it with `child_env`)."""
    cmd = [python or sys.executable, "-u", "-m", "child", "--out", str(out), "--tinygrad-root", str(tinygrad_root),
           *args]
    if git is not None:
        cmd += ["--git-json", json.dumps(git)]
    return cmd


def run_extraction(
    tinygrad_root: Path,
    out: Path,
    args: list[str] | None = None,
    *,
    timeout: float = 900.0,
    python: str | None = None,
    git: dict | None = None,
    on_case: Callable[[str], None] | None = None,
    echo: Echo | None = None,
) -> ExtractionResult:
    """Run the child with `args` (its options besides --out, --tinygrad-root and --git-json; see
    ExtractionPlan.child_args) over the tinygrad in `tinygrad_root`, writing the bundle to `out`. Never raises for
    child failures.

    ``on_case(name)`` is called (in this thread) as each case's record lands in the bundle: progress for a caller.
    ``echo(stream, line)`` gets each line the child writes to its stdout and stderr as it comes (capture mode: the
    command's own output, shown to the user), from a reader thread; stderr is kept for the result all the same.
    """
    root = Path(tinygrad_root).resolve()
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempdirs.owned("extract") as tmp:
        cmd = child_command(root, out, list(args or []), python=python, git=git)
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
        env.update(
            {
                "PYTHONPATH": os.pathsep.join([str(EXTRACT_DIR), str(root)]),
                "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                "TGSTORE_PARENT_PID": str(os.getpid()),
                "HOME": env.get("HOME", str(tmp)),
            }
        )
        stderr_path, stdout_path = Path(tmp) / "stderr", Path(tmp) / "stdout"
        st = time.monotonic()
        with open(stderr_path, "wb") as ferr, open(stdout_path, "wb") as fout:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=tmp,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE if echo else fout,
                    stderr=subprocess.PIPE if echo else ferr,
                    start_new_session=(os.name == "posix"),
                )
            except OSError as e:
                return ExtractionResult(out, "failed", None, f"could not start {cmd[0]}: {e}", time.monotonic() - st)
            pumps = [threading.Thread(target=_pump, args=(pipe, name, echo, keep), daemon=True)
                     for pipe, name, keep in ((proc.stdout, "stdout", fout), (proc.stderr, "stderr", ferr))
                     if echo and pipe is not None]
            for pump in pumps:
                pump.start()
            try:
                rc: int | None = _wait(proc, timeout, out, on_case)
                status = "ok" if rc == 0 and _has_end_record(out) else "failed"
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
                rc, status = None, "timeout"
            finally:
                if proc.poll() is None:
                    _kill_group(proc)
                    proc.wait()
                for pump in pumps:
                    pump.join(timeout=2)  # what the child wrote last (a grandchild may hold the pipe open)
        seconds = time.monotonic() - st
        stderr = _tail(stderr_path, STDERR_TAIL)
        if status == "timeout":
            stderr += f"\n[tgstore] child killed after {timeout:g} s timeout\n"
        elif status == "failed" and rc == 0:
            stderr += "\n[tgstore] child exited 0 but the bundle has no end record\n"
    return ExtractionResult(out, status, rc, stderr, seconds)
