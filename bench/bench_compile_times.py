"""Compile times (`--compile-times`, implied by `--time`): what recording them costs. Prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_compile_times.py                 # tests/fixtures/cases/core.py, installed tinygrad
    .venv/bin/python bench/bench_compile_times.py --tinygrad ~/src/tinygrad --repeats 5

- compile_times_cpu_ratio: the extraction child's CPU time with --compile-times over without (C renderer, no stages),
  the least of --repeats runs each, the runs interleaved (so that load hits both). Target: within the runs' own
  spread (printed beside it).
- compile_times_session_bytes: the database bytes the compile times add to one timed commit (the same bundle ingested
  into a fresh database with and without its compile records, after VACUUM).
- unchanged_timed_commit_bytes: a commit whose output equals its predecessor's, ingested with its timing session (the
  bundle's compile records and kernel times) over the database before it; and the same without compile records.
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import case_file  # noqa: E402

CORE = ROOT / "tests" / "fixtures" / "cases" / "core.py"


def figure(name: str, value: float, note: str = "") -> None:
    print(f"figure {name} {value:.4g}" + (f"  # {note}" if note else ""), flush=True)


def tgstore(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tgstore", *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tgstore {' '.join(args[:2])} failed: {done.stderr[-2000:]}")


def extract(out: Path, args: argparse.Namespace, compile_times: bool) -> float:
    """The child's CPU seconds (user + sys of the waited-for children) for one extraction."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tgstore("extract", "--out", str(out), "--renderers", "C", "--stages", "none", "--cases", str(args.cases),
            *(["--tinygrad", str(args.tinygrad)] if args.tinygrad else []),
            *(["--compile-times"] if compile_times else []))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def without_compile(bundle: Path, out: Path) -> Path:
    records = [json.loads(line) for line in bundle.read_text().splitlines()]
    for record in records:
        record.pop("compile", None)
        for item in record.get("schedule") or []:
            for program in item.get("programs") or []:
                program.pop("compile", None)
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def size(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with sqlite3.connect(db) as conn:
        conn.execute("VACUUM")
    conn.close()
    return db.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinygrad", type=Path, default=None, help="default: the installed tinygrad")
    ap.add_argument("--cases", type=Path, default=CORE)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--unchanged", type=int, default=20, help="unchanged commits ingested for the bytes figures")
    ap.add_argument("--smallest", action="store_true", help="one run each and 2 unchanged commits, on the softmax "
                    "case: a check that the bench still runs to its figures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.smallest:
            args.repeats, args.unchanged = 1, 2
            args.cases = case_file(["softmax"], work / "smallest.py")
        plain, timed = [], []
        for i in range(args.repeats):  # interleaved
            plain.append(extract(work / f"plain{i}.jsonl", args, False))
            timed.append(extract(work / f"compile{i}.jsonl", args, True))
        print(f"child CPU s without: {', '.join(f'{s:.2f}' for s in plain)}; with: "
              f"{', '.join(f'{s:.2f}' for s in timed)}")
        figure("compile_times_cpu_ratio", min(timed) / min(plain),
               f"runs spread {max(plain) / min(plain):.3f}x without, {max(timed) / min(timed):.3f}x with")
        bundle = work / "compile0.jsonl"
        # the bundle stands for a timed commit: its header needs the machine (extract --compile-times writes it)
        bare = without_compile(bundle, work / "bare.jsonl")
        sizes = {}
        for name, path in (("with", bundle), ("without", bare)):
            db = work / f"{name}.db"
            tgstore("ingest", "--db", str(db), "--bundle", str(path))
            sizes[name] = size(db)
        figure("compile_times_session_bytes", sizes["with"] - sizes["without"],
               f"{sizes['with']} vs {sizes['without']} bytes for the whole commit")
        rows = sum(1 for line in bundle.read_text().splitlines() for r in [json.loads(line)] if r["kind"] == "case"
                   for item in r["schedule"] for p in item["programs"] if p.get("compile"))
        print(f"{rows} kernel x renderer rows (and one scheduling row per case)")
        # unchanged commits: the same output at other shas, each with its timing session; several, since the file
        # grows by whole 4 KB pages
        for name, path in (("with", bundle), ("without", bare)):
            db = work / f"{name}.db"
            before = size(db)
            records = [json.loads(line) for line in path.read_text().splitlines()]
            for i in range(args.unchanged):
                again = work / f"again_{name}_{i}.jsonl"
                records[0]["tinygrad"]["git"] = {"sha": f"{i:040x}", "date": "2026-12-04T00:00:00+00:00",
                                                  "subject": "unchanged", "dirty": False, "position": 99000 + i}
                again.write_text("".join(json.dumps(r) + "\n" for r in records))
                tgstore("ingest", "--db", str(db), "--bundle", str(again))
            figure(f"unchanged_timed_commit_bytes_{name}_compile_times", (size(db) - before) / args.unchanged,
                   f"{args.unchanged} commits")

if __name__ == "__main__":
    main()
