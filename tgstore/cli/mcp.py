"""`tgstore mcp`: the CLI's answers over the Model Context Protocol (stdio), for agents. Each tool is one CLI command
run with `--json` on the same database, its output parsed: an answer is the CLI's answer, byte for byte before
parsing, whatever the command (query, diff, stages, rewrites, parity, regressions, times), as one JSON text (a
command that prints JSON lines: their list); `queries` lists the canned questions. A command that fails answers
with its one-line error (the call's is_error). Needs the optional extra: `pip install 'tgstore[mcp]'` (the official
`mcp` SDK)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tgstore.cli.app import app
from tgstore.cli.common import DbOption

INSTRUCTIONS = (
    "tgstore answers questions about tinygrad's compiler pipeline across commits from a SQLite database: what a "
    "kernel's passes did at a commit (stages, rewrites), what changed between two commits (diff, spelling-blind by "
    "default), how Svod (a Rust port) differs (parity), how fast kernels ran (times, regressions), and any canned "
    "SQL question (queries lists them, query runs one). A commit is a full sha, a sha prefix or a version such as "
    "0.14.0. Every answer is what `tgstore COMMAND --json` prints.")


class CommandFailed(Exception):
    """The CLI command failed; the message is its error line."""


def cli_json(db: Path, args: list[str]) -> str:
    """`tgstore ARGS --json --db DB` as a subprocess, its output parsed: one JSON document, or (a command that prints
    JSON lines: query, stages) the list of them. A command that prints nothing failed: its last stderr line."""
    proc = subprocess.run([sys.executable, "-m", "tgstore", *args, "--json", "--db", str(db)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    out = proc.stdout.strip()
    if not out:
        raise CommandFailed((proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1])
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return [json.loads(line) for line in out.splitlines() if line.strip()]


def option(flag: str, value: Any) -> list[str]:
    """`[flag, value]`, or nothing when the value is not given (None or "")."""
    return [] if value is None or value == "" else [flag, str(value)]


def switch(flag: str, on: bool) -> list[str]:
    return [flag] if on else []


def build_server(db: Path) -> str:
    """The MCP server with one tool per question kind."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2
    except ImportError:  # pragma: no cover - mcp 1: the same server under its earlier name
        from mcp.server.fastmcp import FastMCP as Server

    try:
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # pragma: no cover - mcp 1
        from mcp.server.fastmcp.exceptions import ToolError

    server = Server("tgstore", instructions=INSTRUCTIONS)

    def answer(args: list[str]) -> str:
        """The command's JSON as one text (a list for JSON lines): what the CLI printed, parsed and written again."""
        try:
            return json.dumps(cli_json(db, args), ensure_ascii=False)
        except CommandFailed as exc:
            raise ToolError(str(exc)) from None

    @server.tool(structured_output=False)
    def queries() -> str:
        """The canned SQL questions (queries/*.sql): name, title, description and parameters of each."""
        from tgstore.queries import load_queries

        return json.dumps([{"name": q.name, "title": q.title, "description": q.description,
                            "parameters": [{"name": p.name, "description": p.description, "optional": p.optional}
                                           for p in q.parameters]} for q in load_queries().values()])

    @server.tool(structured_output=False)
    def query(name: str, params: dict[str, str] | None = None) -> str:
        """Run a canned query (see `queries`) with its parameters, e.g. name="kernels_changed",
        params={"a": "0.13.0", "b": "0.14.0"}: its rows, as `tgstore query NAME -p k=v --json` prints them."""
        args = ["query", name]
        for key, value in (params or {}).items():
            args += ["-p", f"{key}={value}"]
        return answer(args)

    @server.tool(structured_output=False)
    def diff(a: str, b: str, case: str | None = None, renderer: str | None = None, stages: bool = False,
             spelling: str = "ignore", what: str = "all") -> str:
        """What changed between commits a and b (`tgstore diff --json`): cases and kernels changed, unified diffs of
        kernel ASTs and generated sources, with stages=True each kernel's first differing pass. Spelling-blind by
        default (spelling="raw": compared as stored)."""
        return answer(["diff", a, b, *option("--case", case), *option("--renderer", renderer),
                             *switch("--stages", stages), "--spelling", spelling, "--what", what])

    @server.tool(structured_output=False)
    def stages(case: str, commit: str | None = None, kernel: int | None = None, renderer: str | None = None,
               schedule: bool = False) -> str:
        """The passes each kernel of a case went through at a commit, with node counts (`tgstore stages --json`)."""
        return answer(["stages", case, *option("--commit", commit), *option("--kernel", kernel),
                             *option("--renderer", renderer), *switch("--schedule", schedule)])

    @server.tool(structured_output=False)
    def rewrites(case: str, commit: str | None = None, kernel: int | None = None, pass_name: str | None = None,
                 renderer: str | None = None) -> str:
        """The rewrite steps inside a case's passes at a commit: each rule that matched (file:line, UPat) and the
        node before and after (`tgstore rewrites --json`)."""
        return answer(["rewrites", case, *option("--commit", commit), *option("--kernel", kernel),
                             *option("--pass", pass_name), *option("--renderer", renderer)])

    @server.tool(structured_output=False)
    def parity(case: str, commit: str | None = None, svod_run: int | None = None, renderer: str | None = None,
               rules: bool = False) -> str:
        """Svod against tinygrad for a case, stage by stage (`tgstore parity --json`); rules=True compares rule
        activity per pass instead."""
        return answer(["parity", case, *option("--commit", commit), *option("--svod", svod_run),
                             *option("--renderer", renderer), *switch("--rules", rules)])

    @server.tool(structured_output=False)
    def regressions(metric: str = "time", case: str | None = None, since: str | None = None,
                    machine: str | None = None) -> str:
        """Steps in the stored kernel times (metric "time") or compile times ("compile") over history, on one
        machine, with their commits, size and confidence (`tgstore regressions --json`)."""
        return answer(["regressions", "--metric", metric, *option("--case", case), *option("--since", since),
                             *option("--machine", machine)])

    @server.tool(structured_output=False)
    def times(case: str, commit: str | None = None, against: str | None = None, machine: str | None = None,
              compile: bool = False) -> str:
        """Each kernel's best and median time at a commit (or, with against, beside another commit's on the same
        machine); compile=True: how long scheduling and lowering took (`tgstore times --json`)."""
        return answer(["times", case, *option("--commit", commit), *option("--against", against),
                             *option("--machine", machine), *switch("--compile", compile)])

    @server.tool(structured_output=False)
    def blame(case: str, kernel: int, pass_name: str | None = None, renderer: str = "C", spelling: str = "ignore",
              commit: str | None = None, why: bool = False) -> str:
        """The stored commits where a pass's output changed for a case's kernel, in git order, with node counts,
        a text diff and gaps of unstored commits (`tgstore blame --json`); why=True adds each change's rules and
        hunks (needs the tinygrad repository, TGSTORE_REPO)."""
        return answer(["blame", case, "--kernel", str(kernel), *option("--pass", pass_name),
                       *option("--renderer", renderer), "--spelling", spelling, *option("--commit", commit),
                       *switch("--why", why)])

    @server.tool(structured_output=False)
    def why(case: str, kernel: int, pass_name: str, commit: str, parent: str | None = None, renderer: str = "C",
            occurrence: int = 1) -> str:
        """Why a pass's output changed for a case's kernel at a commit (since its parent, or the stored commit
        before): the rules whose matches differ, ranked, each with its UPat, file:line at both commits and the
        hunks of the git diff touching it; else the changed files the run read (`tgstore why --json`)."""
        return answer(["why", case, "--kernel", str(kernel), "--pass", pass_name, "--commit", commit,
                       *option("--parent", parent), *option("--renderer", renderer),
                       "--occurrence", str(occurrence)])

    @server.tool(structured_output=False)
    def repro(case: str, kernel: int, commit: str | None = None, pass_name: str | None = None,
              renderer: str = "C") -> str:
        """A standalone Python script reproducing a stored kernel at a commit with tinygrad's own lowering: it
        prints the graph after pass_name and the generated source (`tgstore repro --json`: the script in
        "script")."""
        return answer(["repro", case, "--kernel", str(kernel), *option("--commit", commit),
                       *option("--pass", pass_name), *option("--renderer", renderer)])

    return server


@app.command("mcp")
def mcp(db: DbOption = Path("tgstore.db")) -> None:
    """Serve the CLI's answers (query, queries, diff, stages, rewrites, parity, regressions, times, blame, why,
    repro) to an agent over
    the Model Context Protocol on stdin/stdout. Each tool runs the CLI command with --json on DB. Needs
    `pip install 'tgstore[mcp]'`."""
    from tgstore.cli.common import fail

    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        raise fail("tgstore mcp needs the mcp SDK: pip install 'tgstore[mcp]'") from None
    if not db.is_file():
        raise fail(f"no database at {db}: `tgstore ingest --db {db}` makes one")
    build_server(db.resolve()).run("stdio")

