"""The `tgstore` command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tgstore import __version__

app = typer.Typer(
    help="tgstore: what did tinygrad's IR do at this commit, and what changed since?\n\n"
    "Extract tinygrad's schedules, kernel ASTs, UOps, generated source and pattern-matcher activity over a suite "
    "of tensor programs, store them in SQLite keyed by tinygrad commit, and query or browse them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Create and migrate the database schema (Alembic).", no_args_is_help=True)
app.add_typer(db_app, name="db")

console = Console(stderr=True)
out = Console()

DbOption = Annotated[Path, typer.Option("--db", help="The tgstore SQLite database file.", envvar="TGSTORE_DB")]
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
BackendOption = Annotated[str, typer.Option("--backend", help="The device tinygrad schedules for.")]
RenderersOption = Annotated[
    str | None, typer.Option("--renderers", help="Comma-separated renderers (C, LLVM, PTX, ...). Default: all that "
                             "render without hardware.")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="Seconds before one extraction is killed.")]
DebugOption = Annotated[int, typer.Option("--debug", help="tinygrad DEBUG level whose output is captured per case.")]
DEFAULT_REPO = Path("submodules/tinygrad")
RepoOption = Annotated[Path | None, typer.Option("--repo", help="The tinygrad git repository whose commits --rev, "
                                                 "--good and --bad name (default: submodules/tinygrad).",
                                                 show_default=False)]


def print_error(message: str) -> None:
    console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `message` as an error; the caller raises the returned Exit (`raise fail(...)`)."""
    print_error(message)
    return typer.Exit(code)


def version_callback(value: bool) -> None:
    if value:
        out.print(f"tgstore {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                               help="Print the version and exit.")] = False) -> None:
    pass


def open_db(db: Path, *, migrate: bool = True, writer: bool = True):
    """Open the database, turning its problems into clear CLI errors. A writer creates the file if it is missing and,
    with `migrate`, upgrades the schema to head; a reader needs an existing database."""
    from tgstore.db import DatabaseError, open_engine
    from tgstore.db.migrate import ensure_current

    try:
        if not writer and not db.exists():
            raise DatabaseError(f"{db} does not exist; create it with `tgstore ingest` or `tgstore db upgrade`")
        engine = open_engine(db, writer=writer)
        if migrate:
            ensure_current(engine)
        return engine
    except DatabaseError as exc:
        raise fail(str(exc)) from None


def make_plan(cases: list[Path] | None, backend: str, renderers: str | None, debug: int, timeout: float):
    from tgstore.pipeline import ExtractionPlan

    for path in cases or []:
        if not path.is_file():
            raise fail(f"case file {path} does not exist")
    plan = ExtractionPlan(backend=backend, debug_level=debug, timeout=timeout,
                          renderers=[r.strip() for r in renderers.split(",") if r.strip()] if renderers else None)
    if cases:
        plan.case_files = [p.resolve() for p in cases]
    return plan


def resolve_root(tinygrad: Path | None) -> Path:
    from tgstore.extract.runner import TinygradNotFound, resolve_tinygrad_root

    try:
        return resolve_tinygrad_root(tinygrad)
    except TinygradNotFound as exc:
        raise fail(str(exc)) from None


@contextmanager
def case_progress(plan, description: str) -> Iterator[Callable[[str], None]]:
    """A progress bar over the suite's cases on stderr (a terminal only); yields the per-case callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tgstore.pipeline import CaseFileError, read_case_names

    try:
        total = len(read_case_names(plan.case_files))
    except CaseFileError as exc:
        raise fail(str(exc)) from None
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[case]}"), console=console, transient=True,
                  disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=total or None, case="")
        yield lambda name: progress.update(task, advance=1, case=name)


def print_report(report) -> None:
    if report.skipped:
        console.print(f"{report.commit[:12]}: already ingested (run {report.run_id}); --force to redo")
        return
    colour = {"ok": "green", "partial": "yellow"}.get(report.status, "red")
    console.print(f"{report.commit[:12]}: run {report.run_id} [{colour}]{report.status}[/{colour}], "
                  f"{report.cases} cases ({report.failed_cases} failed), {report.new_case_results} new case results",
                  highlight=False)


@app.command()
def ingest(
    db: DbOption = Path("tgstore.db"),
    tinygrad: TinygradOption = None,
    bundle: Annotated[list[Path] | None, typer.Option("--bundle", help="Ingest bundle file(s) written by "
                                                      "`tgstore extract` instead of extracting.")] = None,
    cases: CasesOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
    force: Annotated[bool, typer.Option("--force", help="Re-extract and replace runs that are already ok.")] = False,
    keep_bundle: Annotated[Path | None, typer.Option("--keep-bundle", help="Also write the bundle here.")] = None,
    repo: RepoOption = None,
    rev: Annotated[list[str] | None, typer.Option("--rev", help="Sweep commits of --repo: A..B (B's first-parent "
                                                  "line after A, oldest first, B included), a sha, branch or tag "
                                                  "(repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Extractions run in parallel in a sweep.")] = 1,
) -> None:
    """Extract a tinygrad (installed, or --tinygrad PATH) over the case suite and store it in the database.

    Creates and migrates the database if needed. A crash or hang of the extraction is stored as a failed run.
    With --rev, sweeps commits of a git repository: commits already ingested ok are skipped, failed ones retried;
    exits 1 if any commit failed.
    """
    if rev or repo:
        if not rev:
            raise fail("--repo needs --rev (the commits to sweep)")
        if tinygrad or bundle or keep_bundle:
            raise fail("--rev sweeps commits of --repo; it does not combine with --tinygrad, --bundle or --keep-bundle")
        sweep_commits(db, repo or DEFAULT_REPO, rev, make_plan(cases, backend, renderers, debug, timeout), jobs, force)
        return
    from tgstore.bundle import BundleError, read_bundle
    from tgstore.db import DatabaseError
    from tgstore.ingest import ingest_bundle
    from tgstore.pipeline import extract_and_ingest

    engine = open_db(db)
    try:
        if bundle:
            for path in bundle:
                try:
                    loaded = read_bundle(path)
                except BundleError as exc:
                    raise fail(str(exc)) from None
                print_report(ingest_bundle(engine, loaded, force=force))
            return
        plan = make_plan(cases, backend, renderers, debug, timeout)
        root = resolve_root(tinygrad)
        with case_progress(plan, "extracting") as on_case:
            report = extract_and_ingest(engine, root, plan, force=force, keep_bundle=keep_bundle, on_case=on_case)
        print_report(report)
        if report.status in ("failed", "timeout"):
            raise typer.Exit(1)
    except DatabaseError as exc:
        raise fail(str(exc)) from None


def sweep_commits(db: Path, repo: Path, revs: list[str], plan, jobs: int, force: bool) -> None:
    import signal

    from tgstore.db import DatabaseError
    from tgstore.sweep import SweepError, SweepReporter, open_repo, resolve_revs, sweep

    try:
        root = open_repo(repo)
        commits = resolve_revs(root, revs)  # a bad repo or rev fails here, before the database is touched
    except SweepError as exc:
        raise fail(str(exc)) from None
    engine = open_db(db)

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # like Ctrl-C: kill the extractions in flight, keep what is ingested
    try:
        with SweepReporter(console) as reporter:
            summary = sweep(engine, root, commits, plan, jobs=jobs, force=force, reporter=reporter)
            reporter.summary(summary)
    except (DatabaseError, SweepError) as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail("interrupted; the commits ingested so far are kept, run the sweep again to resume", 130) from None
    if summary.failed:
        raise typer.Exit(1)


@app.command()
def bisect(
    case: Annotated[str, typer.Argument(help="The case whose output to follow (e.g. matmul).", show_default=False)],
    good: Annotated[str, typer.Option("--good", help="The older commit (sha, branch, tag).", show_default=False)],
    bad: Annotated[str, typer.Option("--bad", help="The newer commit, a descendant of --good.", show_default=False)],
    repo: RepoOption = None,
    what: Annotated[str, typer.Option("--what", help="Compare the generated source or the kernel ASTs.")] = "source",
    renderer: Annotated[str, typer.Option("--renderer", help="Whose generated source (--what source).")] = "C",
    db: DbOption = Path("tgstore.db"),
    cases: CasesOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
) -> None:
    """Find the first commit in GOOD..BAD (first-parent line) where CASE's generated source (or kernel ASTs)
    differs from GOOD's, by binary search over stored runs, extracting and ingesting only the commits missing."""
    from tgstore.db import DatabaseError
    from tgstore.sweep import BisectError, SweepError, bisect_case, case_names, open_repo, verify_rev

    plan = make_plan(cases, backend, renderers, debug, timeout)
    try:
        root = open_repo(repo or DEFAULT_REPO)
        known = case_names(plan.case_files)  # the cheap checks first: nothing is written when they fail
        if what not in ("source", "ast"):
            raise BisectError(f"--what must be source or ast, not {what!r}")
        if case not in known:
            raise BisectError(f"unknown case {case!r}; the suite's cases are: {', '.join(known)}")
        verify_rev(root, good), verify_rev(root, bad)
        engine = open_db(db)
        result = bisect_case(engine, root, case, good, bad, plan, what=what, renderer=renderer,
                             log=lambda msg: console.print(msg, highlight=False, markup=False, soft_wrap=True))
    except (BisectError, SweepError, DatabaseError) as exc:
        raise fail(str(exc)) from None
    label = f"{renderer} source" if what == "source" else "kernel ASTs"
    first = result.first
    out.print(f"{first.sha} {first.date} {first.subject}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"first commit where case {case!r}'s {label} differs from {good}; {result.commits} commits in "
                  f"range, {len(result.looked_at)} looked at, {result.extractions} extractions", highlight=False,
                  markup=False, soft_wrap=True)
    if result.untestable_before:
        console.print(f"warning: {len(result.untestable_before)} commits just before it could not be extracted; the "
                      f"change may be in one of them: {' '.join(c.sha[:10] for c in result.untestable_before)}",
                      highlight=False, markup=False, soft_wrap=True)


@app.command("ingest-svod")
def ingest_svod(
    logfiles: Annotated[list[Path], typer.Argument(help="Svod test log(s): the output of `RUST_LOG=...=debug cargo "
                                                   "test NAME -- --nocapture`.", show_default=False)],
    case: Annotated[str, typer.Option("--case", help="The tinygrad case the Svod test corresponds to (e.g. add); "
                                      "queries compare the two by this name.", show_default=False)],
    svod_commit: Annotated[str | None, typer.Option("--svod-commit", help="The Svod commit the logs come from.")]
    = None,
    db: DbOption = Path("tgstore.db"),
) -> None:
    """Store Svod (Rust port of tinygrad) test logs for a case: events, per-stage node counts, stage trees, kernels,
    pattern-match counts, and the whole log text.

    Creates and migrates the database if needed. Problems in a log (a malformed JSON line, an unterminated dump) are
    printed as FILE:LINE: MESSAGE and stored; the rest of the log is kept. Re-ingesting a stored log does nothing.
    Exits 1 if a file could not be stored at all (missing, not text, empty, not a Svod log).
    """
    from tgstore.db import DatabaseError
    from tgstore.svod.store import SvodLogError, ingest_svod_log

    engine = open_db(db)
    failed = 0
    for path in logfiles:
        try:
            report = ingest_svod_log(engine, path, case, svod_commit)
        except SvodLogError as exc:
            print_error(str(exc))
            failed += 1
            continue
        except DatabaseError as exc:
            raise fail(str(exc)) from None
        if report.skipped:
            note = f"; Svod commit set to {report.svod_commit}" if report.commit_filled else ""
            console.print(f"{path}: already stored for case {case!r} (svod run {report.run_id}){note}",
                          highlight=False, markup=False, soft_wrap=True)
        else:
            colour = "yellow" if report.problems else "green"
            console.print(
                f"{path}: svod run {report.run_id} for case {case!r}: {report.lines} lines, {report.events} events, "
                f"{report.kernels} kernels, {report.per_stage} per-stage counts, {report.stage_dumps} stage dumps, "
                f"{report.pattern_matches} pattern matches, {report.new_trees} new trees, "
                f"[{colour}]{len(report.problems)} problems[/{colour}]", highlight=False, soft_wrap=True)
        for problem in report.problems:
            console.print(f"{path}:{problem.line_no}: {problem.message}", highlight=False, markup=False,
                          soft_wrap=True)
    if failed:
        raise typer.Exit(1)


@app.command()
def extract(
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Where to write the JSON-lines bundle.")],
    tinygrad: TinygradOption = None,
    cases: CasesOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
) -> None:
    """Only extract: write a bundle (docs/bundle-format.md) for `tgstore ingest --bundle` here or elsewhere."""
    from tgstore.extract.runner import run_extraction

    plan = make_plan(cases, backend, renderers, debug, timeout)
    root = resolve_root(tinygrad)
    with case_progress(plan, "extracting") as on_case:
        result = run_extraction(root, out_file, case_files=plan.case_files, backend=plan.backend,
                                renderers=plan.renderers, debug_level=plan.debug_level, timeout=plan.timeout,
                                on_case=on_case)
    console.print(f"{out_file}: extraction {result.status} in {result.seconds:.1f}s", highlight=False)
    if result.status != "ok":
        console.print(result.stderr[-4000:], highlight=False, markup=False)
        raise typer.Exit(1)


@app.command()
def runs(db: DbOption = Path("tgstore.db"),
         as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False) -> None:
    """List the stored runs: commit, version, suite, backend, status."""
    from sqlalchemy import text

    engine = open_db(db, migrate=False, writer=False)
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text(
            "SELECT run_id, sha, version, committed_at, suite, backend, status, error FROM v_runs ORDER BY run_id"))]
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    table = Table("run", "commit", "version", "date", "suite", "backend", "status", "error")
    for row in rows:
        table.add_row(str(row["run_id"]), row["sha"][:12], row["version"] or "", row["committed_at"] or "",
                      row["suite"], row["backend"], row["status"], (row["error"] or "")[:60])
    out.print(table)


ParamOption = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="A query parameter as key=value (repeatable).")]


def print_query_list(queries) -> None:
    from rich.text import Text

    table = Table("name", "parameters", "title", title="queries (tgstore query NAME -p key=value)")
    for query in queries.values():
        table.add_row(Text(query.name), Text(query.signature()), Text(query.title))
    (out if out.is_terminal else Console(width=200, file=out.file)).print(table)


@app.command()
def query(
    name: Annotated[str | None, typer.Argument(help="The query: a file stem in queries/ (see --list).")] = None,
    param: ParamOption = None,
    db: DbOption = Path("tgstore.db"),
    list_queries: Annotated[bool, typer.Option("--list", help="List the available queries and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines, one object per row.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV with a header row.")] = False,
) -> None:
    """Run a named SQL query from queries/ with -p key=value parameters; a commit parameter takes a sha, a unique
    sha prefix or a version."""
    import csv
    import sqlite3

    from sqlalchemy.exc import DBAPIError

    from tgstore.queries import QueryError, get_query, load_queries, parse_param_options, resolve_commit_params
    from tgstore.queries import run_query as run_named_query
    from tgstore.refs import CommitNotFound

    try:
        if list_queries or name is None:
            print_query_list(load_queries())
            return
        if as_json and as_csv:
            raise fail("--json and --csv exclude each other")
        named = get_query(name)
        params = parse_param_options(param)
        named.bind(params)  # unknown or missing parameters fail before the database is opened
        engine = open_db(db, migrate=False, writer=False)
        with engine.connect() as conn:
            result = run_named_query(conn, named, resolve_commit_params(conn, named, params))
    except (QueryError, CommitNotFound) as exc:
        raise fail(str(exc)) from None
    except (DBAPIError, sqlite3.Error) as exc:
        raise fail(f"query {name!r} failed: {getattr(exc, 'orig', exc)}") from None
    if as_json:
        for row in result.dicts():
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        return
    from rich.text import Text

    table = Table(title=result.query.title, show_lines=any(
        isinstance(v, str) and "\n" in v for row in result.rows for v in row))
    for column in result.columns:
        table.add_column(column, overflow="fold")
    for row in result.rows:
        table.add_row(*(Text("" if v is None else str(v)) for v in row))
    # Piped: the table's natural width, not 80 columns (a terminal keeps its own width).
    (out if out.is_terminal else Console(width=100_000, file=out.file)).print(table)
    console.print(f"{len(result.rows)} row{'' if len(result.rows) == 1 else 's'}", highlight=False)


@app.command("queries")
def queries_command() -> None:
    """List the named SQL queries (same as `tgstore query --list`)."""
    from tgstore.queries import QueryError, load_queries

    try:
        print_query_list(load_queries())
    except QueryError as exc:
        raise fail(str(exc)) from None


@app.command()
def diff(
    a: Annotated[str, typer.Argument(help="The older commit: sha, unique sha prefix, version, or tree:<hash>.")],
    b: Annotated[str, typer.Argument(help="The newer commit.")],
    db: DbOption = Path("tgstore.db"),
    case: Annotated[str | None, typer.Option("--case", help="Only this case.")] = None,
    renderer: Annotated[str | None, typer.Option("--renderer", help="Only this renderer's sources (C, LLVM, ...).")
                        ] = None,
    what: Annotated[str, typer.Option("--what", help="source, ast, or all.")] = "all",
    suite: Annotated[str | None, typer.Option("--suite", help="The suite (name or hash) when the commits have runs "
                                              "of several.")] = None,
    backend: Annotated[str | None, typer.Option("--backend", help="The backend when there are runs of several.")
                       ] = None,
    context: Annotated[int, typer.Option("--context", "-U", help="Lines of context in the diffs.")] = 3,
) -> None:
    """Unified diffs of kernel ASTs (pyrender) and generated sources between two commits' runs, with added and
    removed cases and kernels. Exits 0 whether or not anything changed."""
    from rich.text import Text

    from tgstore.diff import DiffError, diff_commits, format_diff
    from tgstore.refs import CommitNotFound

    engine = open_db(db, migrate=False, writer=False)
    try:
        with engine.connect() as conn:
            result = diff_commits(conn, a, b, case=case, renderer=renderer, what=what, suite=suite, backend=backend,
                                  context=context)
    except (DiffError, CommitNotFound) as exc:
        raise fail(str(exc)) from None
    styles = {"header": "bold", "add": "green", "remove": "red", "hunk": "cyan", "note": "yellow"}
    for style, line in format_diff(result):
        out.print(Text(line, style=styles.get(style, "")), soft_wrap=True)


@app.command()
def serve(
    db: DbOption = Path("tgstore.db"),
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.")] = 8001,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open a web browser on it.")] = False,
) -> None:
    """Browse the database in Datasette (read-only): tables, views, and every queries/*.sql as a canned query."""
    from tgstore.serve import serve_datasette

    open_db(db, migrate=False, writer=False)  # a clear error for a missing or foreign file
    try:
        serve_datasette(db, host=host, port=port, open_browser=open_browser)
    except OSError as exc:
        raise fail(f"cannot serve on {host}:{port}: {exc}") from None


@db_app.command("upgrade")
def db_upgrade(db: DbOption = Path("tgstore.db"),
               revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Create the database or migrate it up to REVISION (default head)."""
    from tgstore.db import DatabaseError, current_revision, upgrade

    engine = open_db(db, migrate=False)
    try:
        upgrade(engine, revision)
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    console.print(f"{db}: schema at {current_revision(engine)}")


@db_app.command("downgrade")
def db_downgrade(revision: Annotated[str, typer.Argument(help="Target revision (e.g. -1, base, 0001).")],
                 db: DbOption = Path("tgstore.db")) -> None:
    """Migrate the database down to REVISION."""
    from tgstore.db import current_revision, downgrade

    engine = open_db(db, migrate=False)
    downgrade(engine, revision)
    console.print(f"{db}: schema at {current_revision(engine)}")


@db_app.command("gc")
def db_gc(db: DbOption = Path("tgstore.db"),
          vacuum: Annotated[bool, typer.Option("--vacuum", help="Also VACUUM to give the space back to the "
                                               "filesystem (rewrites the file).")] = False) -> None:
    """Delete stored artifacts that no run refers to any more (left by --force, retried or widened runs)."""

    from tgstore.db import DatabaseError
    from tgstore.db.gc import collect_garbage

    engine = open_db(db)
    try:
        deleted = collect_garbage(engine)
        if vacuum:
            with engine.connect() as conn:
                conn.connection.dbapi_connection.execute("VACUUM")
    except DatabaseError as exc:
        raise fail(str(exc)) from None
    removed = ", ".join(f"{n} {table}" for table, n in deleted.items() if n) or "nothing"
    console.print(f"{db}: removed {removed}" + (", vacuumed" if vacuum else ""), highlight=False)


@db_app.command("current")
def db_current(db: DbOption = Path("tgstore.db")) -> None:
    """Print the database's schema revision and the newest this tgstore knows."""
    from tgstore.db import current_revision, head_revision

    engine = open_db(db, migrate=False, writer=False)
    out.print(f"current: {current_revision(engine)}  head: {head_revision()}")


def run() -> None:  # pragma: no cover - console entry for `python -m tgstore`
    sys.exit(app())
