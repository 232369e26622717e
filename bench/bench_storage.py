"""What a commit costs in the database, in full and when little changed: prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_storage.py [--bundle B.jsonl] [--smallest]   # default: extract the installed tinygrad

From one real bundle (the built-in suite, default renderers and stages) it makes three commits and stores them in
turn: the bundle as commit A; the same output as commit B (an unchanged commit: what most commits of a sweep are);
and as commit C with one pattern's match count changed in one case (a commit that changes only how often a rule
fires). Bytes are SQLite's payload of every table and index (the `dbstat` virtual table), so they count rows, not
pages; the rows added per table are printed too.

- full_commit_bytes: A, the first commit of a database (everything new), with the default stages.
- stages_over_no_stages_ratio: A over the same extraction with `--stages none` stored alone (target <= 3; only when
  the bundle is extracted here).
- unchanged_commit_bytes: B over A (target <= 2,000).
- match_counts_only_commit_bytes: C over B (target <= 10,000).
"""

from __future__ import annotations

import argparse
import copy
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import SMALLEST_CASES, SMALLEST_HELP, case_file, figure  # noqa: E402

from tgstore.bundle import read_bundle  # noqa: E402
from tgstore.db import open_engine, upgrade  # noqa: E402
from tgstore.store.ingest import ingest_bundle  # noqa: E402

BY_OBJECT: dict[str, int] = {}


def payload(db: Path) -> tuple[int, dict[str, int]]:
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        total = conn.execute("SELECT sum(payload) FROM dbstat").fetchone()[0]
        BY_OBJECT.clear()
        BY_OBJECT.update(conn.execute("SELECT name, sum(payload) FROM dbstat GROUP BY name").fetchall())
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%'")]
        rows = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    return total, rows


def as_commit(bundle, sha: str):
    """The bundle's content as another git commit (what a sweep sees for a commit that changed nothing)."""
    other = copy.copy(bundle)
    other.header = copy.deepcopy(bundle.header)
    other.header["tinygrad"]["git"] = {"sha": sha, "date": "2026-01-01T12:00:00+00:00", "subject": "bench",
                                       "dirty": False, "position": 1}
    return other


def store(db: Path, bundle) -> tuple[int, dict[str, int]]:
    engine = open_engine(db)
    before, rows_before = payload(db)
    objects_before = dict(BY_OBJECT)
    ingest_bundle(engine, bundle)
    engine.dispose()
    after, rows_after = payload(db)
    grown = {k: v - objects_before.get(k, 0) for k, v in BY_OBJECT.items() if v != objects_before.get(k, 0)}
    print(f"#   bytes by table and index: {json.dumps(grown)}")
    return after - before, {t: rows_after[t] - rows_before.get(t, 0) for t in rows_after
                            if rows_after[t] != rows_before.get(t, 0)}


def fresh_db(db: Path) -> Path:
    engine = open_engine(db)
    upgrade(engine)
    engine.dispose()
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, help="a bundle to start from (default: extract the installed tinygrad)")
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, no_stages = args.bundle, None
        if path is None:
            path, no_stages = Path(tmp) / "b.jsonl", Path(tmp) / "n.jsonl"
            cases = (["--cases", str(case_file(SMALLEST_CASES.split(","), Path(tmp) / "smallest.py"))]
                     if args.smallest else [])
            subprocess.run([sys.executable, "-m", "tgstore", "extract", *cases, "-o", str(path)], check=True)
            subprocess.run([sys.executable, "-m", "tgstore", "extract", *cases, "--stages", "none", "-o",
                            str(no_stages)], check=True)
        bundle = read_bundle(path)
        db = fresh_db(Path(tmp) / "t.db")
        first, _ = store(db, as_commit(bundle, "a" * 40))
        print(f"# commit A (everything new): {first:,} bytes")
        figure("full_commit_bytes", first, f"{len(bundle.cases)} cases")
        if no_stages is not None:
            without, _ = store(fresh_db(Path(tmp) / "n.db"), as_commit(read_bundle(no_stages), "a" * 40))
            print(f"# the same commit extracted with --stages none: {without:,} bytes")
            figure("stages_over_no_stages_ratio", first / without, "target <= 3")
        unchanged, rows = store(db, as_commit(bundle, "b" * 40))
        print(f"# commit B (unchanged): {unchanged:,} bytes, rows {json.dumps(rows)}")
        figure("unchanged_commit_bytes", unchanged, "target <= 2000")
        changed = as_commit(bundle, "c" * 40)
        changed.cases = copy.deepcopy(bundle.cases)
        case = next(c for c in changed.cases if c["matches"])
        case["matches"][0]["matches"] += 1
        counts_only, rows = store(db, changed)
        print(f"# commit C (one match count of case {case['name']} changed): {counts_only:,} bytes, rows "
              f"{json.dumps(rows)}")
        figure("match_counts_only_commit_bytes", counts_only, "target <= 10000")


if __name__ == "__main__":
    main()
