"""What the command modules share: options, opening the database, and turning failures into one-line errors."""

from __future__ import annotations

import contextvars
import functools
import inspect
import math
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand

from tgstore.cli.output import error

DEFAULT_DB = Path("tgstore.db")
# the app's one `--db` (cli/app.py's callback); written before or after the command name (app.DbFirstGroup)
DbOption = Annotated[Path, typer.Option("--db", help="The tgstore SQLite database file, for every command; before or "
                                        "after the command name.", envvar="TGSTORE_DB")]
DB_EPILOG = "The database: --db PATH (before or after the command name) or TGSTORE_DB; default ./tgstore.db."
_DB: contextvars.ContextVar[Path] = contextvars.ContextVar("tgstore_db", default=DEFAULT_DB)


def set_db(path: Path) -> None:
    """The app's callback: the database this invocation's command uses."""
    _DB.set(path)


def db_path() -> Path:
    """The database the command works on: `--db`, else TGSTORE_DB, else ./tgstore.db."""
    return _DB.get()
TinygradOption = Annotated[
    Path | None,
    typer.Option("--tinygrad", help="A tinygrad checkout, a directory holding the tinygrad package, or the package "
                 "itself. Default: the tinygrad installed beside tgstore."),
]
CasesOption = Annotated[
    list[Path] | None,
    typer.Option("--cases", help="A Python file of case_<name>() functions returning Tensors (repeatable). "
                 "Default: the built-in suite."),
]
SuiteOption = Annotated[str | None, typer.Option(
    "--suite", help="A built-in suite by name: builtin (the default) or models; `tgstore suites` lists them.",
    show_default=False)]
CaptureOption = Annotated[bool, typer.Option(
    "--capture", help="Instead of a suite, run the Python command given after -- (python SCRIPT, python -m MODULE, "
    "pytest ARGS) with this tinygrad and store every kernel it lowers, with its test id and call site. Kernels run "
    "on the CPU, which needs clang.")]
CommandArgument = Annotated[list[str] | None, typer.Argument(
    help="With --capture: the command, after --.", show_default=False)]
# the extraction settings: one section of each extracting command's --help (PanelCommand)
EXTRACTION = "Extraction settings"
BackendOption = Annotated[str, typer.Option("--backend", help="The device tinygrad schedules for.",
    rich_help_panel=EXTRACTION)]
RenderersOption = Annotated[
    str | None, typer.Option("--renderers", help="Comma-separated renderers (C, LLVM, PTX, ...). Default: all that "
                             "render without hardware.", rich_help_panel=EXTRACTION)]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="Seconds before one extraction is killed.",
    rich_help_panel=EXTRACTION)]
JobsOption = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, show_default=False,
    help="Processes to use. One extraction runs its cases in this many (default: the usable cores, at most 4; "
         "what is stored is the same; timing with --time or --compile-times runs in one). A sweep (--rev) runs "
         "this many extractions at once (default 1), sharing those cores between them.", rich_help_panel=EXTRACTION)]
DebugOption = Annotated[int, typer.Option("--debug", help="tinygrad DEBUG level whose output is captured per case.",
    rich_help_panel=EXTRACTION)]
StagesOption = Annotated[str | None, typer.Option(
    "--stages", help="Renderers whose codegen passes (the graph after each named pass) are recorded: "
    "comma-separated, 'all' or 'none'. Default: C,LLVM.", show_default=False, rich_help_panel=EXTRACTION)]
# On by default with a cap: the child records steps with its own counting rewrite (extract/child/step_log.py), where
# tinygrad's own trace cost 30-55% more extraction CPU. Every step of every pass cost too much on the built-in suite
# (bench/bench_rewrites.py --cases all, bench/README.md): 2.11x the bundle, 1.73x the database, 1.12x the extraction
# CPU; a pass makes a median of 1 step and 99% of passes make at most 66, so 100 records 99.4% of the suite's passes
# whole (20 recorded 94.1%) and the few long passes (up to 5,823 steps) their first 100.
DEFAULT_REWRITES = 100
RewritesOption = Annotated[int, typer.Option(
    "--rewrites", min=0, help="Record up to N rewrite steps of each pass (the rule that matched, the node before "
    "and after), as tinygrad's VIZ does; `tgstore rewrites` and the web pages show them. 0: off.",
    rich_help_panel=EXTRACTION)]
TimeOption = Annotated[bool, typer.Option(
    "--time", help="Also compile every kernel with the device's compiler and time it on deterministic buffers "
    "(tinygrad's own timer, one kernel at a time on this machine; a kernel that crashes or hangs is recorded). "
    "`tgstore times CASE` shows the result. A commit already stored is timed again and keeps its run.",
    rich_help_panel=EXTRACTION)]
CompileTimesOption = Annotated[bool, typer.Option(
    "--compile-times", help="Record how long tinygrad took to schedule each case and lower each kernel per renderer, "
    "per named pass, on this machine (implied by --time; cheap: no kernel runs). `tgstore times CASE --compile`.",
    rich_help_panel=EXTRACTION)]
TimeRunsOption = Annotated[int | None, typer.Option(
    "--time-runs", min=1, help="Timed runs per kernel after the warm-up (default: as many as fit about 0.15 s, "
    "5 to 50).", show_default=False, rich_help_panel=EXTRACTION)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
DEFAULT_REPO = Path("submodules/tinygrad")
CaseArgument = Annotated[str, typer.Argument(help="The case (e.g. matmul).", show_default=False)]
RepoOption = Annotated[Path | None, typer.Option("--repo", envvar="TGSTORE_REPO",
                                                 help="The tinygrad git repository whose commits --rev, --good and "
                                                 "--bad name (default: submodules/tinygrad).", show_default=False)]

# The database the running command opened, for error messages that the driver gives without a file name.
current_db: contextvars.ContextVar[Path | None] = contextvars.ContextVar("current_db", default=None)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `message` as an error; the caller raises the returned Exit (`raise fail(...)`)."""
    error(message)
    return typer.Exit(code)


def describe_sqlite_error(exc: BaseException) -> str:
    """A one-line explanation of a SQLite failure, naming the database file."""
    from tgstore.db.engine import sqlite_error_message

    return sqlite_error_message(current_db.get(), getattr(exc, "orig", None) or exc)


@contextmanager
def errors_as_messages() -> Iterator[None]:
    """Turn the failures a user can cause (a bad file, a full disk, a locked or read-only database, a bad commit)
    into `error: ...` on one line and exit status 1; Ctrl-C exits 130."""
    from tgstore.answers.base import Unanswerable
    from tgstore.db import DatabaseError

    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except (DatabaseError, Unanswerable) as exc:
        raise fail(str(exc)) from None
    except database_errors() as exc:
        raise fail(describe_sqlite_error(exc)) from None
    except BrokenPipeError:  # the reader of our output left (`| head`): stop quietly, like other tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(141) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise fail(f"{where}{exc.strerror or exc}") from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None


def database_errors() -> tuple[type[BaseException], ...]:
    """sqlite3's errors, and SQLAlchemy's wrapping of them where a command loaded SQLAlchemy (a read does not)."""
    found = sys.modules.get("sqlalchemy.exc")
    return (sqlite3.Error, found.DBAPIError) if found is not None else (sqlite3.Error,)


F = TypeVar("F", bound=Callable[..., Any])


class PanelCommand(TyperCommand):
    """A command whose --help lists its options in sections by their `rich_help_panel` (the extraction settings
    apart from the rest), as Typer does only with rich's formatter, which this app does not use."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                default = "Arguments" if param.param_type_name == "argument" else "Options"
                sections.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(record)
        for title, records in sections.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


def command(group: typer.Typer, *args: Any, **kwargs: Any) -> Callable[[F], F]:
    """`group.command(...)` whose function runs inside `errors_as_messages`, its --help in sections (PanelCommand)."""
    kwargs.setdefault("cls", PanelCommand)

    def register(fn: F) -> F:
        if "db_path" in inspect.unwrap(fn).__code__.co_names:  # on the database: its --help says how to name it
            kwargs.setdefault("epilog", DB_EPILOG)

        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with errors_as_messages():
                return fn(*a, **k)

        group.command(*args, **kwargs)(wrapper)
        return fn

    return register


def open_reader(db: Path, *, check: bool = True) -> sqlite3.Connection:
    """The database for a question: sqlite3, read-only, its schema checked against this tgstore's head without
    SQLAlchemy or Alembic (db/read.py)."""
    from tgstore.db.read import open_reader as open_read

    current_db.set(db)
    return open_read(db, check=check)


def print_json(answer: Any, **dumps: Any) -> None:
    """An answer's `to_json()` as one JSON document on stdout: what `tgstore mcp` and the pages' twins answer."""
    import json

    sys.stdout.write(json.dumps(answer.to_json(), ensure_ascii=False, **dumps) + "\n")


def print_json_lines(rows: list[Any]) -> None:
    """One JSON object per line (--jsonl): rows for a stream-reading script."""
    import json

    from tgstore.answers.base import jsonable

    for row in rows:
        sys.stdout.write(json.dumps(jsonable(row), ensure_ascii=False) + "\n")


def open_db(db: Path, *, migrate: bool = True, writer: bool = True, check: bool = True):
    """Open the database. A writer creates the file if it is missing and, with `migrate`, upgrades the schema to
    head; a reader needs an existing database at this tgstore's schema (unless not `check`) and opens it read-only
    (immutable on read-only media)."""
    from tgstore.db import DatabaseError, open_engine
    from tgstore.db.migrate import check_readable, ensure_current

    current_db.set(db)
    try:
        engine = open_engine(db, writer=writer)
        if migrate:
            ensure_current(engine)
        elif not writer and check:
            check_readable(engine)
        return engine
    except DatabaseError as exc:
        raise fail(str(exc)) from None


def make_plan(cases: list[Path] | None, backend: str, renderers: str | None, debug: int, timeout: float,
              stages: str | None = None, rewrites: int = 0, *, suite: str | None = None,
              capture: list[str] | None = None, capture_cwd: Path | None = None):
    """The extraction plan the options ask for; a one-line error for a case file, suite or command that cannot be."""
    from tgstore.cases import UnknownSuite, suite_file
    from tgstore.extract.names import UnknownName, check_backend, check_renderers
    from tgstore.pipeline import ExtractionPlan

    if not math.isfinite(timeout) or timeout <= 0:
        raise fail(f"--timeout must be a positive number of seconds, not {timeout:g}")
    renderer_names = [r.strip().upper() for r in renderers.split(",") if r.strip()] if renderers else None
    try:
        check_renderers(renderer_names)
        check_renderers([s.strip() for s in stages.split(",") if s.strip()] if stages else None, "--stages")
        check_backend(backend, set())  # the spelling here; the devices once the tinygrad is known (check_devices)
    except UnknownName as exc:
        raise fail(str(exc)) from None
    for path in cases or []:
        if not path.is_file():
            raise fail(f"case file {path} does not exist")
    if suite and cases:
        raise fail("--suite and --cases both name the cases: give one")
    if capture is not None and (suite or cases):
        raise fail("--capture runs a command instead of a suite: it does not combine with --suite or --cases")
    plan = ExtractionPlan(backend=backend, debug_level=debug, timeout=timeout, renderers=renderer_names,
                          stages=stages, rewrites=rewrites)
    if cases:
        plan.case_files = [p.resolve() for p in cases]
    if suite:
        try:
            plan.case_files = [suite_file(suite)]
        except UnknownSuite as exc:
            raise fail(str(exc)) from None
    if capture is not None:
        if not capture:
            raise fail("--capture needs a command after --, e.g. tgstore capture -- python script.py")
        if backend.upper() in ("CPU", "CLANG") and shutil.which("clang") is None:
            raise fail("--capture runs the command's kernels on the CPU, which needs clang (tinygrad compiles with "
                       "it): install it, e.g. apt-get install clang")
        plan.capture, plan.capture_cwd = list(capture), capture_cwd
    return plan


def capture_command(capture: bool, command_args: list[str] | None) -> list[str] | None:
    """The command to capture (--capture -- CMD ...), or None; a one-line error for one without the other."""
    if command_args and not capture:
        raise fail(f"unexpected argument {command_args[0]!r}; to run a command, use --capture -- "
                   f"{' '.join(command_args)}")
    return list(command_args or []) if capture else None


def resolve_root(tinygrad: Path | None, backend: str | None = None) -> Path:
    """The tinygrad to extract; with `backend`, a one-line error unless that tinygrad has the device."""
    from tgstore.extract.names import UnknownName, check_backend, installed_devices
    from tgstore.extract.runner import TinygradNotFound, resolve_tinygrad_root

    try:
        root = resolve_tinygrad_root(tinygrad)
        if backend is not None:
            check_backend(backend, installed_devices(root))
        return root
    except (TinygradNotFound, UnknownName) as exc:
        raise fail(str(exc)) from None
