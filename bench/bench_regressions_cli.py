"""`tgstore regressions --json` end to end, from the database: the CLI's wall time and peak memory on databases of
synthetic timings written into the real timing tables through the store code (`store.timings.store_timings`, as a
sweep writes them: a machine, one timing session per commit, each kernel's best, median, spread and 10 runs).

    .venv/bin/python bench/bench_regressions_cli.py                 # 10,000 x 1 and 1,000 x 100 (targets 1 s, 10 s)
    .venv/bin/python bench/bench_regressions_cli.py --smallest      # 200 x 1 and 50 x 5

Each kernel's level is 100 us x a per-kernel factor with 2% noise per commit; its runs are the level times
1 + |N(0, 0.5%)|, rounded to 10 ns (the timer's resolution: runs tie); every kernel steps x1.5 at a fifth of the way,
and one in ten back at half. Commits are rows of tinygrad_commits ranked once (the store's rank_commits), not git
commits. Figures: regressions_cli_seconds_{commits}x{kernels} (median of 3 runs of the CLI as a new process, after one
warm run), regressions_cli_peak_mb_{commits}x{kernels} (the process' max resident set), targets <= 1 s and <= 10 s,
<= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from common import figure  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from tgstore.bundle import Bundle  # noqa: E402
from tgstore.db import open_engine, upgrade  # noqa: E402
from tgstore.db.models.run_tables import Suite, TinygradCommit  # noqa: E402
from tgstore.store.commits import rank_commits  # noqa: E402
from tgstore.store.rows import case_ids, get_or_create  # noqa: E402
from tgstore.store.timings import store_timings  # noqa: E402

TARGETS = {(10_000, 1): 1.0, (1_000, 100): 10.0}
PEAK_MB = 300
MACHINE = {"fingerprint": "bench0000000000a", "hostname": "bench", "cpu_model": "synthetic", "cores": 2,
           "device": "CPU", "compiler": "clang", "compiler_version": "14"}


def build(path: Path, commits: int, kernels: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    path.unlink(missing_ok=True)
    engine = open_engine(path)
    upgrade(engine)
    factors = np.exp(rng.normal(0, 0.5, kernels))
    at, back = commits // 5, commits // 2
    with engine.begin() as conn:
        conn.execute(insert(TinygradCommit), [
            {"sha": f"{i:040x}", "tree_hash": f"{i:064x}", "subject": f"commit {i}", "git_position": i,
             "committed_at": f"2026-01-01T00:00:{i % 60:02d}+00:00"} for i in range(commits)])
        rank_commits(conn)
        ids = dict(conn.exec_driver_sql("SELECT sha, id FROM tinygrad_commits").fetchall())
        suite_id = get_or_create(conn, Suite, {"hash": "bench-suite"}, {"name": "bench"})
        cases = case_ids(conn, ["bench"])
        for i in range(commits):
            items = []
            for k in range(kernels):
                step = 1.5 if i >= at and not (k % 10 == 0 and i >= back) else 1.0
                level = 1e5 * factors[k] * step * np.exp(rng.normal(0, 0.02))
                runs = sorted(int(round(v, -1)) for v in level * (1 + np.abs(rng.normal(0, 0.005, 10))))
                items.append({"position": k, "nodes": [], "root_op": "SINK", "timing": {
                    "status": "ok", "program": f"r_{k}", "ns_min": runs[0], "ns_median": runs[5],
                    "ns_max": runs[-1], "spread": (runs[2] - runs[0]) / runs[0], "samples": runs}})
            bundle = Bundle(Path("bench"), {"backend": "CPU", "timing": {
                "machine": MACHINE, "timer": "_time_program", "runs": 10, "warmup": 2, "calibration_ns": 1_000_000},
                "started_at": "2026-01-01T00:00:00+00:00"}, cases=[{"name": "bench", "schedule": items}], end={})
            store_timings(conn, bundle, commit_id=ids[f"{i:040x}"], suite_id=suite_id, run_id=None,
                          case_ids=cases, now="2026-01-01T00:00:00+00:00")
    engine.dispose()


def run_cli(db: Path) -> tuple[float, float, int]:
    """(seconds, peak MB of the child, regressions listed) of one `tgstore regressions --json`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "tgstore"), "regressions", "--db", str(db), "--json"],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = json.loads(proc.stdout)
    return seconds, max(peak, before) / 1024, len(report["regressions"]) + len(report["common_shifts"])


def main() -> None:
    ap = argparse.ArgumentParser(prog="bench_regressions_cli.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--smallest", action="store_true", help="200 x 1 and 50 x 5")
    ap.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the databases are built")
    args = ap.parse_args()
    shapes = [(200, 1), (50, 5)] if args.smallest else list(TARGETS)
    for commits, kernels in shapes:
        db = args.dir / f"bench-regressions-{commits}x{kernels}-{os.getpid()}.db"
        started = time.perf_counter()
        build(db, commits, kernels)
        print(f"built {db} in {time.perf_counter() - started:.1f} s", flush=True)
        run_cli(db)  # warm: the page cache, the interpreter's imports
        runs = [run_cli(db) for _ in range(3)]
        target = TARGETS.get((commits, kernels))
        figure(f"regressions_cli_seconds_{commits}x{kernels}", statistics.median(r[0] for r in runs),
               f"target <= {target} s; runs {', '.join(f'{r[0]:.2f}' for r in runs)}; {runs[0][2]} listed")
        figure(f"regressions_cli_peak_mb_{commits}x{kernels}", max(r[1] for r in runs), f"target <= {PEAK_MB} MB")
        db.unlink()


if __name__ == "__main__":
    main()
