"""Commands that read the database: runs, queries, query, diff, serve. They open it read-only."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tgstore.cli.app import app
from tgstore.cli.common import DbOption, JsonOption, command, fail, open_db
from tgstore.cli.extract import IgnoreNamesOption
from tgstore.cli.output import emit, note, out, print_table, safe

WEB_ONLY_COLUMNS = frozenset({"diff", "chart"})
ParamOption = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="A query parameter as key=value (repeatable).")]


@command(app)
def runs(db: DbOption = Path("tgstore.db"),
         as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
         all_attempts: Annotated[bool, typer.Option("--all", help="Also list failed attempts that did not replace "
                                                    "an ok run.")] = False) -> None:
    """List the stored runs in history order (git's first-parent line, releases by version): commit, version,
    suite, backend, status."""
    from sqlalchemy import text

    engine = open_db(db, migrate=False, writer=False)
    where = "" if all_attempts else "WHERE r.is_current = 1"
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text(
            "SELECT r.run_id, r.sha, r.version, r.committed_at, r.suite, r.backend, r.status, r.is_current, r.error "
            f"FROM v_runs r {where} ORDER BY r.history_rank, r.run_id"))]
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    columns = ["run", "commit", "version", "date", "suite", "backend", "status", "error"]
    print_table(columns, [[row["run_id"], row["sha"][:12], row["version"] or "", row["committed_at"] or "",
                           row["suite"], row["backend"],
                           row["status"] + ("" if row["is_current"] else " (attempt)"),
                           (row["error"] or "").splitlines()[0][:80] if row["error"] else ""] for row in rows])


def print_query_list(queries) -> None:
    print_table(["name", "parameters", "title"], [[q.name, q.signature(), q.title] for q in queries.values()],
                title="queries (tgstore query NAME -p key=value)")


@command(app)
def query(
    name: Annotated[str | None, typer.Argument(help="The query: a file stem in queries/ (see --list).")] = None,
    param: ParamOption = None,
    db: DbOption = Path("tgstore.db"),
    list_queries: Annotated[bool, typer.Option("--list", help="List the available queries and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines, one object per row.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV with a header row.")] = False,
) -> None:
    """Run a named SQL query from queries/ with -p key=value parameters; a commit parameter takes a sha, a unique
    sha prefix or a version. A terminal gets a table, a pipe plain columns; --json and --csv for scripts."""
    from tgstore.queries import QueryError, get_query, load_queries, parse_param_options, resolve_commit_params
    from tgstore.queries import run_query as run_named_query
    from tgstore.store.commits import CommitNotFound

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
    if as_json:
        for row in result.dicts():
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        return
    # `diff` and `chart` columns are links for the web pages ("A B case"); a terminal shows the rest (--json and
    # --csv keep every column)
    shown = [i for i, c in enumerate(result.columns) if c not in WEB_ONLY_COLUMNS]
    print_table([result.columns[i] for i in shown], [["" if row[i] is None else row[i] for i in shown]
                                                     for row in result.rows], title=result.query.title)
    hidden = [c for c in result.columns if c in WEB_ONLY_COLUMNS]
    note(f"{len(result.rows)} row{'' if len(result.rows) == 1 else 's'}"
         + (f" (link column{'s' if len(hidden) > 1 else ''} {', '.join(hidden)} shown in `tgstore serve` and "
            "--json)" if hidden else ""))


@command(app, "queries")
def queries_command() -> None:
    """List the named SQL queries (same as `tgstore query --list`)."""
    from tgstore.queries import QueryError, load_queries

    try:
        print_query_list(load_queries())
    except QueryError as exc:
        raise fail(str(exc)) from None


DIFF_STYLES = {"header": "bold", "add": "green", "remove": "red", "hunk": "cyan", "note": "yellow"}


@command(app)
def diff(
    a: Annotated[str, typer.Argument(help="The older commit: sha, unique sha prefix, version, or tree:<hash>.")],
    b: Annotated[str, typer.Argument(help="The newer commit.")],
    db: DbOption = Path("tgstore.db"),
    case: Annotated[str | None, typer.Option("--case", help="Only this case.")] = None,
    renderer: Annotated[str | None, typer.Option("--renderer", help="Only this renderer's sources (C, LLVM, ...).")
                        ] = None,
    what: Annotated[str, typer.Option("--what", help="source, ast, or all.")] = "all",
    stages: Annotated[bool, typer.Option("--stages", help="Per case, the first scheduler pass whose output differs, "
                                         "and per kernel the first codegen pass, with a structural diff of the two "
                                         "graphs there (ids ignored).")] = False,
    suite: Annotated[str | None, typer.Option("--suite", help="The suite (name or hash) when the commits have runs "
                                              "of several.")] = None,
    backend: Annotated[str | None, typer.Option("--backend", help="The backend when there are runs of several.")
                       ] = None,
    context: Annotated[int, typer.Option("--context", "-U", help="Lines of context in the diffs.")] = 3,
    ignore_names: IgnoreNamesOption = False,
    spelling: Annotated[str, typer.Option(
        "--spelling", help="ignore: kernel ASTs and pass graphs compared (and their diffs printed) in one spelling "
        "across tinygrad eras (tgstore/spelling/eras.py), so a change of spelling alone is not a change; raw: "
        "compared as stored (ASTs as pyrender). Generated sources are compared as stored either way.")] = "ignore",
    exit_code: Annotated[bool, typer.Option("--exit-code", help="Exit 1 when something changed, 0 when nothing did "
                                            "(like git diff --exit-code).")] = False,
    as_json: JsonOption = False,
) -> None:
    """What changed between two commits' runs: a summary (cases, kernels, renderers changed), then unified diffs of
    kernel ASTs and generated sources; spelling-blind unless --spelling raw. Renderers unavailable at either commit
    are skipped with one line saying so."""
    from tgstore.compare.diff import DiffError, diff_commits, diff_to_json, format_diff
    from tgstore.store.commits import CommitNotFound

    if spelling not in ("ignore", "raw"):
        raise fail(f"--spelling must be ignore or raw, not {spelling!r}")
    engine = open_db(db, migrate=False, writer=False)
    try:
        with engine.connect() as conn:
            result = diff_commits(conn, a, b, case=case, renderer=renderer, what=what, suite=suite, backend=backend,
                                  context=context, ignore_names=ignore_names, stages=stages,
                                  schedule_stages=stages, ignore_spelling=spelling == "ignore")
    except (DiffError, CommitNotFound) as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(diff_to_json(result), ensure_ascii=False, indent=1))
    else:
        for style, line in format_diff(result):
            out.print(Text(safe(line), style=DIFF_STYLES.get(style, "")))
    if exit_code and result.has_changes:
        raise typer.Exit(1)


@command(app)
def serve(
    db: DbOption = Path("tgstore.db"),
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.")] = 8001,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open a web browser on it.")] = False,
) -> None:
    """Browse the database in Datasette (read-only): commits, kernels, pass graphs, diffs between commits, charts,
    and every queries/*.sql as a canned query."""
    from tgstore.serve import serve_datasette

    open_db(db, migrate=False, writer=False)  # a clear error for a missing or foreign file
    try:
        serve_datasette(db, host=host, port=port, open_browser=open_browser, log=emit)
    except OSError as exc:
        raise fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
