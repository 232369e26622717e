"""One answer, three presentations: for a question of each kind, the official MCP SDK's client (talking to
`tgstore mcp` over stdio), `tgstore ... --json` and the page's `.json` twin (a real `tgstore serve`) give the same
JSON, on a database with answers (tests/sample_bundles.py: three commits, two timed) and on an empty one (migrated,
nothing ingested), where an empty answer keeps the shape of a full one and a question that cannot be answered is
the same one-line reason everywhere."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli import tgstore
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from web_server import Server, serve_sample, start_server, stop_server

from tgstore.db import open_engine, upgrade

# (MCP tool, its arguments, the command line, the page's twin or None where no page asks it)
QUESTIONS: list[tuple[str, dict[str, Any], list[str], str | None]] = [
    ("diff", {"a": "0.13.0", "b": "0.14.0", "case": "matmul", "stages": True},
     ["diff", "0.13.0", "0.14.0", "--case", "matmul", "--stages"], "/-/diff.json?a=0.13.0&b=0.14.0&case=matmul"),
    ("regressions", {}, ["regressions"], "/-/regressions.json"),
    ("slowdowns", {"a": "0.13.0", "b": "0.14.0"}, ["slowdowns", "0.13.0", "0.14.0"],
     "/-/slowdowns.json?a=0.13.0&b=0.14.0"),
    ("slowdowns", {}, ["slowdowns"], "/-/slowdowns.json"),
    ("runs", {}, ["runs"], None),
    ("query", {"name": "kernels_changed", "params": {"a": "0.13.0", "b": "0.14.0"}},
     ["query", "kernels_changed", "-p", "a=0.13.0", "-p", "b=0.14.0"], None),
    ("stages", {"case": "matmul", "commit": "0.14.0"}, ["stages", "matmul", "--commit", "0.14.0"], None),
]


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = serve_sample(tmp_path_factory.mktemp("agree-full"))
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("agree-empty")
    engine = open_engine(folder / "empty.db")
    upgrade(engine)
    engine.dispose()
    running = start_server(folder / "empty.db", folder / "serve.log")
    yield running
    stop_server(running)


def mcp_answers(db: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def ask() -> list[Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "tgstore", "mcp", "--db", str(db)])
        async with Client(params) as client:
            found = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = "".join(part.text for part in result.content)
                # the SDK puts its own words before the tool's reason
                reason = text.removeprefix(f"Error executing tool {name}: ")
                found.append(("error", reason) if result.is_error else json.loads(text))
            return found

    return asyncio.run(ask())


def cli_answer(db: Path, args: list[str]) -> Any:
    proc = tgstore(*args, "--json", "--db", db)
    if not proc.stdout.strip():
        assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        return ("error", proc.stderr.strip().removeprefix("error: "))
    return json.loads(proc.stdout)


def page_answer(server: Server, path: str) -> Any:
    response = httpx.get(server.root + path, timeout=60)
    found = response.json()
    if response.status_code >= 400:
        return ("error", found["error"])
    return found


def agree(server: Server) -> list[Any]:
    mcp = mcp_answers(server.path, [(tool, arguments) for tool, arguments, _cli, _page in QUESTIONS])
    for (tool, _arguments, command, page), answer in zip(QUESTIONS, mcp, strict=True):
        assert cli_answer(server.path, command) == answer, tool
        if page is not None:
            assert page_answer(server, page) == answer, tool
    return mcp


def test_the_mcp_client_the_cli_and_the_pages_give_the_same_answers(full: Server) -> None:
    diff, regressions, slowdowns, newest, runs, query, stages = agree(full)
    assert diff["changed"] and diff["diffs"] and slowdowns["kernels"] and slowdowns["machine"] and newest == slowdowns
    assert regressions["machine"] and regressions["message"] is None
    assert len(runs["runs"]) == 3 and query["rows"] and stages["kernels"]


def test_on_an_empty_database_the_same_shapes_and_the_same_reasons(full: Server, empty: Server) -> None:
    diff, regressions, _slowdowns, newest, runs, query, stages = agree(empty)
    full_regressions = page_answer(full, "/-/regressions.json")
    full_slowdowns = page_answer(full, "/-/slowdowns.json")
    assert set(regressions) == set(full_regressions) and regressions["regressions"] == []
    assert "no kernel timings stored" in regressions["message"]
    assert set(newest) == set(full_slowdowns) and newest["kernels"] == [] and newest["timed_commits"] == []
    assert runs == {"runs": []}
    for refused in (diff, query, stages):  # no commit 0.13.0 or case matmul: the same reason from all three
        assert refused[0] == "error" and refused[1]
