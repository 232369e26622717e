"""`tgstore mcp` (cli/mcp.py) driven by the official MCP SDK's own client over stdio, on two real releases' database
(tests/two_releases_db.py: 0.13.0 and 0.14.0, timed, a Svod log): the client lists the tools, and for one question
of each kind (a canned query, a diff, stages, rewrite steps, Svod parity, regressions, kernel times) gets what the
CLI's --json prints for it; a bad question gets the CLI's one-line error."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from cli import tgstore
from mcp import Client  # the test install has the mcp extra (pyproject's test extra): missing, this fails
from mcp.client.stdio import StdioServerParameters

TOOLS = {"queries", "query", "runs", "diff", "stages", "rewrites", "parity", "regressions", "slowdowns", "times",
         "compile_times", "blame", "why", "repro"}


def cli(db: Path, *args: str) -> Any:
    """What `tgstore ARGS --json` prints, parsed (JSON lines: their list)."""
    proc = tgstore(*args, "--json", "--db", db)
    assert proc.stdout.strip(), proc.stderr
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


async def ask(db: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], list[Any]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "tgstore", "mcp", "--db", str(db)])
    async with Client(params) as client:
        from tgstore import __version__

        assert client.server_info is not None and client.server_info.version == __version__  # not empty
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        answers = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = "".join(part.text for part in result.content)
            answers.append(("error", text) if result.is_error else json.loads(text))
        return listed, answers


def test_an_mcp_client_gets_the_clis_answers(two_releases_db: Path) -> None:
    db = two_releases_db
    questions = [  # (tool, its arguments, the same question on the command line)
        ("query", {"name": "kernels_changed", "params": {"a": "0.13.0", "b": "0.14.0"}},
         ["query", "kernels_changed", "-p", "a=0.13.0", "-p", "b=0.14.0"]),
        ("diff", {"a": "0.13.0", "b": "0.14.0", "case": "softmax", "stages": True},
         ["diff", "0.13.0", "0.14.0", "--case", "softmax", "--stages"]),
        ("stages", {"case": "matmul", "commit": "0.14.0"}, ["stages", "matmul", "--commit", "0.14.0"]),
        ("rewrites", {"case": "matmul", "commit": "0.14.0", "kernel": 0},
         ["rewrites", "matmul", "--commit", "0.14.0", "--kernel", "0"]),
        ("parity", {"case": "sum_rows", "commit": "0.14.0"}, ["parity", "sum_rows", "--commit", "0.14.0"]),
        ("regressions", {"metric": "time"}, ["regressions", "--metric", "time"]),
        ("times", {"case": "matmul", "commit": "0.14.0", "against": "0.13.0"},
         ["times", "matmul", "--commit", "0.14.0", "--against", "0.13.0"]),
        ("blame", {"case": "softmax", "kernel": 0, "pass_name": "postopt symbolic"},
         ["blame", "softmax", "--kernel", "0", "--pass", "postopt symbolic"]),
        ("why", {"case": "softmax", "kernel": 0, "pass_name": "postopt symbolic", "commit": "0.14.0"},
         ["why", "softmax", "--kernel", "0", "--pass", "postopt symbolic", "--commit", "0.14.0"]),
        ("repro", {"case": "softmax", "kernel": 0, "commit": "0.14.0", "pass_name": "expander"},
         ["repro", "softmax", "--kernel", "0", "--commit", "0.14.0", "--pass", "expander"]),
    ]
    listed, answers = asyncio.run(ask(db, [(tool, arguments) for tool, arguments, _cli in questions]
                                      + [("query", {"name": "no_such_query"}), ("queries", {})]))
    assert set(listed) == TOOLS
    # each tool's schema is its answer function's signature, less the database it reads
    import inspect

    from tgstore.answers.stages import stages

    assert set(listed["stages"]["properties"]) == set(inspect.signature(stages).parameters) - {"db"}
    assert listed["stages"]["required"] == ["case"]
    for (tool, _arguments, command), answer in zip(questions, answers, strict=False):
        assert answer == cli(db, *command), tool
    # the answers are about the data: not empty, not errors
    assert answers[0]["rows"] and answers[1]["stages"] and answers[2]["kernels"] and answers[4]["kernels"]
    assert answers[7]["changes"] and answers[8]["changed"] and "def main" in answers[9]["script"]
    error, listed_queries = answers[-2], answers[-1]
    assert error[0] == "error" and "no query named 'no_such_query'" in error[1]
    assert "kernels_changed" in {q["name"] for q in listed_queries["queries"]}
