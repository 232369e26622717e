"""The cost of recording rewrite steps (`--rewrites N`, on by default at 20 a pass): extraction CPU seconds (the
child's user+system time), bundle bytes and database bytes, with and without steps.

    python bench/bench_rewrites.py [--tinygrad DIR] [--cases matmul,softmax,...|all] [--rewrites 20] [--repeats 2]
                                   [--jobs 1]
    python bench/bench_rewrites.py --smallest

The runs alternate (without, with, without, ...); the figure is the median over the pairs of each run's ratio.
`--cases all` is the whole built-in suite. With steps recorded, the database also says how many steps each pass
made (`total`, recorded whatever the cap): the share of passes a cap N would record whole is printed for a few N.
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import SMALLEST_CASES, SMALLEST_HELP, case_file

HEAVY = "matmul,softmax,layernorm,conv2d,transformer_block,sum_rows,mlp_gelu,argmax,transcendental,sdpa_causal"


def cpu_seconds(cmd: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tinygrad", type=Path, default=None, help="default: the installed tinygrad")
    ap.add_argument("--cases", default=HEAVY)
    ap.add_argument("--rewrites", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    ap.add_argument("--jobs", type=int, default=1,
                    help="the extraction's worker processes (default 1: the figure is what recording steps costs, not "
                         "how the work was spread; with more, each worker's records also travel to the writer)")
    args = ap.parse_args()
    if args.smallest:
        args.cases, args.repeats = SMALLEST_CASES, 1
    tgstore = [sys.executable, "-m", "tgstore"]
    where = ["--tinygrad", str(args.tinygrad)] if args.tinygrad else []
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        cases = None if args.cases == "all" else case_file(args.cases.split(","), tmpdir / "cases.py")
        figures: dict[int, dict[str, float]] = {}
        runs: dict[int, list[float]] = {0: [], args.rewrites: []}
        for _ in range(args.repeats):  # alternated, so that both see the same machine
            for rewrites in runs:
                runs[rewrites].append(cpu_seconds([*tgstore, "extract", "-o", str(tmpdir / f"b{rewrites}.jsonl"),
                                                   *where, *(["--cases", str(cases)] if cases else []),
                                                   "--rewrites", str(rewrites),
                                                   "--jobs", str(args.jobs)]))
        for rewrites, seconds in runs.items():
            bundle, db = tmpdir / f"b{rewrites}.jsonl", tmpdir / f"d{rewrites}.db"
            ingest = cpu_seconds([*tgstore, "ingest", "--db", str(db), "--bundle", str(bundle)])
            figures[rewrites] = {"cpu": min(seconds), "bundle": bundle.stat().st_size, "db": db.stat().st_size,
                                 "ingest": ingest}
            print(f"rewrites={rewrites}: extraction CPU {min(seconds):.2f} s (runs: "
                  f"{', '.join(f'{s:.2f}' for s in seconds)}), bundle {bundle.stat().st_size:,} B, ingest CPU "
                  f"{ingest:.2f} s, database {db.stat().st_size:,} B")
        off, on = figures[0], figures[args.rewrites]
        coverage(tmpdir / f"d{args.rewrites}.db", args.rewrites)
        # each run with steps over the run without it just before: on a machine whose speed drifts (a shared host),
        # neighbours see the same machine; their median is the figure, the least runs' ratio is printed beside it
        paired = sorted(b / a for a, b in zip(runs[0], runs[args.rewrites], strict=True))
        print(f"# paired ratios: {', '.join(f'{r:.3f}' for r in paired)}; least over least: "
              f"{on['cpu'] / off['cpu']:.3f}")
        print(f"figure rewrites_cpu_ratio {statistics.median(paired):.3f}  # extraction CPU with steps over without, "
              "median of the paired runs; target: within the noise of extraction (<= 1.05)")
        print(f"figure rewrites_bundle_ratio {on['bundle'] / off['bundle']:.2f}  # reported")
        print(f"figure rewrites_db_ratio {on['db'] / off['db']:.2f}  # reported")
        print(f"figure rewrites_ingest_ratio {on['ingest'] / off['ingest']:.2f}  # reported")


def coverage(db: Path, recorded: int) -> None:
    """Steps per pass (every pass with steps recorded, distinct pass lists), and the share of passes a cap would
    record whole."""
    with sqlite3.connect(db) as conn:
        totals = sorted(json.loads(text)["total"] for (text,) in conn.execute(
            "SELECT b.text FROM pass_entries pe JOIN blobs b ON b.id = pe.rewrites_blob_id"))
    if not totals:
        return
    steps = sum(totals)
    print(f"# {len(totals):,} passes, {steps:,} steps (recorded up to {recorded} a pass); steps a pass: median "
          f"{totals[len(totals) // 2]}, 99th percentile {totals[int(0.99 * (len(totals) - 1))]}, most {totals[-1]}")
    for cap in (20, 50, 100, 200, 500):
        whole = sum(t <= cap for t in totals) / len(totals)
        kept = sum(min(t, cap) for t in totals) / steps
        print(f"figure rewrites_passes_whole_at_{cap} {whole:.4f}  # share of passes a cap of {cap} records whole "
              f"({kept:.1%} of all steps)")


if __name__ == "__main__":
    main()
