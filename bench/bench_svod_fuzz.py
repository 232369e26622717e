"""The Svod mutation fuzz at a size beyond the tests': N seeded mutated logs read (and every 100th stored into a
real database, checked after each). Prints how many were read, refused, stored, and the time per input.

    .venv/bin/python bench/bench_svod_fuzz.py [N=50000] [SEED]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from svod_fuzz import inputs  # noqa: E402

from tgstore.db.engine import open_engine  # noqa: E402
from tgstore.db.migrate import upgrade  # noqa: E402
from tgstore.db.repair import check_database  # noqa: E402
from tgstore.svod.readers import read_runs  # noqa: E402
from tgstore.svod.store import SvodLogError, ingest_svod_runs  # noqa: E402


def main(count: int, seed: int) -> None:
    read = refused = stored = stored_refused = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_engine(Path(tmp) / "fuzz.db")
        upgrade(engine)
        for n, (name, text) in enumerate(inputs(count, seed)):
            read_runs([(name, text)])  # interleaved tests are stored too now, never refused
            read += 1
            if n % 100 == 0:
                path = Path(tmp) / name
                path.write_text(text, encoding="utf-8")
                try:
                    ingest_svod_runs(engine, path, "sum_rows")
                    stored += 1
                except SvodLogError:
                    stored_refused += 1
                if not check_database(engine, repair=False).ok:
                    raise SystemExit(f"db check failed after {name}")
    seconds = time.perf_counter() - start
    print(f"{count} inputs (seed {seed}): {read} read, {refused} refused (tests interleaved); {stored} stored, "
          f"{stored_refused} refused with nothing written; db check ok after each; {seconds:.1f} s, "
          f"{1000 * seconds / count:.2f} ms per input")
    print(f"figure svod_fuzz_inputs {count}  # each read with no traceback (a traceback ends the bench)")
    print(f"figure svod_fuzz_ms_per_input {1000 * seconds / count:.4g}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("count", type=int, nargs="?", default=50000, help="mutated logs (default 50,000)")
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("--smallest", action="store_true", help="200 inputs: a check that the bench still runs")
    args = ap.parse_args()
    main(200 if args.smallest else args.count, args.seed)
