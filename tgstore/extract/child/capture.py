"""Capture mode: run a Python command (a script, `python -m ...`, pytest) in this process with the target tinygrad
and record every kernel AST tinygrad lowers while it runs, with where it came from (pytest's test id and the call
site outside tinygrad). The kernels are then rendered like a scheduled case's: one case record per test id (or one
for the whole command), each distinct kernel stored once, under the first place it was lowered."""

from __future__ import annotations

import os
import pathlib
import runpy
import sys
import sysconfig
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from .api import Tinygrad
from .text import clean

# Where tinygrad lowers a kernel AST for a device, newest first: (module, function, position of the AST argument).
LOWERING_HOOKS = [
    ("tinygrad.codegen", "to_program", 0),  # 0.13+: to_program(ast, renderer), cached by the AST's key
    ("tinygrad.codegen", "get_program", 0),  # 0.12: get_program(ast, renderer, opts)
    ("tinygrad.engine.realize", "get_program", 0),  # 0.11
    ("tinygrad.engine.realize", "get_kernel", 1),  # 0.10: get_kernel(renderer, ast)
]
WHOLE_COMMAND = "command"  # the case name of kernels lowered outside any pytest test


class CommandError(ValueError):
    """A command capture cannot run in-process."""


@dataclass
class Origin:
    name: str
    asts: list[Any] = field(default_factory=list)
    call_sites: list[str | None] = field(default_factory=list)


class KernelCapture:
    """Wraps this era's lowering entry point in every tinygrad module that refers to it."""

    def __init__(self, tg: Tinygrad, root: pathlib.Path) -> None:
        self.tg = tg
        self.skip_dirs = [str((root / "tinygrad").resolve()), str(pathlib.Path(__file__).resolve().parent),
                          sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
        self.hook = next(((m, f, i) for m, f, i in LOWERING_HOOKS if callable(tg.attr(m, f))), None)
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

        def lowering(*args: Any, **kwargs: Any) -> Any:
            if self.depth == 0:
                self.record(args[index] if len(args) > index else kwargs.get("ast"))
            self.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self.depth -= 1

        for _, mod in self.tg.loaded_modules():
            for attr, value in list(vars(mod).items()):
                if value is original:
                    self.patched.append((mod, attr, value))
                    setattr(mod, attr, lowering)

    def uninstall(self) -> None:
        for mod, attr, value in reversed(self.patched):
            setattr(mod, attr, value)
        self.patched.clear()

    def record(self, ast: Any) -> None:
        if ast is None or getattr(getattr(ast, "op", None), "name", None) != "SINK":
            return
        key = getattr(ast, "key", ast)
        if key in self.seen:
            return
        self.seen.add(key)
        test = os.environ.get("PYTEST_CURRENT_TEST")
        name = test.rsplit(" (", 1)[0] if test else WHOLE_COMMAND
        origin = self.origins.setdefault(name, Origin(name))
        origin.asts.append(ast)
        origin.call_sites.append(self.call_site())

    def call_site(self) -> str | None:
        """file:line in function of the innermost frame outside tinygrad, this package and Python's libraries."""
        for frame in reversed(traceback.extract_stack()[:-3]):
            path = os.path.abspath(frame.filename)
            if frame.filename.startswith("<") or any(path.startswith(d) for d in self.skip_dirs):
                continue
            cwd = os.getcwd() + os.sep  # paths below the working directory (a test id's root) are shown relative
            shown = path[len(cwd):] if path.startswith(cwd) else path
            return f"{shown}:{frame.lineno} in {frame.name}"
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
        return 1, clean(traceback.format_exc())
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
        record["exit_status"], record["error"] = run_command(argv)
    except CommandError as e:
        record["error"] = str(e)
    finally:
        hooks.uninstall()
        sys.stdout.flush()
        sys.stderr.flush()
    record["seconds"] = round(time.perf_counter() - start, 4)
    return hooks, record
