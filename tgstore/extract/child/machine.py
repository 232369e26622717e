"""Where a kernel is timed, without tinygrad: the machine record (what a time depends on besides the code, and its
fingerprint), the thread settings kernels are compiled and timed with, the calibration loop, and the machine-wide
timing lock. The parent reads it too (store/timings.py names the machine a child will report).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

# env settings that change what a kernel is or how it runs: part of the machine record
SETTINGS = ("DEV", "CPU", "CLANG", "LLVM", "CPU_LLVM", "CPU_COUNT", "NUM_CPU_THREADS", "THREADS", "CUDA", "NV",
            "PTX", "NOOPT", "BEAM", "OMP_NUM_THREADS")
CODEGEN_THREADS = 8  # the extraction child's fixed NUM_CPU_THREADS (main.tinygrad_env): the stored kernels' threads
DEFAULT_LOCK = os.path.join(tempfile.gettempdir(), "tgstore-timing.lock")


def codegen_thread_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The thread settings the extraction child fixes, so stored CPU kernels do not depend on the machine's cores:
    the setting is CPU_COUNT (default: the usable cores) from Sep 2025 and NUM_CPU_THREADS from 28 Jul 2026."""
    threads = (os.environ if environ is None else environ).get("NUM_CPU_THREADS", str(CODEGEN_THREADS))
    return {"NUM_CPU_THREADS": threads, "CPU_COUNT": threads}


def _first_line(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    with contextlib.suppress(Exception):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout.strip()
        return out.splitlines()[0] if out else None
    return None


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# The compiler each backend's kernels go through: how to ask its version.
COMPILERS: dict[str, tuple[str, list[str]]] = {
    "CPU": ("clang", ["clang", "--version"]), "CLANG": ("clang", ["clang", "--version"]),
    "LLVM": ("llvm", ["llvm-config", "--version"]),
    "CUDA": ("nvrtc", ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
    "NV": ("nvrtc", ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
}

# env vars that only select the device (their spelling changed between eras: CLANG=1, DEV=CPU): not in the identity
DEVICE_SELECTORS = ("DEV", "CPU", "CLANG", "CUDA", "NV")


def usable_cores() -> int:
    """The cores this process may run on (its affinity; os.cpu_count() where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def timing_threads(environ: dict[str, str] | None = None) -> int:
    """The CPU threads a timed kernel may use: the child's thread setting, capped at the usable cores. More threads
    than cores makes a threaded kernel wait for a core; fewer wastes cores (tinygrad's own default is the cores)."""
    environ = os.environ if environ is None else environ
    try:
        setting = int(environ.get("NUM_CPU_THREADS", CODEGEN_THREADS))
    except ValueError:
        setting = CODEGEN_THREADS
    return max(1, min(setting, usable_cores()))


def machine(backend: str, environ: dict[str, str] | None = None, threads: int | None = None) -> dict[str, Any]:
    """What a time depends on besides the code: where it ran. `fingerprint` identifies the machine; times are only
    compared between runs with the same fingerprint. `environ`: the extraction child's environment (default: this
    process's), so the parent can name the machine a child will report. `threads`: the CPU threads kernels are timed
    with (default: timing_threads()); part of the identity, so times taken with other thread counts never mix."""
    environ = os.environ if environ is None else environ
    backend = {"CLANG": "CPU"}.get(backend.upper(), backend.upper())
    compiler, version_argv = COMPILERS.get(backend, (backend.lower(), []))
    gpu = _first_line(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]) \
        if backend in ("CUDA", "NV") else None
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = timing_threads(environ) if threads is None else threads
    record = {
        "hostname": platform.node(), "cpu_model": cpu_model(), "cores": os.cpu_count(), "usable_cores": affinity,
        "arch": platform.machine(), "system": platform.system(), "device": backend.upper(), "gpu": gpu,
        "compiler": compiler, "compiler_version": _first_line(version_argv) if version_argv else None,
        "settings": {k: environ[k] for k in SETTINGS if k in environ},
        "timing_threads": threads if backend in ("CPU", "LLVM") else None,
    }
    identity = {k: record[k] for k in ("hostname", "cpu_model", "cores", "usable_cores", "arch", "device", "gpu",
                                       "compiler", "compiler_version", "timing_threads")}
    identity["settings"] = {k: v for k, v in record["settings"].items() if k not in DEVICE_SELECTORS}
    record["fingerprint"] = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return record


def reference_loop() -> int:
    """A fixed amount of interpreter work (the same in every era): its time tracks this machine's speed and load."""
    acc = 0
    for i in range(200_000):
        acc = (acc + i * i) % 1_000_003
    return acc


def calibrate(samples: int = 5) -> int:
    """The reference loop's best time in ns, under the timing lock (so it is measured like a kernel)."""
    with timing_lock():
        times = []
        for _ in range(samples):
            start = time.perf_counter_ns()
            reference_loop()
            times.append(time.perf_counter_ns() - start)
    return min(times)


@contextlib.contextmanager
def timing_lock(path: str | None = None) -> Iterator[None]:
    """One timing at a time on this machine, whatever else runs (parallel sweeps, other users of tgstore): an
    exclusive flock, released by the kernel even when the holder crashes."""
    path = path or os.environ.get("TGSTORE_TIMING_LOCK") or DEFAULT_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
