"""`tgstore mcp`: tgstore's answers over the Model Context Protocol (stdio), for agents. Each tool is one question of
tgstore/answers/, called in this process on one read-only connection: its name, description and input schema are
the function's own (its name, docstring and signature, less the `db` it reads), its answer the value's `to_json()`
as one JSON text: what `tgstore COMMAND --json` prints and a page's `.json` twin serves. A question that cannot be
answered answers its one-line reason (the call's is_error). Needs the optional extra: `pip install 'tgstore[mcp]'`
(the official `mcp` SDK)."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgstore.cli.app import app
from tgstore.cli.common import db_path

INSTRUCTIONS = (
    "tgstore answers questions about tinygrad's compiler pipeline across commits from a SQLite database: which runs "
    "are stored (runs), what a kernel's passes did at a commit (stages, rewrites), what changed between two commits "
    "(diff, spelling-blind by default), how Svod (a Rust port) differs (parity), how fast kernels ran and compiled "
    "(times, compile_times, slowdowns, regressions), which commit changed a kernel's pass and why (blame, why), a "
    "standalone script reproducing a kernel (repro), and any canned SQL question (queries lists them, query runs "
    "one). A commit is a full sha, a sha prefix or a version such as 0.14.0. Every answer is what "
    "`tgstore COMMAND --json` prints.")


def questions() -> list[Callable[..., Any]]:
    """The questions served, one tool each."""
    from tgstore.answers import (
        blame,
        diff,
        parity,
        queries,
        regressions,
        repro,
        rewrites,
        runs,
        slowdowns,
        stages,
        times,
    )

    return [queries.queries, queries.query, runs.runs, diff.diff, stages.stages, rewrites.rewrites, parity.parity,
            regressions.regressions, slowdowns.slowdowns, times.times, times.compile_times, blame.blame, blame.why,
            repro.repro]


def tool(question: Callable[..., Any], reader: Callable[[], Any], error: type[Exception]) -> Callable[..., str]:
    """`question` as an MCP tool: the same name, docstring and parameters (types resolved, `db` left out: the tool
    reads the served database), answering `to_json()` as JSON text; Unanswerable becomes the SDK's tool error."""
    from tgstore.answers.base import Unanswerable

    signature = inspect.signature(question)
    hints = typing.get_type_hints(question)
    reads = "db" in signature.parameters
    parameters = [p.replace(annotation=hints.get(p.name, Any)) for p in signature.parameters.values()
                  if p.name != "db" and p.name != "preferred"]

    def call(**arguments: Any) -> str:
        try:
            answer = question(reader(), **arguments) if reads else question(**arguments)
        except Unanswerable as exc:
            raise error(str(exc)) from None
        return json.dumps(answer.to_json(), ensure_ascii=False)

    call.__name__ = question.__name__
    call.__doc__ = question.__doc__
    call.__signature__ = signature.replace(parameters=parameters, return_annotation=str)  # type: ignore[attr-defined]
    return call


def build_server(db: Path):
    """The MCP server with one tool per question, reading `db` through one read-only connection."""
    from tgstore import __version__
    from tgstore.db.read import open_reader

    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # pragma: no cover - mcp 1: the same server under its earlier name
        from mcp.server.fastmcp import FastMCP as Server
        from mcp.server.fastmcp.exceptions import ToolError

    connection: list[Any] = []

    def reader() -> Any:
        if not connection:  # opened at the first call: the server answers `initialize` without the database
            connection.append(open_reader(db))
        return connection[0]

    try:
        server = Server("tgstore", version=__version__, instructions=INSTRUCTIONS)
    except TypeError:  # pragma: no cover - an SDK without a version parameter
        server = Server("tgstore", instructions=INSTRUCTIONS)
    for question in questions():
        server.tool(structured_output=False)(tool(question, reader, ToolError))
    return server


@app.command("mcp")
def mcp() -> None:
    """Serve tgstore's answers (queries, query, runs, diff, stages, rewrites, parity, regressions, slowdowns,
    times, compile_times, blame, why, repro) to an agent over the Model Context Protocol on stdin/stdout, read from
    DB in this
    process; each answer is what the command's --json prints. Needs `pip install 'tgstore[mcp]'`."""
    db = db_path()
    from tgstore.cli.common import fail

    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        raise fail("tgstore mcp needs the mcp SDK: pip install 'tgstore[mcp]'") from None
    if not db.is_file():
        raise fail(f"no database at {db}: `tgstore ingest --db {db}` makes one")
    build_server(db.resolve()).run("stdio")
