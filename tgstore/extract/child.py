#!/usr/bin/env python3
"""tgstore extraction child: runs a case suite through one tinygrad and writes a bundle (docs/bundle-format.md).

Self-contained: standard library + the target tinygrad only. Run it with PYTHONPATH set to the directory that holds
the target ``tinygrad/`` package::

    PYTHONPATH=/path/holding/tinygrad python child.py --out bundle.jsonl --cases builtin.py

It never compiles or runs kernels: it schedules the cases' tensors and *renders* every kernel with each requested
renderer (compilers are replaced by a stub that returns empty binaries).

``features`` keys written in the header (True = found in this tinygrad):

* ``ops_module``: ``tinygrad.uop.ops`` (0.11+) or ``tinygrad.ops`` (older); the value is the module name.
* ``pyrender``: a ``pyrender(ast)`` function (``tinygrad.uop.render`` 0.13+, ``tinygrad.uop.ops`` 0.12).
* ``tensor_schedule``: ``Tensor.schedule()`` returning schedule items with ``.ast`` (<= 0.12).
* ``schedule_linear``: ``Tensor.schedule_linear()`` returning a LINEAR of CALLs (0.13+).
* ``lowering``: how an AST becomes a program: ``kernel_to_program`` (0.10: ``engine.realize.get_kernel`` +
  ``Kernel.to_program``), ``realize_get_program`` (0.11), ``codegen_get_program`` (0.12) or ``codegen_do_to_program``
  (0.13+); ``None`` if none was found.
* ``match_stats``: tinygrad's ``match_stats`` dict is filled (``TRACK_MATCH_STATS`` swapped in the tracking matcher).
* ``upat_location``: ``UPat.location`` exists (file and line of each rule).
* ``target``: renderers are built from a ``tinygrad.helpers.Target`` (0.13+) instead of positional args.
* ``device_env``: the env vars set to pick the backend device (``DEV=CPU`` or ``CLANG=1``/``CPU=1``).
* ``renderer:<NAME>``: how each renderer was built: ``"<Class>"``, ``"<Class> (stub compiler)"`` when its
  constructor needed a real compiler library and was built with a stubbed compiler module, or ``False``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

BUNDLE_VERSION = 1
# renderers tried when --renderers is not given: all of them. Each one lowers every kernel again (optimize, linearize,
# render), yet the 14-case builtin suite takes 4-17 s per release on 2 cores (0.10.0 fastest, 0.14.0 slowest), so
# there is no need for a smaller default. A renderer a release lacks (WGSL before 0.10.3, X86 before 0.13) is recorded
# as `missing` and its programs carry an error.
ALL_RENDERERS = ["C", "LLVM", "PTX", "CUDA", "METAL", "OPENCL", "WGSL", "HIP", "X86"]
DEFAULT_RENDERERS = list(ALL_RENDERERS)

# name -> (renderer module under tinygrad.renderer, candidate class names in order, device, arch)
HOST_ARCH = {"amd64": "x86_64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine().lower())
RENDERER_SPECS: dict[str, tuple[str, list[str], str, str]] = {
    "C": ("cstyle", ["ClangRenderer"], "CPU", HOST_ARCH + ",native"),
    "LLVM": ("llvmir", ["CPULLVMRenderer", "LLVMRenderer"], "CPU", HOST_ARCH + ",native"),
    "PTX": ("ptx", ["PTXRenderer"], "CUDA", "sm_80"),
    "CUDA": ("cstyle", ["CUDARenderer"], "CUDA", "sm_80"),
    "METAL": ("cstyle", ["MetalRenderer"], "METAL", "Apple9"),
    "OPENCL": ("cstyle", ["OpenCLRenderer"], "CL", ""),
    "WGSL": ("wgsl", ["WGSLRenderer"], "WEBGPU", ""),
    "HIP": ("cstyle", ["HIPRenderer", "AMDHIPRenderer", "AMDRenderer"], "AMD", "gfx1100"),
    "X86": ("isa.x86", ["X86Renderer"], "CPU", HOST_ARCH + ",native"),
}

ADDR_RE = re.compile(r" at 0x[0-9a-fA-F]+")
ANSI_RE = re.compile("\x1b\\[(K|.*?m)")
# the same color codes inside a repr (kernel names in KernelInfo args are colored in some releases)
ESCAPED_ANSI_RE = re.compile(r"\\x1b\[[0-9;]*[mK]")
# tinygrad's DEBUG lines name their caller; that is this file, wherever tgstore happens to be installed
CHILD_PREFIX = str(pathlib.Path(__file__).resolve().parent) + os.sep


_ITEM = r"[\w.]+(?:\([^(){}]*\))?"
SET_RE = re.compile(r"\{((?:" + _ITEM + r", )+" + _ITEM + r")\}")


# Set by main(): where the target tinygrad lives. Paths under it are written relative, so the same commit
# extracted from two temporary worktrees yields identical text (and dedups).
ROOT_PREFIX = ""
# Wall-clock figures in DEBUG output ("scheduled 1 kernels in 6.30 ms") differ on every run; masked so that unchanged
# output stays byte-identical across runs and commits.
TIMING_RE = re.compile(r"[ \t]*\b\d+\.\d+[ \t]*(ms|us|µs|s)\b")


def clean(s: str) -> str:
    """Text stored in the bundle must not depend on the process: drop memory addresses, ANSI colors and the absolute
    tinygrad path, and sort the items of printed sets of plain names (sets of identity-hashed objects such as DTypes
    iterate in address order)."""
    s = ESCAPED_ANSI_RE.sub("", ANSI_RE.sub("", ADDR_RE.sub(" at 0x?", s))).replace(CHILD_PREFIX, "")
    if ROOT_PREFIX:
        s = s.replace(ROOT_PREFIX, "")
    return SET_RE.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", s)


@functools.cache
def _realpath(p: str) -> str:
    return os.path.realpath(p)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class BundleWriter:
    def __init__(self, path: pathlib.Path):
        self.f = open(path, "w", encoding="utf-8")

    def write(self, rec: dict) -> None:
        self.f.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


# ---------------------------------------------------------------- header helpers (no tinygrad import needed)


def tree_hash(root: pathlib.Path) -> str:
    pkg = root / "tinygrad"
    lines = []
    for p in pkg.rglob("*.py"):
        if "__pycache__" in p.parts:
            continue
        lines.append(f"{p.relative_to(root).as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def find_version(root: pathlib.Path) -> str | None:
    for meta in sorted(root.glob("tinygrad-*.dist-info/METADATA")):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    for fn, rx in (
        ("setup.py", r"""version\s*=\s*['"]([^'"]+)['"]"""),
        ("pyproject.toml", r"""^version\s*=\s*['"]([^'"]+)['"]"""),
    ):
        if (p := root / fn).is_file() and (m := re.search(rx, p.read_text(errors="replace"), re.M)):
            return m.group(1)
    return None


def git_info(root: pathlib.Path) -> dict | None:
    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *a], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        top = git("rev-parse", "--show-toplevel")
        if pathlib.Path(top).resolve() != root.resolve():
            return None  # root is inside some other repository
        sha, date, subject = git("log", "-1", "--format=%H%x00%cI%x00%s").split("\x00", 2)
        dirty = bool(git("status", "--porcelain", "--", "tinygrad"))
        return {"sha": sha, "date": date, "subject": subject, "dirty": dirty}
    except Exception:
        return None


def describe_tinygrad(root: pathlib.Path, git: dict | None = None) -> dict[str, Any]:
    """The header's ``tinygrad`` block for the dir holding ``tinygrad/``, computed without importing it.
    ``git`` overrides what ``git log`` in ``root`` says (a caller that exported a commit knows it better)."""
    root = pathlib.Path(root).resolve()
    return {
        "path": str(root),
        "version": find_version(root),
        "tree_hash": tree_hash(root),
        "git": git if git is not None else git_info(root),
    }


def suite_identity(case_files: list[pathlib.Path], suite_name: str | None = None) -> dict[str, Any]:
    """The header's ``suite`` block: name (given, else "builtin" or the files' stems), sha256 over the case files'
    bytes in order, and their absolute paths."""
    files = [pathlib.Path(p).resolve() for p in case_files]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files if p.is_file())).hexdigest()
    name = suite_name or ("builtin" if [p.name for p in files] == ["builtin.py"] else "+".join(p.stem for p in files))
    return {"name": name, "hash": digest, "files": [str(p) for p in files]}


def device_env(root: pathlib.Path, backend: str) -> dict[str, str]:
    """Env vars that select `backend` in this tinygrad: DEV=<name> where supported (0.11+), <NAME>=1 before."""
    rt = root / "tinygrad" / "runtime"
    names = sorted(p.stem[4:].upper() for p in rt.glob("ops_*.py"))
    dev = backend.upper()
    if dev == "CPU" and "CPU" not in names and "CLANG" in names:
        dev = "CLANG"
    if dev == "CLANG" and "CLANG" not in names and "CPU" in names:
        dev = "CPU"
    try:
        src = (root / "tinygrad" / "device.py").read_text(errors="replace")
    except OSError:
        src = ""
    if 'getenv("DEV"' in src or "DEV.device" in src or "DEV.target" in src:
        return {"DEV": dev}
    return {dev: "1"}


# ---------------------------------------------------------------- the stub compiler


class StubCompiler:
    """Stands in for every compiler: rendering never needs one, and none may run here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.cachekey = None

    def compile(self, src: str) -> bytes:
        return b""

    def compile_cached(self, src: str) -> bytes:
        return b""

    def disassemble(self, lib: bytes) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return None


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return StubCompiler


@contextlib.contextmanager
def stubbed_compiler_modules(root: pathlib.Path):
    """Temporarily replace tinygrad's compiler modules (and ops_metal) with stubs, for renderer constructors that
    import and instantiate a compiler that needs a GPU toolchain library (nvrtc, comgr, libLLVM, objc)."""
    names = [f"tinygrad.runtime.support.{p.stem}" for p in (root / "tinygrad/runtime/support").glob("compiler_*.py")]
    names += ["tinygrad.runtime.ops_metal"]
    saved = {n: sys.modules.get(n) for n in names}
    try:
        for n in names:
            sys.modules[n] = _StubModule(n)
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


# ---------------------------------------------------------------- the extractor


class Extractor:
    def __init__(self, args: argparse.Namespace, root: pathlib.Path, out: BundleWriter):
        self.args, self.root, self.out = args, root, out
        self.features: dict[str, Any] = {}
        self.run_missing: list[dict] = []
        self.pattern_keys: dict[int, str] = {}  # id(UPat) -> key
        self.pattern_refs: list[Any] = []  # keep UPats alive so ids stay unique
        self.renderers: dict[str, Any] = {}  # name -> renderer instance (only those that could be built)
        self.renderer_names: list[str] = []  # as requested
        self.renderer_errors: dict[str, str] = {}  # name -> why it could not be built

    # ---- feature detection
    def detect(self) -> None:
        import tinygrad
        from tinygrad import Tensor

        f = self.features
        try:
            self.ops = importlib.import_module("tinygrad.uop.ops")
            f["ops_module"] = "tinygrad.uop.ops"
        except ImportError:
            self.ops = importlib.import_module("tinygrad.ops")
            f["ops_module"] = "tinygrad.ops"
        self.UOp, self.PatternMatcher = self.ops.UOp, self.ops.PatternMatcher
        self.helpers = importlib.import_module("tinygrad.helpers")
        self.Tensor = Tensor
        # pyrender
        self.pyrender: Callable | None = None
        for modname in ("tinygrad.uop.render", "tinygrad.uop.ops"):
            with contextlib.suppress(ImportError):
                if callable(fn := getattr(importlib.import_module(modname), "pyrender", None)):
                    self.pyrender = fn
                    break
        f["pyrender"] = self.pyrender is not None
        if self.pyrender is None:
            self.add_missing("pyrender", "no tinygrad.uop.render.pyrender or tinygrad.uop.ops.pyrender")
        f["schedule_linear"] = hasattr(Tensor, "schedule_linear")
        f["tensor_schedule"] = hasattr(Tensor, "schedule") and not f["schedule_linear"]
        if not f["schedule_linear"] and not hasattr(Tensor, "schedule"):
            self.add_missing("schedule", "neither Tensor.schedule_linear nor Tensor.schedule")
        # lowering
        self.lower_kind: str | None = None
        with contextlib.suppress(Exception):
            cg = importlib.import_module("tinygrad.codegen")
            if callable(getattr(cg, "do_to_program", None)):
                self.lower_kind, self.lower_fn = "codegen_do_to_program", cg.do_to_program
            elif callable(getattr(cg, "get_program", None)):
                self.lower_kind, self.lower_fn = "codegen_get_program", cg.get_program
        if self.lower_kind is None:
            with contextlib.suppress(Exception):
                rz = importlib.import_module("tinygrad.engine.realize")
                if callable(getattr(rz, "get_program", None)):
                    self.lower_kind, self.lower_fn = "realize_get_program", rz.get_program
                elif callable(getattr(rz, "get_kernel", None)):
                    self.lower_kind, self.lower_fn = "kernel_to_program", rz.get_kernel
        f["lowering"] = self.lower_kind
        if self.lower_kind is None:
            self.add_missing("programs", "no known AST -> program lowering entry point")
        # match stats
        self.match_stats = getattr(self.ops, "match_stats", None)
        tracked = getattr(self.ops, "TrackedPatternMatcher", None)
        f["match_stats"] = isinstance(self.match_stats, dict) and tracked is not None and self.PatternMatcher is tracked
        if not f["match_stats"]:
            self.add_missing(
                "match_counts", "tinygrad has no match_stats / TrackedPatternMatcher with TRACK_MATCH_STATS=1"
            )
        f["upat_location"] = hasattr(self.ops.UPat(self.ops.Ops.SINK), "location")
        self.Target = getattr(self.helpers, "Target", None)
        f["target"] = self.Target is not None
        f["device_env"] = ",".join(f"{k}={v}" for k, v in device_env(self.root, self.args.backend).items())
        f["tinygrad_file"] = pathlib.Path(tinygrad.__file__).resolve().relative_to(self.root).as_posix()

    def add_missing(self, feature: str, reason: str) -> None:
        if feature.startswith("renderer:"):
            self.renderer_errors[feature[len("renderer:") :]] = reason
        self.run_missing.append({"kind": "missing", "feature": feature, "reason": reason, "case": None})

    # ---- renderers
    def build_renderers(self, names: list[str]) -> None:
        self.renderer_names = list(names)
        for name in names:
            spec = RENDERER_SPECS.get(name)
            if spec is None:
                self.features[f"renderer:{name}"] = False
                self.add_missing(f"renderer:{name}", f"unknown renderer {name!r}; known: {','.join(ALL_RENDERERS)}")
                continue
            modname, classes, device, arch = spec
            try:
                mod = importlib.import_module(f"tinygrad.renderer.{modname}")
            except Exception as e:
                self.features[f"renderer:{name}"] = False
                self.add_missing(
                    f"renderer:{name}", f"cannot import tinygrad.renderer.{modname}: {type(e).__name__}: {e}"
                )
                continue
            cls = next((getattr(mod, c) for c in classes if isinstance(getattr(mod, c, None), type)), None)
            if cls is None:
                self.features[f"renderer:{name}"] = False
                self.add_missing(f"renderer:{name}", f"tinygrad.renderer.{modname} has none of {', '.join(classes)}")
                continue
            errors = []
            for stub in (False, True):
                try:
                    with stubbed_compiler_modules(self.root) if stub else contextlib.nullcontext():
                        r = self.construct(cls, device, arch)
                    if "compiler" in dir(r) or hasattr(type(r), "compiler"):
                        r.compiler = StubCompiler()
                    self.renderers[name] = r
                    self.features[f"renderer:{name}"] = cls.__name__ + (" (stub compiler)" if stub else "")
                    break
                except Exception as e:
                    errors.append(f"{type(e).__name__}: {clean(str(e))}")
            else:
                self.features[f"renderer:{name}"] = False
                self.add_missing(f"renderer:{name}", f"cannot build {cls.__name__}: {' / '.join(errors)}")

    def construct(self, cls: type, device: str, arch: str) -> Any:
        if self.Target is not None:
            return cls(self.Target(device=device, arch=arch))
        params = inspect.signature(cls.__init__).parameters
        kwargs = {}
        if "arch" in params:
            kwargs["arch"] = arch.split(",")[0] if device == "CPU" else arch
        if "device" in params and device == "CUDA":
            kwargs["device"] = "CUDA"
        return cls(**kwargs)

    # ---- patterns
    def scan_matchers(self) -> dict[int, tuple[Any, Any, str, str]]:
        """id(UPat) -> (UPat, fxn, matcher name, module file) for each module-level and class-level PatternMatcher."""
        found: dict[int, list[tuple[Any, Any, str, str]]] = {}
        PM = next(
            (c for c in type.mro(self.ops.PatternMatcher) if c.__name__ == "PatternMatcher"), self.ops.PatternMatcher
        )
        for modname in sorted(m for m in list(sys.modules) if m == "tinygrad" or m.startswith("tinygrad.")):
            mod = sys.modules.get(modname)
            if mod is None or isinstance(mod, _StubModule):
                continue
            try:
                items = list(vars(mod).items())
            except Exception:
                continue
            mfile = getattr(mod, "__file__", None) or ""
            holders: list[tuple[str, Any]] = []
            for attr, val in items:
                if isinstance(val, PM):
                    holders.append((attr, val))
                elif isinstance(val, type) and getattr(val, "__module__", None) == modname:
                    for cattr, cval in list(vars(val).items()):
                        if isinstance(cval, PM):
                            holders.append((f"{val.__name__}.{cattr}", cval))
            for attr, pm in holders:
                for pat in getattr(pm, "patterns", []):
                    try:
                        upat, fxn = pat[0], pat[1]
                    except Exception:
                        continue
                    found.setdefault(id(upat), []).append((upat, fxn, attr, mfile))
        ret = {}
        for k, cands in found.items():
            upat = cands[0][0]
            loc_file = str(getattr(upat, "location", ("",))[0])
            own = [c for c in cands if c[3] and _realpath(c[3]) == _realpath(loc_file)] if loc_file else []
            ret[k] = sorted(own or cands, key=lambda c: (c[3], c[2]))[0]
        return ret

    def pattern_record(self, upat: Any, fxn: Any, matcher: str | None) -> dict:
        ops = getattr(upat, "op", None)
        ops_s = ",".join(sorted(getattr(o, "name", str(o)) for o in ops)) if ops else ""
        loc = getattr(upat, "location", None)
        file, line, source = None, None, None
        if loc:
            try:
                p = pathlib.Path(loc[0]).resolve()
                file = (
                    p.relative_to(self.root.resolve()).as_posix()
                    if p.is_relative_to(self.root.resolve())
                    else p.as_posix()
                )
                line = int(loc[1])
                lines = p.read_text(errors="replace").splitlines()
                source = lines[line - 1].strip() if 0 < line <= len(lines) else None
            except Exception:
                pass
        try:
            up = clean(repr(upat))
        except Exception as e:
            up = f"<unprintable UPat: {type(e).__name__}>"
        if up.startswith("<"):  # no __repr__ (0.13+): use tinygrad's printable form, the rule's source line
            with contextlib.suppress(Exception):
                up = clean(upat.printable()) if callable(getattr(upat, "printable", None)) else up
            if up.startswith("<") and source:
                up = source
        return {
            "kind": "pattern",
            "key": "",
            "matcher": matcher,
            "ops": ops_s,
            "upat": up,
            "function": getattr(fxn, "__name__", type(fxn).__name__) if fxn is not None else None,
            "file": file,
            "line": line,
            "source": source,
        }

    def emit_new_patterns(self, extra_upats: list[Any]) -> None:
        """Emit pattern records for every rule not emitted yet, in a deterministic order."""
        known = self.scan_matchers()
        new = [(upat, fxn, name) for k, (upat, fxn, name, _) in known.items() if k not in self.pattern_keys]
        seen = {id(u) for u, _, _ in new}
        for upat in extra_upats:  # counted rules held by matchers built at runtime: no module-level name
            if id(upat) not in self.pattern_keys and id(upat) not in seen:
                new.append((upat, None, None))
                seen.add(id(upat))
        recs = [(self.pattern_record(u, f, n), u) for u, f, n in new]
        recs.sort(
            key=lambda r: (
                r[0]["file"] or "",
                r[0]["line"] or 0,
                r[0]["matcher"] or "",
                r[0]["upat"],
                r[0]["function"] or "",
            )
        )
        for rec, upat in recs:
            key = f"p{len(self.pattern_keys)}"
            self.pattern_keys[id(upat)] = key
            self.pattern_refs.append(upat)
            rec["key"] = key
            self.out.write(rec)

    def snapshot_stats(self) -> dict[int, tuple[Any, int, int]]:
        if not self.features.get("match_stats"):
            return {}
        return {id(p): (p, int(v[0]), int(v[1])) for p, v in list(self.match_stats.items())}

    # ---- uop encoding
    @staticmethod
    def toposort(root: Any) -> list[Any]:
        order: list[Any] = []
        seen: set[int] = set()
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            u, expanded = stack.pop()
            if expanded:
                order.append(u)
                continue
            if id(u) in seen:
                continue
            seen.add(id(u))
            stack.append((u, True))
            for s in reversed(u.src):
                if id(s) not in seen:
                    stack.append((s, False))
        return order

    @staticmethod
    def encode_uops(uops: list[Any]) -> list[dict]:
        pos = {id(u): i for i, u in enumerate(uops)}
        ret = []
        for u in uops:
            try:
                arg = clean(repr(u.arg))
            except Exception as e:
                arg = f"<unprintable {type(e).__name__}>"
            ret.append(
                {
                    "op": getattr(u.op, "name", str(u.op)),
                    "dtype": clean(str(u.dtype)),
                    "arg": arg,
                    "src": [pos.get(id(s)) for s in u.src],
                }
            )
        return ret

    # ---- scheduling & lowering
    def schedule(self, tensors: list[Any]) -> list[Any]:
        """The ASTs of the schedule items, in order."""
        if self.features.get("schedule_linear"):
            linear = tensors[0].schedule_linear(*tensors[1:])
            return [c.src[0] if getattr(c.op, "name", "") == "CALL" and len(c.src) else c for c in linear.src]
        return [si.ast for si in tensors[0].schedule(*tensors[1:])]

    def lower(self, ast: Any, renderer: Any) -> tuple[str | None, str | None, list[Any] | None]:
        """(function name, source, linearized uops) of one kernel AST with one renderer."""
        if self.lower_kind == "codegen_do_to_program":
            prg = self.lower_fn(ast, renderer)
            by_op = {getattr(s.op, "name", ""): s for s in prg.src}
            sink = prg.src[0]
            name = (
                getattr(sink.arg, "function_name", None)
                or getattr(prg.arg, "function_name", None)
                or getattr(prg.arg, "name", None)
            )
            src = by_op["SOURCE"].arg if "SOURCE" in by_op else None
            uops = list(by_op["LINEAR"].src) if "LINEAR" in by_op else None
            return (clean(str(name)) if name is not None else None), src, uops
        if self.lower_kind in ("codegen_get_program", "realize_get_program"):
            p = self.lower_fn(ast, renderer)
        elif self.lower_kind == "kernel_to_program":
            p = self.lower_fn(renderer, ast).to_program()
        else:
            raise RuntimeError("no lowering entry point in this tinygrad")
        name = getattr(p, "function_name", None) or self.helpers.to_function_name(p.name)
        return clean(str(name)), p.src, (list(p.uops) if getattr(p, "uops", None) is not None else None)

    # ---- cases
    def run_case(self, name: str, fn: Callable, description: str | None) -> dict:
        rec: dict[str, Any] = {
            "kind": "case",
            "name": name,
            "description": description,
            "status": "ok",
            "error": None,
            "seconds": 0.0,
            "debug": "",
            "schedule": [],
            "matches": [],
            "missing": [],
        }
        buf = io.StringIO()
        before = self.snapshot_stats()
        st = time.perf_counter()
        try:
            with (
                contextlib.redirect_stdout(buf),
                contextlib.redirect_stderr(buf),
                self.helpers.Context(DEBUG=self.args.debug),
            ):
                out = fn()
                tensors = list(out) if isinstance(out, (list, tuple)) else [out]
                if not tensors or not all(isinstance(t, self.Tensor) for t in tensors):
                    raise TypeError(f"case must return a Tensor or a list/tuple of Tensors, got {type(out).__name__}")
                asts = self.schedule(tensors)
                for i, ast in enumerate(asts):
                    item: dict[str, Any] = {
                        "position": i,
                        "root_op": getattr(ast.op, "name", str(ast.op)),
                        "ast_text": None,
                        "pyrender": None,
                        "nodes": None,
                        "programs": [],
                    }
                    rec["schedule"].append(item)
                    item["ast_text"] = clean(str(ast))
                    item["nodes"] = self.encode_uops(self.toposort(ast))
                    if self.pyrender is not None:
                        try:
                            rendered = self.pyrender(ast)
                            if isinstance(rendered, (list, tuple)):  # some 0.11-era commits return the lines
                                rendered = "\n".join(map(str, rendered))
                            item["pyrender"] = clean(rendered)
                        except Exception as e:
                            rec["missing"].append(
                                {"feature": "pyrender", "reason": f"item {i}: {type(e).__name__}: {clean(str(e))}"}
                            )
                    if item["root_op"] != "SINK":
                        continue
                    for rname in self.renderer_names:
                        prog: dict[str, Any] = {
                            "renderer": rname,
                            "name": None,
                            "source": None,
                            "error": None,
                            "uops": None,
                        }
                        item["programs"].append(prog)
                        if (r := self.renderers.get(rname)) is None:
                            prog["error"] = f"renderer unavailable: {self.renderer_errors.get(rname, 'not built')}"
                            continue
                        try:
                            pname, src, uops = self.lower(ast, r)
                            prog["name"], prog["source"] = pname, src
                            if uops is not None:
                                prog["uops"] = self.encode_uops(uops)
                            else:
                                prog["error"] = "this tinygrad returned no linearized uops"
                        except Exception:
                            prog["error"] = clean(traceback.format_exc(limit=-8))
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            rec["status"], rec["error"] = "error", clean(traceback.format_exc())
        rec["seconds"] = round(time.perf_counter() - st, 4)
        rec["debug"] = TIMING_RE.sub(r" x.xx \1", clean(buf.getvalue()))
        # match counts
        if self.features.get("match_stats"):
            after = self.snapshot_stats()
            deltas = []
            for k, (p, m, t) in after.items():
                m0, t0 = before[k][1:] if k in before else (0, 0)
                if m - m0 > 0:
                    deltas.append((p, m - m0, t - t0))
            self.emit_new_patterns([p for p, _, _ in deltas])
            rec["matches"] = sorted(
                ({"pattern": self.pattern_keys[id(p)], "matches": m, "tries": t} for p, m, t in deltas),
                key=lambda x: int(x["pattern"][1:]),
            )
        else:
            self.emit_new_patterns([])
            rec["matches"] = []
            rec["missing"].append({"feature": "match_counts", "reason": "no match_stats in this tinygrad"})
        return rec


def load_cases(path: pathlib.Path, index: int) -> list[tuple[str, Callable, str | None]]:
    spec = importlib.util.spec_from_file_location(f"tgstore_cases_{index}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load case file {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    ret = []
    for attr, val in vars(mod).items():
        if attr.startswith("case_") and callable(val) and getattr(val, "__module__", None) == mod.__name__:
            ret.append((attr[len("case_") :], val, inspect.getdoc(val)))
    return ret


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="tgstore extraction child: write a bundle for the tinygrad on PYTHONPATH")
    ap.add_argument("--out", required=True, help="bundle path (JSON lines)")
    ap.add_argument(
        "--cases",
        action="append",
        default=[],
        help="case file (repeatable); default: builtin.py next to tgstore/cases if found",
    )
    ap.add_argument("--backend", default="CPU")
    ap.add_argument(
        "--renderers",
        default=None,
        help=f"comma-separated; default {','.join(DEFAULT_RENDERERS)}; "
        f"known: {','.join(ALL_RENDERERS)}; 'all' for all known",
    )
    ap.add_argument("--debug", type=int, default=4, help="tinygrad DEBUG level while a case runs")
    ap.add_argument("--suite-name", default=None)
    ap.add_argument(
        "--git-json",
        default=None,
        help='header git info as JSON {"sha","date","subject"}, instead of asking git in the tinygrad root',
    )
    ap.add_argument("--tinygrad-root", default=None, help="dir holding tinygrad/ (default: first PYTHONPATH entry)")
    return ap.parse_args(argv)


def die_with_parent() -> None:
    """Ask Linux to kill this process when the process that started it dies, so that a killed `tgstore ingest`
    (its children run in their own sessions, out of reach of the terminal's signals) leaves no extraction behind."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except Exception:
        return
    expected = os.environ.get("TGSTORE_PARENT_PID")
    if expected and os.getppid() != int(expected):  # the parent died before prctl took effect
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        die_with_parent()
    args = parse_args(argv)
    if argv is None and os.environ.get("PYTHONHASHSEED") != "0":
        # set iteration order (e.g. dtype sets printed in UPat reprs, some rewrite orders) follows the str hash seed:
        # pin it so the same tinygrad gives the same bytes; this needs a fresh interpreter
        os.environ["PYTHONHASHSEED"] = "0"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.argv])
    started = now()
    if args.tinygrad_root:
        root = pathlib.Path(args.tinygrad_root).resolve()
    elif os.environ.get("PYTHONPATH"):
        root = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    else:
        spec = importlib.util.find_spec("tinygrad")
        if spec is None or not spec.origin:
            print("child: no tinygrad found: set PYTHONPATH to the dir holding tinygrad/", file=sys.stderr)
            return 2
        root = pathlib.Path(spec.origin).resolve().parent.parent
    global ROOT_PREFIX
    ROOT_PREFIX = str(root) + os.sep
    if not (root / "tinygrad" / "__init__.py").is_file():
        print(f"child: {root} does not hold a tinygrad/ package", file=sys.stderr)
        return 2
    if str(root) not in [str(pathlib.Path(p).resolve()) for p in sys.path if p]:
        sys.path.insert(0, str(root))

    case_files = [pathlib.Path(c).resolve() for c in args.cases]
    if not case_files:
        default = pathlib.Path(__file__).resolve().parent.parent / "cases" / "builtin.py"
        if not default.is_file():
            print("child: no --cases given and no builtin.py next to child.py", file=sys.stderr)
            return 2
        case_files = [default]
    renderer_names = (
        ALL_RENDERERS
        if args.renderers == "all"
        else [r.strip().upper() for r in args.renderers.split(",") if r.strip()]
        if args.renderers
        else DEFAULT_RENDERERS
    )

    # environment for tinygrad, set before it is imported
    for d in [p.stem[4:].upper() for p in (root / "tinygrad" / "runtime").glob("ops_*.py")] + ["DEV", "DEBUG", "VIZ"]:
        os.environ.pop(d, None)
    env = device_env(root, args.backend)
    env.update(
        {
            "TRACK_MATCH_STATS": "1",
            "PRINT_MATCH_STATS": "0",
            "CACHELEVEL": "0",
            "DISABLE_COMPILER_CACHE": "1",
            "NUM_CPU_THREADS": os.environ.get("NUM_CPU_THREADS", "8"),
            "CAPTURE_PROCESS_REPLAY": "0",
            "RUN_PROCESS_REPLAY": "0",
        }
    )
    os.environ.update(env)

    out = BundleWriter(pathlib.Path(args.out))
    git_override = None
    if args.git_json:
        try:
            git_override = json.loads(args.git_json)
        except ValueError:
            print(f"child: --git-json is not JSON: {args.git_json!r}", file=sys.stderr)
            return 2
    header: dict[str, Any] = {
        "kind": "header",
        "bundle_version": BUNDLE_VERSION,
        "producer": "tgstore-child",
        "started_at": started,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tinygrad": describe_tinygrad(root, git_override),
        "backend": args.backend,
        "renderers": renderer_names,
        "debug_level": args.debug,
        "suite": suite_identity(case_files, args.suite_name),
        "features": {},
        "env": env,
    }

    # import tinygrad and probe it
    try:
        import tinygrad

        tg_file = pathlib.Path(tinygrad.__file__).resolve()
        if not tg_file.is_relative_to(root):
            raise ImportError(f"imported tinygrad from {tg_file}, not from {root}: check PYTHONPATH")
        ex = Extractor(args, root, out)
        ex.detect()
        ex.build_renderers(renderer_names)
    except Exception:
        out.write(header)
        out.write({"kind": "missing", "feature": "tinygrad", "reason": clean(traceback.format_exc()), "case": None})
        out.close()
        print(traceback.format_exc(), file=sys.stderr)
        return 3
    header["features"] = ex.features
    header["renderers"] = [r for r in renderer_names]
    out.write(header)
    for m in ex.run_missing:
        out.write(m)

    # load the cases
    cases: list[tuple[str, Callable, str | None]] = []
    for i, cf in enumerate(case_files):
        try:
            for name, fn, doc in load_cases(cf, i):
                while name in {c[0] for c in cases}:
                    name = f"{name}@{cf.stem}"
                cases.append((name, fn, doc))
        except Exception:
            out.write(
                {"kind": "missing", "feature": f"cases:{cf}", "reason": clean(traceback.format_exc()), "case": None}
            )

    ex.emit_new_patterns([])
    failed = 0
    for name, fn, doc in cases:
        rec = ex.run_case(name, fn, doc)
        failed += rec["status"] != "ok"
        out.write(rec)
    out.write({"kind": "end", "finished_at": now(), "cases": len(cases), "failed_cases": failed})
    out.close()
    return 0


if __name__ == "__main__":
    code = main()
    # The bundle is complete and closed: leave without running tinygrad's atexit hooks or waiting for threads it
    # started (some commits hang there), which would turn a finished extraction into a timeout.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
