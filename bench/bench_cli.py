"""How fast the command line and `tgstore mcp` answer: prints `figure NAME VALUE` lines (wall seconds, the best of
--repeat runs, each a fresh process but the MCP calls).

    .venv/bin/python bench/bench_cli.py [--db tgstore.db] [--repeat 7]
    .venv/bin/python bench/bench_cli.py --smallest     # on the tests' hand-written sample database, 2 repeats

The database: --db (default: the README's tgstore.db at the repository root, `tgstore ingest --db tgstore.db`), or,
when it is absent or with --smallest, the tests' sample database (tests/sample_bundles.py) built in a temporary
folder. Targets, idle (docs: issue 46):

- cli_help_seconds: `tgstore --help` (target <= 0.2).
- cli_runs_seconds: `tgstore runs` (target <= 0.25).
- cli_query_seconds: `tgstore query case_at_commit -p commit=C -p case_name=add` on the first stored run (<= 0.25).
- cli_ingest_svod_empty_seconds: `ingest-svod` of an empty file, refused (exit 2) before SQLAlchemy loads (<= 0.3).
- each CLI figure also as NAME_cpu_seconds: user + system CPU of the process (a loaded machine stretches wall time).
- mcp_call_seconds: the slowest of --repeat `stages` and `query` tool calls after the first, through the official
  MCP SDK's client over stdio (<= 0.05); mcp_first_call_seconds: the first call (the server's imports).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from common import SMALLEST_HELP, figure  # noqa: E402

TARGETS = {"cli_help_seconds": 0.2, "cli_runs_seconds": 0.25, "cli_query_seconds": 0.25,
           "cli_ingest_svod_empty_seconds": 0.3, "mcp_call_seconds": 0.05}


def best_wall(args: list[str], repeat: int, expect: int = 0) -> tuple[float, float]:
    """The fastest of `repeat` runs of `python -m tgstore ARGS` (its exit status checked): wall seconds, and the
    CPU seconds (user + system) of the fastest by CPU, which a busy machine inflates less than wall time."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tgstore", *args], capture_output=True, text=True, cwd=ROOT)
        best = min(best, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best_cpu = min(best_cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != expect:
            raise SystemExit(f"tgstore {' '.join(args)}: exit {done.returncode}: {done.stderr[-500:]}")
    return best, best_cpu


async def mcp_calls(db: Path, repeat: int, case: str, commit: str) -> tuple[float, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "tgstore", "mcp", "--db", str(db)])
    async with Client(params) as client:
        start = time.perf_counter()
        await client.call_tool("runs", {})
        first = time.perf_counter() - start
        slowest = 0.0
        for _ in range(repeat):
            for name, arguments in (("stages", {"case": case, "commit": commit}),
                                    ("query", {"name": "case_at_commit",
                                               "params": {"commit": commit, "case_name": case}})):
                start = time.perf_counter()
                result = await client.call_tool(name, arguments)
                slowest = max(slowest, time.perf_counter() - start)
                if result.is_error:
                    raise SystemExit(f"mcp {name}: {result.content}")
        return first, slowest


def sample_db(folder: Path) -> Path:
    from sample_bundles import build_sample_db

    return build_sample_db(folder).path


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench_cli.py", description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=ROOT / "tgstore.db", help="the database (default: the README's)")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command; the best is the figure")
    parser.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    args = parser.parse_args()
    repeat = 2 if args.smallest else args.repeat
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        folder = Path(tmp)
        db = sample_db(folder) if args.smallest or not args.db.is_file() else args.db.resolve()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            commit, case = conn.execute(
                'SELECT r.sha, c."case" FROM v_runs r JOIN v_run_cases c ON c.run_id = r.run_id '
                "WHERE r.is_current = 1 ORDER BY c.\"case\" = 'add' DESC, r.history_rank LIMIT 1").fetchone()
        print(f"database {db} (case {case} at {commit[:12]}); best of {repeat}, wall seconds", flush=True)
        empty = folder / "empty.log"
        empty.write_text("")
        found = {
            "cli_help_seconds": best_wall(["--help"], repeat),
            "cli_runs_seconds": best_wall(["runs", "--db", str(db)], repeat),
            "cli_query_seconds": best_wall(["query", "case_at_commit", "-p", f"commit={commit}", "-p",
                                            f"case_name={case}", "--db", str(db)], repeat),
            "cli_ingest_svod_empty_seconds": best_wall(["ingest-svod", str(empty), "--case", case, "--db",
                                                        str(folder / "new.db")], repeat, expect=2),
        }
        first, mcp_call = asyncio.run(mcp_calls(db, repeat, case, commit))
    for name, (wall, cpu) in found.items():
        figure(name, wall, f"target <= {TARGETS[name]}")
        figure(name.replace("_seconds", "_cpu_seconds"), cpu, "user + system")
    figure("mcp_call_seconds", mcp_call, f"target <= {TARGETS['mcp_call_seconds']}")
    figure("mcp_first_call_seconds", first, "the server's imports and the database opened")


if __name__ == "__main__":
    main()
