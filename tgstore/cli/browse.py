"""Commands that read the database: runs, queries, query, diff, serve. They open it read-only."""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer
from rich.text import Text

from tgstore.cli.app import app
from tgstore.cli.common import (
    JsonOption,
    command,
    db_path,
    fail,
    open_db,
    open_reader,
    print_json,
    print_json_lines,
)
from tgstore.cli.extract import IgnoreNamesOption
from tgstore.cli.output import emit, note, out, print_table, safe

WEB_ONLY_COLUMNS = frozenset({"diff", "chart"})
ParamOption = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="A query parameter as key=value (repeatable).")]


JsonLinesOption = Annotated[bool, typer.Option("--jsonl", help="Print JSON lines: one object per row, for a script "
                                               "that reads a stream (--json prints the whole answer).")]


@command(app)
def runs(as_json: JsonOption = False,
         as_jsonl: JsonLinesOption = False,
         all_attempts: Annotated[bool, typer.Option("--all", help="Also list failed attempts that did not replace "
                                                    "an ok run.")] = False) -> None:
    """List the stored runs in history order (git's first-parent line, releases by version): commit, version,
    suite, backend, status. --json prints {"runs": [...]}, --jsonl one run per line."""
    db = db_path()
    from tgstore.answers.runs import runs as runs_answer

    found = runs_answer(open_reader(db), all_attempts=all_attempts)
    if as_json:
        return print_json(found)
    if as_jsonl:
        return print_json_lines(found.runs)
    columns = ["run", "commit", "version", "date", "suite", "backend", "status", "error"]
    print_table(columns, [[r.run_id, r.sha[:12], r.version or "", r.committed_at or "", r.suite, r.backend,
                           r.status + ("" if r.is_current else " (attempt)"),
                           r.error.splitlines()[0][:80] if r.error else ""] for r in found.runs])


def print_query_list() -> None:
    from tgstore.answers.queries import queries

    print_table(["name", "parameters", "title"], [[q.name, q.signature(), q.title] for q in queries().queries],
                title="queries (tgstore query NAME -p key=value)")


@command(app)
def query(
    name: Annotated[str | None, typer.Argument(help="The query: a file stem in queries/ (see --list).")] = None,
    param: ParamOption = None,
    list_queries: Annotated[bool, typer.Option("--list", help="List the available queries and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as one JSON document: query, title, "
                                          "params, columns, rows.")] = False,
    as_jsonl: JsonLinesOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV with a header row.")] = False,
) -> None:
    """Run a named SQL query from queries/ with -p key=value parameters; a commit parameter takes a sha, a unique
    sha prefix or a version. A terminal gets a table, a pipe plain columns; --json, --jsonl and --csv for
    scripts."""
    db = db_path()
    from tgstore.answers.queries import checked_query
    from tgstore.answers.queries import query as query_answer
    from tgstore.queries import QueryError, parse_param_options

    if list_queries or name is None:
        if as_json:
            from tgstore.answers.queries import queries

            return print_json(queries())
        return print_query_list()
    if sum((as_json, as_jsonl, as_csv)) > 1:
        raise fail("--json, --jsonl and --csv exclude each other")
    try:
        params = parse_param_options(param)
    except QueryError as exc:
        raise fail(str(exc)) from None
    checked_query(name, params)  # unknown or missing parameters fail before the database is opened
    result = query_answer(open_reader(db), name, params)
    if as_json:
        return print_json(result)
    if as_jsonl:
        return print_json_lines(result.rows)
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(result.columns)
        writer.writerows([row[c] for c in result.columns] for row in result.rows)
        return
    # `diff` and `chart` columns are links for the web pages ("A B case"); a terminal shows the rest (--json and
    # --csv keep every column)
    shown = [c for c in result.columns if c not in WEB_ONLY_COLUMNS]
    print_table(shown, [["" if row[c] is None else row[c] for c in shown] for row in result.rows],
                title=result.title)
    hidden = [c for c in result.columns if c in WEB_ONLY_COLUMNS]
    note(f"{len(result.rows)} row{'' if len(result.rows) == 1 else 's'}"
         + (f" (link column{'s' if len(hidden) > 1 else ''} {', '.join(hidden)} shown in `tgstore serve` and "
            "--json)" if hidden else ""))


@command(app, "queries")
def queries_command(as_json: JsonOption = False) -> None:
    """List the named SQL queries (same as `tgstore query --list`)."""
    if as_json:
        from tgstore.answers.queries import queries

        return print_json(queries())
    print_query_list()


DIFF_STYLES = {"header": "bold", "add": "green", "remove": "red", "hunk": "cyan", "note": "yellow"}


@command(app)
def diff(
    a: Annotated[str, typer.Argument(help="The older commit: sha, unique sha prefix, version, or tree:<hash>.")],
    b: Annotated[str, typer.Argument(help="The newer commit.")],
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
    db = db_path()
    from tgstore.answers.diff import diff as diff_answer
    from tgstore.compare.diff import format_diff

    answer = diff_answer(open_reader(db), a, b, case=case, renderer=renderer, what=what, stages=stages,
                         spelling=spelling, suite=suite, backend=backend, context=context, ignore_names=ignore_names)
    result = answer.found
    if as_json:
        print_json(answer, indent=1)
    else:
        for style, line in format_diff(result):
            out.print(Text(safe(line), style=DIFF_STYLES.get(style, "")))
    if exit_code and result.has_changes:
        raise typer.Exit(1)


@command(app)
def serve(
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.")] = 8001,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open a web browser on it.")] = False,
) -> None:
    """Browse the database in Datasette (read-only): commits, kernels, pass graphs, diffs between commits, charts,
    and every queries/*.sql as a canned query."""
    db = db_path()
    from tgstore.serve import serve_datasette

    open_db(db, migrate=False, writer=False)  # a clear error for a missing or foreign file
    try:
        serve_datasette(db, host=host, port=port, open_browser=open_browser, log=emit)
    except OSError as exc:
        raise fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
