"""Timing: every kernel compiled with the device's real compiler and run on deterministic buffers by tinygrad's own
timer (its `_time_program`, which calls the compiled runner with wait=True), each kernel in a forked grandchild so
that a kernel that crashes or hangs is recorded and the run goes on.

Eras, detected by feature (newest first):
  TIMERS          how tinygrad times one program: `_time_program(prg UOp, var_vals, bufs)` (0.13+) or
                  `_time_program(ProgramSpec, lib, var_vals, bufs)` (0.10 - 0.12).
  BUFFER_MAKERS   the buffers a kernel AST reads and writes: args_from_ast (0.14+), bufs_from_ast (0.12 - 0.13),
                  bufs_from_lin over a Kernel (0.10 - 0.11).
  ESTIMATES       ops and memory bytes: ProgramSpec.estimates / PROGRAM sink's info.estimates (0.11+) or
                  op_estimate / mem_estimate (0.10).
No timer: the run records `timing` as missing. The machine record and the calibration loop are in machine.py (no
tinygrad), the buffers' sizes and contents in buffers.py; nothing here runs a kernel in the extraction child itself
(its state stays as a fresh process's).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import faulthandler
import inspect
import json
import os
import select
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

from .api import Tinygrad
from .buffers import fill, global_buffers
from .lower import Lowering
from .machine import timing_lock, timing_threads
from .text import clean, error_text

SEARCH_MODULES = ["tinygrad.codegen.opt.search", "tinygrad.engine.search"]
BUFFER_MAKERS = [
    ("args_from_ast", "tinygrad.codegen.opt.postrange", "args_from_ast"),  # 0.14+: (buffers, var_vals)
    ("bufs_from_ast", "tinygrad.codegen.opt.postrange", "bufs_from_ast"),  # 0.12 - 0.13
    ("bufs_from_lin", "tinygrad.codegen.opt.search", "bufs_from_lin"),  # 0.11 (over a Kernel)
    ("bufs_from_lin", "tinygrad.engine.search", "bufs_from_lin"),  # 0.10
]
KERNEL_CLASSES = [("tinygrad.codegen.opt.kernel", "Kernel"), ("tinygrad.codegen.kernel", "Kernel")]
# Compiled programs kept per process: after a fork they belong to devices whose threads did not come along
RUNTIME_CACHES = [("tinygrad.engine.realize", "runtime_cache"), ("tinygrad.engine.realize", "method_cache")]
SYM_INFER = [("tinygrad.uop.ops", "sym_infer"), ("tinygrad.ops", "sym_infer")]
# The CPU renderer's thread-count setting, newest first (renamed mid-2026): kernels get a THREAD opt up to it
THREAD_SETTINGS = [("tinygrad.helpers", "NUM_CPU_THREADS"), ("tinygrad.helpers", "CPU_COUNT")]
WARMUP = 2
# --time-runs not given: as many runs as fit this budget per kernel, within these bounds
RUN_BUDGET_S, MIN_RUNS, MAX_RUNS = 0.15, 5, 50
# Each case's kernels are timed in this many fresh processes and each kernel keeps its best process's timing: a
# kernel's speed can depend on the process (where its buffers land, which virtual CPU it gets; on a 2-vCPU VM a
# softmax kernel ran at 213 or 288 µs per process, steady within one), so one process is one draw of that.
PROCESSES = 3
STDERR_KEEP = 8000


# ---------------------------------------------------------------------------------------------------------------------
# tinygrad's timer, buffers and estimates in each era
# ---------------------------------------------------------------------------------------------------------------------

class KernelTimer:
    """Times kernel ASTs on the backend tinygrad was imported for. `kind` is None when this era cannot time."""

    def __init__(self, tg: Tinygrad, lowering: Lowering, backend: str, runs: int | None, timeout: float,
                 threads: int | None = None) -> None:
        self.tg, self.lowering, self.backend = tg, lowering, backend
        self.runs, self.timeout = runs, timeout
        self.threads = timing_threads() if threads is None else threads
        self.kind: str | None = None
        self.reason: str | None = None
        self.on_locked: Callable[[], None] | None = None  # the grandchild tells its parent when it holds the lock
        self.time_program: Any = None
        self.search_module: str | None = None
        for name in SEARCH_MODULES:
            fn = tg.attr(name, "_time_program")
            if callable(fn):
                params = list(inspect.signature(fn).parameters)
                self.kind = "time_program_spec" if params[1:2] == ["lib"] else "time_program_uop"
                self.time_program, self.search_module = fn, name
                break
        if self.kind is None:
            self.reason = "no _time_program in " + " or ".join(SEARCH_MODULES)
        self.buffers = next(((kind, fn) for kind, m, a in BUFFER_MAKERS if callable(fn := tg.attr(m, a))), None)
        if self.kind is not None and self.buffers is None:
            self.kind, self.reason = None, "no args_from_ast, bufs_from_ast or bufs_from_lin"
        self.sym_infer = next((fn for m, a in SYM_INFER if callable(fn := tg.attr(m, a))), None)

    @property
    def features(self) -> dict[str, Any]:
        return {"timer": self.kind, "timing_buffers": self.buffers[0] if self.buffers else None}

    # --- in the grandchild ---------------------------------------------------------------------------------------
    def fresh_devices(self) -> None:
        """Forget the devices (and programs) the extraction child opened: a device's worker threads (the CPU device
        runs some since mid-2026) do not survive the fork, and using it would wait on them forever."""
        device = self.tg.attr("tinygrad.device", "Device")
        if device is None:
            return
        for name in dir(type(device)):
            with contextlib.suppress(Exception):
                attr = inspect.getattr_static(type(device), name)
                if callable(getattr(attr, "cache_clear", None)):
                    attr.cache_clear()
        opened = getattr(device, "_opened_devices", None)
        if isinstance(opened, set):
            opened.clear()
        for module, name in RUNTIME_CACHES:
            if isinstance(cache := self.tg.attr(module, name), dict):
                cache.clear()

    def cap_threads(self, renderer: Any) -> None:
        """Kernels are timed with `self.threads` CPU threads: this era's thread setting (a ContextVar) and, where the
        renderer read it once at import (a class-level global_max, before Aug 2026), the renderer's limit. Eras
        without CPU threads have neither; then nothing changes."""
        setting = next((v for m, a in THREAD_SETTINGS if hasattr(v := self.tg.attr(m, a), "value")), None)
        if setting is None:
            return
        setting.value = min(int(setting.value), self.threads)
        limit = inspect.getattr_static(renderer, "global_max", None)
        if getattr(renderer, "has_threads", False) and isinstance(limit, tuple) and limit:
            renderer.global_max = (min(int(limit[0]), self.threads), *limit[1:])

    def device(self) -> Any:
        from tinygrad import Device

        return Device[Device.DEFAULT]

    def program(self, ast: Any, renderer: Any) -> Any:
        """The program tinygrad's own lowering makes of `ast` for the device's renderer."""
        if self.lowering.kind == "kernel_to_program":
            return self.lowering.fn(renderer, ast).to_program()
        if self.lowering.kind == "codegen_do_to_program":
            to_program = self.tg.attr("tinygrad.codegen", "to_program") or self.lowering.fn
            return to_program(ast, renderer)
        return self.lowering.fn(ast, renderer)

    def make_buffers(self, ast: Any, dev_name: str, renderer: Any) -> tuple[list[Any], dict]:
        try:
            return self.era_buffers(ast, dev_name, renderer)
        except Exception:
            # some eras' helper wants an AST the scheduler does not hand out (0.11's Kernel verifies a later form):
            # the sizes the AST's own global buffer definitions declare
            bufs = global_buffers(ast, dev_name)
            if bufs is None:
                raise
            return bufs, self.var_vals(ast)

    def era_buffers(self, ast: Any, dev_name: str, renderer: Any) -> tuple[list[Any], dict]:
        kind, fn = self.buffers
        if kind == "args_from_ast":
            bufs, var_vals = fn(ast, dev_name)
            return list(bufs), dict(var_vals)
        if kind == "bufs_from_ast":
            bufs = fn(ast, dev_name)
        else:
            kernel_cls = next(c for m, a in KERNEL_CLASSES if isinstance(c := self.tg.attr(m, a), type))
            bufs = fn(kernel_cls(ast, opts=renderer), allocate=False)
        return list(bufs), self.var_vals(ast)

    def var_vals(self, ast: Any) -> dict:
        """Each variable at the middle of its range (as tinygrad's BEAM does), keyed as this era's runner wants."""
        variables = ast.variables() if callable(getattr(ast, "variables", None)) else []
        params = inspect.signature(self.time_program).parameters
        by_name = "str" in str(params["var_vals"].annotation)
        return {(v.expr if by_name else v): (int(v.vmin) + int(v.vmax)) // 2 for v in variables}

    def estimates(self, prg: Any, var_vals: dict) -> tuple[int | None, int | None]:
        holders = [getattr(prg, "estimates", None)]
        if getattr(prg, "src", None) and not hasattr(prg, "estimates"):  # a PROGRAM UOp: the sink's info
            holders.append(getattr(getattr(prg.src[0], "arg", None), "estimates", None))
            holders.append(getattr(getattr(prg, "arg", None), "estimates", None))
        for est in holders:
            if est is not None:
                return self._number(getattr(est, "ops", None), var_vals), self._number(getattr(est, "mem", None),
                                                                                      var_vals)
        return self._number(getattr(prg, "op_estimate", None), var_vals), \
            self._number(getattr(prg, "mem_estimate", None), var_vals)

    def _number(self, value: Any, var_vals: dict) -> int | None:
        if value is None:
            return None
        if not isinstance(value, (int, float)) and self.sym_infer is not None:
            with contextlib.suppress(Exception):
                value = self.sym_infer(value, var_vals)
        try:
            return int(value)
        except (TypeError, ValueError):
            return None

    def measure(self, ast: Any) -> dict[str, Any]:
        """Compile, fill buffers, warm up, then time: runs in the grandchild."""
        dev = self.device()
        dev_name = getattr(dev, "device", None) or getattr(dev, "dname", None) or self.backend
        renderer = dev.renderer
        self.cap_threads(renderer)
        prg = self.program(ast, renderer)
        bufs, var_vals = self.make_buffers(ast, dev_name, renderer)
        for buf in bufs:
            if buf is not None:
                fill(buf)
        name = getattr(prg, "function_name", None) or getattr(getattr(prg, "arg", None), "function_name", None) \
            or getattr(getattr(prg, "arg", None), "name", None) or getattr(prg, "name", None)
        if self.kind == "time_program_spec":
            lib = dev.compiler.compile(prg.src)
            def timed(n: int) -> list[float]:
                return self.time_program(prg, lib, var_vals, bufs, max_global_size=None, cnt=n)
        else:
            def timed(n: int) -> list[float]:
                return self.time_program(prg, var_vals, bufs, max_global_size=None, cnt=n)
        ops, mem = self.estimates(prg, var_vals)
        with timing_lock():
            if self.on_locked is not None:
                self.on_locked()
            warm = timed(WARMUP)
            if any(t == float("inf") for t in warm):
                raise RuntimeError("tinygrad's runner refused the program (its _time_program returned inf)")
            budget = RUN_BUDGET_S / PROCESSES  # the case's time stays about the same however many processes
            runs = self.runs or max(MIN_RUNS, min(MAX_RUNS, int(budget / max(min(warm), 1e-7))))
            samples = timed(runs)
        ns = sorted(int(round(t * 1e9)) for t in samples)
        median = int(statistics.median(ns))
        return {"status": "ok", "program": clean(str(name)) if name is not None else None,
                "device": str(dev_name), "renderer": type(renderer).__name__, "warmup": WARMUP, "samples": ns,
                "ns_min": ns[0], "ns_median": median, "ns_max": ns[-1], "spread": spread(ns), "ops": ops,
                "mem": mem, "error": None}

    # --- in the extraction child ---------------------------------------------------------------------------------
    def time_items(self, items: list[dict[str, Any]], asts: list[Any],
                   fresh_names: Callable[[], None] = lambda: None) -> None:
        """Add `timing` to each kernel item (root SINK). `fresh_names` puts the kernel-name counter back to its
        after-scheduling state in the grandchild, so the program's name does not depend on the renderers run."""
        kernels = [(item, ast) for item, ast in zip(items, asts, strict=True) if item["root_op"] == "SINK"]
        todo = kernels
        while todo:  # one grandchild for the case's kernels; after a crash, a new one for the kernels left
            done = self.isolated([ast for _, ast in todo], fresh_names)
            for (item, _), result in zip(todo, done, strict=False):
                item["timing"] = result
            todo = todo[len(done):]
        for _ in range(PROCESSES - 1):  # the kernels that ran, again in fresh processes: each keeps its best
            timed = [(item, ast) for item, ast in kernels if item["timing"]["status"] == "ok"]
            if not timed:
                break
            again = self.isolated([ast for _, ast in timed], fresh_names)  # a crash now: the first result stands
            for (item, _), result in zip(timed, again, strict=False):
                best = item["timing"]
                best["process_ns_min"] = [*best.get("process_ns_min", [best["ns_min"]]), result.get("ns_min")]
                if result["status"] == "ok" and result["ns_min"] < best["ns_min"]:
                    item["timing"] = {**result, "process_ns_min": best["process_ns_min"]}

    def isolated(self, asts: list[Any], fresh_names: Callable[[], None]) -> list[dict[str, Any]]:
        """measure() of each AST in order, in one forked grandchild (the device is opened once per case): the
        results of the kernels it finished, then, if it crashed or hung, that kernel's failure with its stderr.
        A segfault, an abort or a hang never ends the extraction."""
        sys.stdout.flush()
        sys.stderr.flush()
        read_fd, write_fd = os.pipe()
        err = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:  # the grandchild: never returns
            self._grandchild(asts, fresh_names, read_fd, write_fd, err.fileno())
        os.close(write_fd)
        try:
            results, current, error_from, status = self._collect(pid, read_fd, err)
        finally:
            os.close(read_fd)
        if current is not None:  # the kernel it was on when it died or was killed
            err.seek(error_from)
            stderr = clean(err.read()[-STDERR_KEEP:].decode("utf-8", "replace"))
            if status == "timeout":
                results.append(failure("timeout", f"killed after {self.timeout:g}s: the kernel did not finish",
                                       stderr))
            elif os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
                results.append(failure("crashed", f"killed by signal {sig} ({name})", stderr))
            else:
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
                results.append(failure("crashed", f"exited {code}", stderr))
        elif len(results) < len(asts):  # it ended between kernels without saying why
            results.append(failure("crashed", "the timing process ended without a result", ""))
        err.close()
        return results

    def _grandchild(self, asts: list[Any], fresh_names: Callable[[], None], read_fd: int, write_fd: int,
                    err_fd: int) -> None:
        code = 0
        try:
            os.close(read_fd)
            _die_with_parent()
            os.dup2(err_fd, 1)
            os.dup2(err_fd, 2)
            faulthandler.enable(all_threads=True)  # a crash leaves the Python stack in stderr

            def say(kind: bytes, payload: bytes = b"") -> None:
                data = kind + b" " + payload + b"\n"
                while data:
                    data = data[os.write(write_fd, data):]

            def locked() -> None:
                say(b"L")
                # a hang leaves the stacks in stderr just before the parent's deadline
                faulthandler.dump_traceback_later(max(1.0, self.timeout - 2), exit=False)

            self.on_locked = locked
            fresh_names()
            self.fresh_devices()
            for i, ast in enumerate(asts):
                say(b"S", str(i).encode())
                faulthandler.dump_traceback_later(max(1.0, self.timeout - 2), exit=False)
                try:
                    result = self.measure(ast)
                except Exception:
                    traceback.print_exc()
                    result = {"status": "error", "error": error_text(limit=8)}
                faulthandler.cancel_dump_traceback_later()
                say(b"R", json.dumps(result).encode())
        except BaseException:
            code = 70
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _collect(self, pid: int, read_fd: int, err: Any) -> tuple[list[dict[str, Any]], int | None, int, Any]:
        """Read the grandchild's messages until it exits or a kernel overruns the timeout (then kill it): the
        results, the kernel it was on (None if between kernels), where that kernel's stderr starts, and the wait
        status (or 'timeout'). Each kernel's clock starts when it starts and again when it holds the timing lock
        (waiting for another process's timing does not count)."""
        results: list[dict[str, Any]] = []
        current: int | None = None
        error_from = 0
        deadline = time.monotonic() + self.timeout
        pending = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:  # on a kernel, or stuck before the next one starts: that one is the culprit
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return results, len(results) if current is None else current, error_from, "timeout"
            ready, _, _ = select.select([read_fd], [], [], max(0.0, min(left, 0.5)))
            chunk = os.read(read_fd, 1 << 20) if ready else b""
            if chunk:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    kind, _, payload = line.partition(b" ")
                    if kind == b"S":
                        current, error_from = int(payload), os.fstat(err.fileno()).st_size
                        deadline = time.monotonic() + self.timeout
                    elif kind == b"L":
                        deadline = time.monotonic() + self.timeout
                    elif kind == b"R":
                        results.append(self._result(json.loads(payload), err, error_from))
                        current = None
                continue
            if ready or current is None:  # EOF, or waiting for the next kernel to start
                finished, status = _waitpid_nohang(pid)
                if finished:
                    return results, current, error_from, status
                if ready:
                    time.sleep(0.01)

    @staticmethod
    def _result(result: dict[str, Any], err: Any, error_from: int) -> dict[str, Any]:
        if result.get("status") == "ok":
            return result
        err.seek(error_from)  # a Python error: its traceback is the error, the rest of what it printed stderr
        stderr = clean(err.read()[-STDERR_KEEP:].decode("utf-8", "replace"))
        error = result.get("error") or ""
        return failure("error", error, stderr.replace(error, "").strip())


def _waitpid_nohang(pid: int) -> tuple[bool, int]:
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
            return done == pid, status
        except InterruptedError:
            continue
        except OSError as e:
            if e.errno == errno.ECHILD:
                return True, 0
            raise


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def failure(status: str, error: str, stderr: str) -> dict[str, Any]:
    return {"status": status, "error": clean(error), "stderr": stderr or None, "samples": None, "ns_min": None,
            "ns_median": None, "ns_max": None, "spread": None, "ops": None, "mem": None}


def spread(ns: list[int]) -> float:
    """The noise of a kernel's best time: how far the first quartile of its runs is above the best one, relative
    to it (0 for a single run). Comparisons use the best time; on a shared machine the slow tail says more about
    the other processes than about the kernel, so it is left out."""
    if len(ns) < 2 or not ns[0]:
        return 0.0
    q1 = statistics.quantiles(ns, n=4, method="inclusive")[0]
    return round((q1 - ns[0]) / ns[0], 4)


