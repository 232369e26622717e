"""The reference kernel: a fixed C loop, built with the machine's C compiler and timed in every timing session beside
the kernels, so that a persistent machine state (another host, a frequency state, a kernel update) is measured and
divided out, not blamed on a tinygrad commit. No tinygrad commit changes it; standard library only (ctypes).

The loop is a dependent multiply-add chain over a small array (in cache): it measures the core's speed, as the CPU
kernels' inner loops do, not memory. It is compiled once per session with `cc -O2 -shared -fPIC` into a temporary
library and timed like a kernel: under the machine's timing lock, WARMUP runs, then the best of RUNS. No compiler,
or a build that fails: None (the session has no reference figure).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import time

from .machine import timing_lock

SOURCE = """
#include <stddef.h>
double tgstore_reference(size_t rounds) {
  double a[64];
  for (size_t i = 0; i < 64; i++) a[i] = (double)i * 0.001;
  double acc = 0.0;
  for (size_t r = 0; r < rounds; r++)
    for (size_t i = 0; i < 64; i++) acc = acc * 0.999999 + a[i];
  return acc;
}
"""
ROUNDS = 20_000  # ~1.3 M multiply-adds: about a millisecond
WARMUP, RUNS = 2, 15
COMPILERS = ("clang", "cc", "gcc")


def reference_ns() -> int | None:
    """The reference loop's best time in ns, or None where no C compiler builds it."""
    compiler = next((c for c in COMPILERS if shutil.which(c)), None)
    if compiler is None:
        return None
    with tempfile.TemporaryDirectory(prefix="tgstore-reference-") as tmp:
        source, library = os.path.join(tmp, "reference.c"), os.path.join(tmp, "reference.so")
        with open(source, "w") as f:
            f.write(SOURCE)
        built = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, source], capture_output=True,
                               timeout=60, check=False)
        if built.returncode != 0:
            return None
        function = ctypes.CDLL(library).tgstore_reference
        function.restype, function.argtypes = ctypes.c_double, [ctypes.c_size_t]
        with timing_lock():
            for _ in range(WARMUP):
                function(ROUNDS)
            best = None
            for _ in range(RUNS):
                start = time.perf_counter_ns()
                function(ROUNDS)
                elapsed = time.perf_counter_ns() - start
                best = elapsed if best is None else min(best, elapsed)
    return best
