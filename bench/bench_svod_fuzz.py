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
from tgstore.svod.readers import InterleavedTests, read_runs  # noqa: E402
from tgstore.svod.store import SvodLogError, ingest_svod_runs  # noqa: E402


def main(count: int, seed: int) -> None:
    read = refused = stored = stored_refused = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_engine(Path(tmp) / "fuzz.db")
        upgrade(engine)
        for n, (name, text) in enumerate(inputs(count, seed)):
            try:
                read_runs([(name, text)])
                read += 1
            except InterleavedTests:
                refused += 1
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50000, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
