"""Capture mode: run a Python command (a script, `python -m ...`, pytest) in this process with the target tinygrad
and record every kernel tinygrad lowers while it runs, at the moment it lowers it: the AST, where it came from
(pytest's test id and the call site outside tinygrad), the context that lowering ran in (the ContextVars that
change codegen, e.g. NOOPT, BEAM, USE_TC, set by the test), the renderer tinygrad used and the program it produced.
Each distinct (AST, context, renderer) is stored once, under the first place it was lowered; it is then rendered
like a scheduled case's kernels, each renderer under that same context, and the renderer tinygrad used keeps the
program tinygrad produced.

What the capture costs while the command runs is kept to what process_replay's costs (it pickles the inputs and the
result of each lowering, and does the rest later): per lowering a context dict, a set lookup, a frame walk and the
program tinygrad returned; tinygrad's pattern matcher runs untracked (capture mode counts no matches, and the
child's counting rewrite cost ~25% of the command); everything else (rendering for the other renderers, encoding)
happens after the command ends. The renderer tinygrad used is not lowered again where its program can be taken as
tinygrad produced it (case.reusable_program).

Era table: the hooked entry point (LOWERING_HOOKS) is the one tinygrad's own process_replay captures where it
exists (0.13+ `do_to_program`, which the CPU runtime's own programs and PROGRAM-rooted ASTs also go through);
codegen ContextVars are tinygrad's `to_program_config` where it exists (the values its program cache is keyed
by), else CODEGEN_VARS. BEAM's candidate kernels (lowered inside a lowering) are not recorded."""

from __future__ import annotations

import contextlib
import os
import pathlib
import runpy
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .api import Tinygrad
from .lower import Program, program_of
from .text import error_text

# Where tinygrad lowers a kernel AST for a device, newest first: (module, function, position of the AST argument).
LOWERING_HOOKS = [
    ("tinygrad.codegen", "do_to_program", 0),  # 0.13+: do_to_program(ast, renderer) behind to_program's cache
    ("tinygrad.codegen", "get_program", 0),  # 0.12: get_program(ast, renderer, opts)
    ("tinygrad.engine.realize", "get_program", 0),  # 0.11
    ("tinygrad.engine.realize", "get_kernel", 1),  # 0.10: get_kernel(renderer, ast)
]
# ContextVars that change generated code, where tinygrad does not list them (before `to_program_config`).
CODEGEN_VARS = ("NOOPT", "BEAM", "USE_TC", "TC", "TC_OPT", "TC_SELECT", "IMAGE", "NOLOCALS", "DEVECTORIZE", "AMX",
                "DISABLE_FAST_IDIV", "TRANSCENDENTAL", "EMULATED_DTYPES", "ALLOW_TF32", "DEFAULT_FLOAT", "FUSE_ARANGE",
                "NUM_CPU_THREADS", "OPTLOCAL", "SPLIT_REDUCEOP", "FLOAT16", "ALLOW_HALF8", "GROUP", "UPCAST")
PROGRAM_CONFIG = ("tinygrad.codegen", "to_program_config")
# Runtime modules imported before hooking, so that their own bindings of the entry point are hooked too.
RUNTIME_MODULES = ("tinygrad.runtime.ops_cpu",)
WHOLE_COMMAND = "command"  # the case name of kernels lowered outside any pytest test


class CommandError(ValueError):
    """A command capture cannot run in-process."""


@dataclass
class Lowered:
    """One kernel as tinygrad lowered it."""

    ast: Any
    call_site: str | None
    context: dict[str, Any]  # codegen ContextVars that differed from the command's start, by name
    renderer: str | None  # tgstore's name of the renderer tinygrad used (C, LLVM, ...), or its class name
    program: Program | None = None  # the program tinygrad produced then (its linearized UOps too)

    @property
    def name(self) -> str | None:
        return self.program.name if self.program else None

    @property
    def source(self) -> str | None:
        return self.program.source if self.program else None


@dataclass
class Origin:
    name: str
    kernels: list[Lowered] = field(default_factory=list)


class KernelCapture:
    """Wraps this era's lowering entry point in every tinygrad module that refers to it."""

    def __init__(self, tg: Tinygrad, root: pathlib.Path) -> None:
        self.tg = tg
        self.skip_dirs = [str((root / "tinygrad").resolve()), str(pathlib.Path(__file__).resolve().parent),
                          sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
        self.hook = next(((m, f, i) for m, f, i in LOWERING_HOOKS if callable(tg.attr(m, f))), None)
        self.vars = codegen_vars(tg)
        self.baseline = {k: v.value for k, v in self.vars.items()}
        self.renderer_names = renderer_names()
        self.origins: dict[str, Origin] = {}
        self.seen: set[Any] = set()
        self.patched: list[tuple[Any, str, Any]] = []
        self.depth = 0

    @property
    def available(self) -> bool:
        return self.hook is not None

    def install(self) -> None:
        assert self.hook is not None
        module, name, index = self.hook
        original = self.tg.attr(module, name)
        for runtime in RUNTIME_MODULES:
            self.tg.module(runtime)

        def lowering(*args: Any, **kwargs: Any) -> Any:
            if self.depth:  # inside another lowering (BEAM's candidates)
                return original(*args, **kwargs)
            context = self.context()
            self.depth += 1
            try:
                ret = original(*args, **kwargs)
            finally:
                self.depth -= 1
            ast = args[index] if len(args) > index else kwargs.get("ast")
            renderer = [a for a in (*args, *kwargs.values()) if type(a).__name__.endswith("Renderer")][:1]
            self.record(ast, context, renderer[0] if renderer else None, ret)
            return ret

        for _, mod in self.tg.loaded_modules():
            for attr, value in list(vars(mod).items()):
                if value is original:
                    self.patched.append((mod, attr, value))
                    setattr(mod, attr, lowering)

    def uninstall(self) -> None:
        for mod, attr, value in reversed(self.patched):
            setattr(mod, attr, value)
        self.patched.clear()

    def context(self) -> dict[str, Any]:
        return {k: v.value for k, v in self.vars.items() if v.value != self.baseline[k]}

    def record(self, ast: Any, context: dict[str, Any], renderer: Any, ret: Any) -> None:
        if ast is None or getattr(getattr(ast, "op", None), "name", None) not in ("SINK", "PROGRAM"):
            return
        rname = None if renderer is None else self.renderer_names.get(type(renderer).__name__,
                                                                       type(renderer).__name__)
        key = (getattr(ast, "key", ast), tuple(sorted((k, repr(v)) for k, v in context.items())), rname)
        if key in self.seen:
            return
        self.seen.add(key)
        test = os.environ.get("PYTEST_CURRENT_TEST")
        name = test.rsplit(" (", 1)[0] if test else WHOLE_COMMAND
        origin = self.origins.setdefault(name, Origin(name))
        origin.kernels.append(Lowered(ast, self.call_site(), context, rname, produced(self.tg, ret)))

    def call_site(self) -> str | None:
        """file:line in function of the innermost frame outside tinygrad, this package and Python's libraries
        (walking the frames, as process_replay does: formatting a traceback would read every file's source)."""
        frame = sys._getframe(3)  # below call_site, record and the hook
        while frame is not None:
            filename = frame.f_code.co_filename
            path = os.path.abspath(filename)
            if not filename.startswith("<") and not any(path.startswith(d) for d in self.skip_dirs):
                cwd = os.getcwd() + os.sep  # paths below the working directory (a test id's root) are shown relative
                shown = path[len(cwd):] if path.startswith(cwd) else path
                return f"{shown}:{frame.f_lineno} in {frame.f_code.co_name}"
            frame = frame.f_back
        return None


def run_command(argv: list[str]) -> tuple[int, str | None]:
    """Run `argv` in this process as Python would; (exit status, traceback of an uncaught exception or None)."""
    kind, target, args = parse_command(argv)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [target if kind == "script" else argv[0], *args]
    if kind == "script":
        sys.path.insert(0, str(pathlib.Path(target).resolve().parent))
    elif kind in ("module", "code"):
        sys.path.insert(0, os.getcwd())
    try:
        if kind == "script":
            runpy.run_path(target, run_name="__main__")
        elif kind == "module":
            sys.argv[0] = target
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
        return 0, None
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0, None
        return (code, None) if isinstance(code, int) else (1, str(code))
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return 1, error_text()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def parse_command(argv: list[str]) -> tuple[str, str, list[str]]:
    """("script" | "module" | "code", target, arguments) of a Python command line."""
    usage = ("capture runs Python commands in-process: python SCRIPT [ARGS], python -m MODULE [ARGS], "
             "python -c CODE, pytest [ARGS] or SCRIPT.py [ARGS]")
    if not argv:
        raise CommandError(f"no command given; {usage}")
    program, rest = argv[0], argv[1:]
    base = os.path.basename(program)
    if base in ("pytest", "py.test"):
        return "module", "pytest", rest
    if base.startswith("python"):
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:]  # interpreter flags (-u, -O, -X ...) do not apply in-process
        if len(rest) >= 2 and rest[0] == "-m":
            return "module", rest[1], rest[2:]
        if len(rest) >= 2 and rest[0] == "-c":
            return "code", rest[1], rest[2:]
        if rest:
            return "script", rest[0], rest[1:]
        raise CommandError(f"{program} without a script; {usage}")
    if program.endswith(".py"):
        return "script", program, rest
    raise CommandError(f"cannot run {program!r} in-process; {usage}")


def capture(tg: Tinygrad, root: pathlib.Path, argv: list[str]) -> tuple[KernelCapture, dict[str, Any]]:
    """Run the command with the lowering hooked; the hooks and the command record ({kind: command, ...})."""
    hooks = KernelCapture(tg, root)
    record: dict[str, Any] = {"kind": "command", "argv": argv, "cwd": os.getcwd(), "exit_status": None,
                              "error": None, "seconds": 0.0}
    if not hooks.available:
        record["exit_status"], record["error"] = None, "no known lowering entry point in this tinygrad to hook"
        return hooks, record
    start = time.perf_counter()
    hooks.install()
    try:
        with untracked_matching(tg):
            record["exit_status"], record["error"] = run_command(argv)
    except CommandError as e:
        record["error"] = str(e)
    finally:
        hooks.uninstall()
        sys.stdout.flush()
        sys.stderr.flush()
    record["seconds"] = round(time.perf_counter() - start, 4)
    return hooks, record


def codegen_vars(tg: Tinygrad) -> dict[str, Any]:
    """The ContextVars that change generated code, by name: tinygrad's own list where it keeps one."""
    cache = getattr(getattr(tg.helpers, "ContextVar", None), "_cache", None) or {}
    config = tg.attr(*PROGRAM_CONFIG)
    names = [getattr(v, "key", None) for v in config] if isinstance(config, tuple) else []
    names += [n for n in CODEGEN_VARS if n not in names]
    names.append("BEAM")
    return {n: cache[n] for n in dict.fromkeys(names) if n and n in cache}


def renderer_names() -> dict[str, str]:
    """Renderer class name -> tgstore's renderer name (the first spec naming the class)."""
    from .lower import RENDERER_SPECS

    out: dict[str, str] = {}
    for name, (_module, classes, _device, _arch) in RENDERER_SPECS.items():
        for cls in classes:
            out.setdefault(cls, name)
    return out


def produced(tg: Tinygrad, ret: Any) -> Program | None:
    """The program the hooked lowering returned (a PROGRAM UOp, 0.13+, or a ProgramSpec), or None (0.10's Kernel is
    not yet a program)."""
    try:
        return program_of(tg, ret)
    except Exception:
        return None


@contextlib.contextmanager
def untracked_matching(tg: Tinygrad) -> Iterator[None]:
    """While the command runs, tinygrad's tracked pattern matcher (the child runs tinygrad with TRACK_MATCH_STATS=1,
    and counts matches with patterns.counting_rewrite) rewrites as the untracked one does: the same rules in the same
    order, without counting, as the command runs without tgstore. Capture mode stores no match counts."""
    tracked = getattr(tg.ops, "TrackedPatternMatcher", None)
    base = next((c for c in getattr(tracked, "__mro__", ())[1:] if c.__name__ == "PatternMatcher"), None)
    if tracked is None or base is None or "rewrite" not in vars(tracked) or "rewrite" not in vars(base):
        yield
        return
    counting = vars(tracked)["rewrite"]
    tracked.rewrite = vars(base)["rewrite"]
    try:
        yield
    finally:
        tracked.rewrite = counting
