"""A 300-kernel Svod test log (the worked example's kernel 300 times, every switch on): the time to ingest it
against the time to read it and `json.loads` its event lines, and the peak memory. Target (issue 27): within 8x,
under 250 MB. Each measurement runs in a fresh process so peak memory is its own.

    .venv/bin/python bench/bench_svod_log.py [KERNELS=300]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"


def baseline(path: Path) -> float:
    start = time.perf_counter()
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("{"):
            json.loads(line)
    return time.perf_counter() - start


def ingest(path: Path) -> float:
    from tgstore.db.engine import open_engine
    from tgstore.db.migrate import upgrade
    from tgstore.svod.store import ingest_svod_runs

    with tempfile.TemporaryDirectory() as tmp:
        engine = open_engine(Path(tmp) / "b.db")
        upgrade(engine)
        start = time.perf_counter()
        ingest_svod_runs(engine, path, "sum_rows")
        return time.perf_counter() - start


def child(what: str, path: str) -> None:
    seconds = baseline(Path(path)) if what == "baseline" else ingest(Path(path))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb}))


def main(kernels: int) -> None:
    sys.path.insert(0, str(TESTS))
    from svod_fixtures import worked_example_log

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        path.write_text(worked_example_log(kernels=kernels), encoding="utf-8")
        size = path.stat().st_size / 1e6
        runs = {}
        for what in ("baseline", "ingest"):
            proc = subprocess.run([sys.executable, __file__, "--child", what, str(path)], check=True,
                                  capture_output=True, text=True)
            runs[what] = json.loads(proc.stdout)
    ratio = runs["ingest"]["seconds"] / runs["baseline"]["seconds"]
    print(f"{kernels} kernels, {size:.1f} MB: read + json.loads {runs['baseline']['seconds']:.2f} s; ingest "
          f"{runs['ingest']['seconds']:.2f} s")
    print(f"figure svod_log_ingest_ratio {ratio:.4g}  # target <= 8 (ingest over read + json.loads of its event lines)")
    print(f"figure svod_log_peak_mb {runs['ingest']['peak_mb']:.4g}  # target <= 250")
    print(f"figure svod_log_mb {size:.4g}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        import argparse

        ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("kernels", type=int, nargs="?", default=300, help="kernels in the log (default 300)")
        ap.add_argument("--smallest", action="store_true", help="3 kernels: a check that the bench still runs")
        args = ap.parse_args()
        main(3 if args.smallest else args.kernels)
