"""Lowering: a kernel AST and a renderer become a program (name, source, linearized UOps). Renderers are built
without hardware; compilers are replaced by a stub, so nothing is ever compiled or run."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pathlib
import platform
import sys
import types
from dataclasses import dataclass
from typing import Any

from .api import Tinygrad
from .text import clean

HOST_ARCH = {"amd64": "x86_64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine().lower())
# name -> (module under tinygrad.renderer, candidate classes in order, device, arch)
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
ALL_RENDERERS = list(RENDERER_SPECS)


def selected_renderers(value: str | None, default: list[str]) -> list[str]:
    """Renderer names as --renderers / --stages give them ("C,llvm", "all", "none"; None: `default`)."""
    if value is None:
        return list(default)
    if value.strip().lower() == "all":
        return list(ALL_RENDERERS)
    if value.strip().lower() == "none":
        return []
    return [r.strip().upper() for r in value.split(",") if r.strip()]

# How an AST becomes a program, newest first: (feature name, module, function).
LOWERINGS = [
    ("codegen_do_to_program", "tinygrad.codegen", "do_to_program"),  # 0.13+: a PROGRAM UOp (uncached entry)
    ("codegen_get_program", "tinygrad.codegen", "get_program"),  # 0.12: ProgramSpec
    ("realize_get_program", "tinygrad.engine.realize", "get_program"),  # 0.11: ProgramSpec
    ("kernel_to_program", "tinygrad.engine.realize", "get_kernel"),  # 0.10: get_kernel(ren, ast).to_program()
]

# Where repeated kernel names are numbered (r_4_16, r_4_16n1, ...) with a process-global counter, newest first.
# Gone from 0.14 (names are no longer unique there).
NAME_COUNTERS = [
    ("tinygrad.codegen.opt.postrange", "Scheduler"),  # 0.12 - 0.13
    ("tinygrad.codegen.opt.kernel", "Kernel"),  # 0.11
    ("tinygrad.codegen.kernel", "Kernel"),  # 0.10
]


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


@dataclass
class Program:
    name: str | None
    source: str | None
    uops: list[Any] | None


class NameCounter:
    """The process-global kernel-name counter of this era (or none). A stored program must be what a fresh process
    rendering that one case with that one renderer produces, so the counter is cleared before each case and put
    back to its after-scheduling state before each renderer lowers the case's kernels."""

    def __init__(self, tg: Tinygrad) -> None:
        self.counter = next((c for m, cls in NAME_COUNTERS
                             if isinstance(c := tg.attr(m, cls, "kernel_cnt"), dict)), None)

    def reset(self) -> None:
        if self.counter is not None:
            self.counter.clear()

    def snapshot(self) -> dict:
        return dict(self.counter) if self.counter is not None else {}

    def restore(self, state: dict) -> None:
        if self.counter is not None:
            self.counter.clear()
            self.counter.update(state)


class Lowering:
    """This era's AST -> program entry point, and the renderers built for it."""

    def __init__(self, tg: Tinygrad, root: pathlib.Path) -> None:
        self.tg, self.root = tg, root
        self.kind: str | None = None
        self.fn: Any = None
        for kind, module, attr in LOWERINGS:
            if callable(fn := tg.attr(module, attr)):
                self.kind, self.fn = kind, fn
                break
        self.renderers: dict[str, Any] = {}  # name -> renderer instance (only those that could be built)
        self.built_state: dict[str, dict[str, Any]] = {}  # name -> the renderer's attributes as built
        self.errors: dict[str, str] = {}  # name -> why it could not be built
        self.features: dict[str, Any] = {}

    def build_renderers(self, names: list[str]) -> None:
        for name in names:
            try:
                self.renderers[name], how = self._build(name)
                self.features[f"renderer:{name}"] = how
            except _CannotBuild as e:
                self.features[f"renderer:{name}"] = False
                self.errors[name] = str(e)
        self.built_state = {name: dict(vars(r)) for name, r in self.renderers.items() if hasattr(r, "__dict__")}

    def reset_renderers(self) -> None:
        """Each renderer's attributes as built. Rendering leaves the last kernel's UOps on the renderer (C-style's
        `self.r`, PTX's `self.uops`): they would stay in tinygrad's UOp cache into the next case, where a rewrite
        meeting one of them reuses what was cached on it (match counts, the DEBUG text's count of cached UOps)."""
        for name, state in self.built_state.items():
            attrs = vars(self.renderers[name])
            if attrs != state:
                attrs.clear()
                attrs.update(state)

    def _build(self, name: str) -> tuple[Any, str]:
        spec = RENDERER_SPECS.get(name)
        if spec is None:
            raise _CannotBuild(f"unknown renderer {name!r}; known: {','.join(ALL_RENDERERS)}")
        modname, classes, device, arch = spec
        try:
            mod = importlib.import_module(f"tinygrad.renderer.{modname}")
        except Exception as e:
            raise _CannotBuild(f"cannot import tinygrad.renderer.{modname}: {type(e).__name__}: {e}") from None
        cls = next((getattr(mod, c) for c in classes if isinstance(getattr(mod, c, None), type)), None)
        if cls is None:
            raise _CannotBuild(f"tinygrad.renderer.{modname} has none of {', '.join(classes)}")
        errors = []
        for stub in (False, True):
            try:
                with stubbed_compiler_modules(self.root) if stub else contextlib.nullcontext():
                    r = self._construct(cls, device, arch)
                if "compiler" in dir(r) or hasattr(type(r), "compiler"):
                    r.compiler = StubCompiler()
                return r, cls.__name__ + (" (stub compiler)" if stub else "")
            except Exception as e:
                errors.append(f"{type(e).__name__}: {clean(str(e))}")
        raise _CannotBuild(f"cannot build {cls.__name__}: {' / '.join(errors)}")

    def _construct(self, cls: type, device: str, arch: str) -> Any:
        target = getattr(self.tg.helpers, "Target", None)  # 0.13+: renderers take a Target
        if target is not None:
            return cls(target(device=device, arch=arch))
        params = inspect.signature(cls.__init__).parameters
        kwargs = {}
        if "arch" in params:
            kwargs["arch"] = arch.split(",")[0] if device == "CPU" else arch
        if "device" in params and device == "CUDA":
            kwargs["device"] = "CUDA"
        return cls(**kwargs)

    def lower(self, ast: Any, renderer: Any) -> Program:
        """The program of one kernel AST with one renderer."""
        if self.kind in ("codegen_do_to_program", "codegen_get_program", "realize_get_program"):
            ret = self.fn(ast, renderer)
        elif self.kind == "kernel_to_program":
            ret = self.fn(renderer, ast).to_program()
        else:
            raise RuntimeError("no lowering entry point in this tinygrad")
        program = program_of(self.tg, ret)
        if program is None:
            raise RuntimeError(f"{self.kind} returned a {type(ret).__name__}, not a program")
        return program


def program_of(tg: Tinygrad, ret: Any) -> Program | None:
    """The program a lowering entry point returned: a PROGRAM UOp (0.13+) or a ProgramSpec (0.10 - 0.12); None for
    anything else (0.10's get_kernel returns a Kernel, not yet a program)."""
    if getattr(getattr(ret, "op", None), "name", None) == "PROGRAM":
        by_op = {getattr(s.op, "name", ""): s for s in ret.src}
        sink = ret.src[0]
        name = (getattr(sink.arg, "function_name", None) or getattr(ret.arg, "function_name", None)
                or getattr(ret.arg, "name", None))
        return Program(clean(str(name)) if name is not None else None,
                       by_op["SOURCE"].arg if "SOURCE" in by_op else None,
                       list(by_op["LINEAR"].src) if "LINEAR" in by_op else None)
    if isinstance(getattr(ret, "src", None), str):
        name = getattr(ret, "function_name", None) or tg.helpers.to_function_name(ret.name)
        return Program(clean(str(name)), ret.src, list(ret.uops) if getattr(ret, "uops", None) is not None else None)
    return None


class _CannotBuild(Exception):
    pass
