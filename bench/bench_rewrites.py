"""The cost of recording rewrite steps (`--rewrites N`, on by default at 20 a pass): extraction CPU seconds (the
child's user+system time), bundle bytes and database bytes, with and without steps.

    python bench/bench_rewrites.py [--tinygrad DIR] [--cases matmul,softmax,...] [--rewrites 20] [--repeats 2]
                                   [--jobs 1]
    python bench/bench_rewrites.py --smallest

The runs alternate (without, with, without, ...); the figure is the median over the pairs of each run's ratio.
"""

from __future__ import annotations

import argparse
import resource
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
        cases = case_file(args.cases.split(","), tmpdir / "cases.py")
        figures: dict[int, dict[str, float]] = {}
        runs: dict[int, list[float]] = {0: [], args.rewrites: []}
        for _ in range(args.repeats):  # alternated, so that both see the same machine
            for rewrites in runs:
                runs[rewrites].append(cpu_seconds([*tgstore, "extract", "-o", str(tmpdir / f"b{rewrites}.jsonl"),
                                                   *where, "--cases", str(cases), "--rewrites", str(rewrites),
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


if __name__ == "__main__":
    main()
