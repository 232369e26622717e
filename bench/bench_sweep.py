"""Benchmark a commit sweep: time per commit (checkout, extraction, ingestion) and database growth per commit.

    .venv/bin/python bench/bench_sweep.py                       # a built release history (see --commits), 2 jobs
    .venv/bin/python bench/bench_sweep.py --repo ~/tinygrad --rev HEAD~20..HEAD --jobs 4 --db /tmp/bench.db
    .venv/bin/python bench/bench_sweep.py --smallest            # 2 commits (0.12.0, 0.14.0), two cases

Without --repo it builds, in a temp dir, the same kind of repository as tests/test_sweep.py: tinygrad 0.12.0, then
README-only commits, then 0.14.0, then README-only commits -- most commits leave tinygrad unchanged, as most commits
of a real sweep leave a given case's output unchanged. Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from common import SMALLEST_CASES, SMALLEST_HELP, case_file, figure  # noqa: E402

from tgstore.cli.progress import SweepReporter  # noqa: E402
from tgstore.db import open_engine  # noqa: E402
from tgstore.db.migrate import ensure_current  # noqa: E402
from tgstore.git import open_repo, resolve_revs  # noqa: E402
from tgstore.history.sweep import CommitOutcome, sweep  # noqa: E402
from tgstore.pipeline import ExtractionPlan  # noqa: E402


def table_rows(conn: sqlite3.Connection) -> dict[str, int]:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' AND name != 'alembic_version'")]
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def checkpointed_size(db: Path) -> int:
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.stat().st_size


def build_history(base: Path, commits: int) -> tuple[Path, list[str]]:
    """A release-history repository with `commits` commits: 0.12.0, edits, 0.14.0, edits. Returns (repo, revs)."""
    from test_sweep import build_release_history
    from tinygrad_releases import install_tinygrad_release

    edits = max(0, commits - 2)
    history: list[tuple[str | None, str]] = [("0.12.0", "tinygrad 0.12.0")]
    history += [(None, f"docs: readme edit {i}") for i in range(edits // 2)]
    history += [("0.14.0", "tinygrad 0.14.0")]
    history += [(None, f"docs: readme edit {i}") for i in range(edits // 2, edits)]
    repo = base / "tinygrad"
    shas = build_release_history(repo, history, install_tinygrad_release)
    return repo, [shas[0], f"{shas[0]}..{shas[-1]}"]


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, help="a tinygrad git repository (default: build a release history)")
    parser.add_argument("--rev", action="append", help="revs to sweep, as for `tgstore sweep --rev` (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--db", type=Path, help="the database (default: a fresh one in a temp dir)")
    parser.add_argument("--commits", type=int, default=8, help="commits of the built history (default 8)")
    parser.add_argument("--cases", type=Path, action="append", help="case files (default: the built-in suite)")
    parser.add_argument("--renderers", default="C,LLVM", help="comma-separated renderers (default C,LLVM: what "
                        "bench/baseline_tinygrad.py can build too, for sweep_bound_ratio)")
    parser.add_argument("--stages", default="none", help="renderers whose passes are recorded (default none: "
                        "tinygrad's own work is the bound)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    args = parser.parse_args()
    if args.repo and not args.rev:
        parser.error("--repo needs --rev")

    with tempfile.TemporaryDirectory(prefix="tgstore-bench-") as tmp:
        if args.smallest:
            args.commits, args.cases = 2, [case_file(SMALLEST_CASES.split(","), Path(tmp) / "smallest.py")]
        if args.repo:
            repo, revs = open_repo(args.repo), args.rev
        else:
            built, built_revs = build_history(Path(tmp), args.commits)
            repo, revs = open_repo(built), args.rev or built_revs
        commits = resolve_revs(repo, revs)
        db = args.db or Path(tmp) / "bench.db"
        plan = ExtractionPlan(timeout=args.timeout, stages=args.stages,
                              renderers=[r for r in args.renderers.split(",") if r] if args.renderers else None)
        if args.cases:
            plan.case_files = [p.resolve() for p in args.cases]
        engine = open_engine(db)
        ensure_current(engine)
        engine.dispose()
        size0 = checkpointed_size(db)
        with sqlite3.connect(db) as conn:
            rows0 = table_rows(conn)
        growth: list[tuple[CommitOutcome, int, int]] = []  # (outcome, bytes added, rows added)
        by_table: dict[str, dict[str, int]] = {}  # sha -> table -> rows added
        last: list = [size0, rows0]

        def measure(outcome: CommitOutcome) -> None:
            size = checkpointed_size(db)
            with sqlite3.connect(db) as conn:
                now = table_rows(conn)
            added = {t: n - last[1].get(t, 0) for t, n in now.items() if n != last[1].get(t, 0)}
            growth.append((outcome, size - last[0], sum(added.values())))
            by_table[outcome.commit.sha] = added
            last[:] = [size, now]

        print(f"sweeping {len(commits)} commits of {repo} with {args.jobs} jobs into {db}", file=sys.stderr)
        started, cpu_started = time.monotonic(), cpu_seconds()
        with SweepReporter() as reporter:
            summary = sweep(engine, repo, commits, plan, jobs=args.jobs, reporter=reporter, on_ingested=measure)
        wall, cpu = time.monotonic() - started, cpu_seconds() - cpu_started
        engine.dispose()
        size = checkpointed_size(db)
        with sqlite3.connect(db) as conn:
            rows1 = table_rows(conn)

        ran = [o for o in summary.outcomes if o.status != "skipped"]
        unchanged = [(o, b, r) for o, b, r in growth if o.new_case_results == 0 and o.status == "ok"]
        changed = [(o, b, r) for o, b, r in growth if (o, b, r) not in unchanged]
        print(f"\ncommits: {len(commits)} ({len(ran)} extracted, {len(commits) - len(ran)} skipped, "
              f"{len(unchanged)} with no new case result), jobs {args.jobs}, suite {plan.suite['name']}, "
              f"renderers {','.join(plan.renderers) if plan.renderers else 'default'}")
        print(f"wall: {wall:.1f} s in all, {wall / max(1, len(ran)):.2f} s per extracted commit")
        print(f"per commit (mean): checkout {mean([o.checkout_seconds for o in ran]):.2f} s, extraction "
              f"{mean([o.extract_seconds for o in ran]):.2f} s, "
              f"ingestion {mean([o.ingest_seconds for o in ran]):.2f} s")
        print(f"ingestion (mean): changed commits {mean([o.ingest_seconds for o, _b, _r in changed]):.2f} s, "
              f"unchanged {mean([o.ingest_seconds for o, _b, _r in unchanged]):.2f} s")
        print(f"database: {size0} bytes empty, {size} bytes after; {(size - size0) / max(1, len(ran)):.0f} bytes per "
              f"commit overall")
        print(f"unchanged commits: {mean([b for _o, b, _r in unchanged]):.0f} bytes and "
              f"{mean([r for _o, _b, r in unchanged]):.1f} rows added per commit (mean)")
        if changed:
            print(f"changed commits: {mean([b for _o, b, _r in changed]):.0f} bytes and "
                  f"{mean([r for _o, _b, r in changed]):.1f} rows added per commit (mean)")
        if unchanged:
            totals: dict[str, int] = {}
            for o, _b, _r in unchanged:
                for t, n in by_table[o.commit.sha].items():
                    totals[t] = totals.get(t, 0) + n
            print(f"rows added by the {len(unchanged)} unchanged commits, by table: "
                  + ", ".join(f"{t} {n}" for t, n in sorted(totals.items(), key=lambda kv: -kv[1])))
            print("  of which blobs of DEBUG text only these runs use: "
                  f"{debug_blobs_only_used_by(db, [o.run_id for o, _b, _r in unchanged])}")
        print(f"rows in all: {sum(rows1.values()) - sum(rows0.values())} added")
        bound, bound_cpu = tinygrad_bound(repo, [o.commit.sha for o in ran], plan, args.jobs)
        print(f"tinygrad's own work (bench/baseline_tinygrad.py per commit) / {args.jobs} jobs: {bound:.1f} s; "
              f"the sweep's CPU {cpu:.1f} s (this process and its children) over tinygrad's {bound_cpu:.1f} CPU s")
        figure("sweep_bound_ratio", wall / bound, "target <= 1.05 at -j 2")
        figure("sweep_cpu_ratio", cpu / bound_cpu, "the sweep's CPU seconds over tinygrad's own work's: what a loaded "
               "machine can still measure")
    return 1 if summary.failed else 0


def cpu_seconds() -> float:
    """User + system seconds of this process and of its children waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def tinygrad_bound(repo: Path, shas: list[str], plan: ExtractionPlan, jobs: int) -> tuple[float, float]:
    """The sum over commits of tinygrad's own schedule+render time for the suite, divided by the jobs: the floor a
    sweep is measured against; and the same sum in CPU seconds (not divided). Measured once per distinct tinygrad/
    tree."""
    import os
    import subprocess

    from tgstore.git import _run_git, package_checkout

    seconds: dict[str, tuple[float, float]] = {}
    total = total_cpu = 0.0
    for sha in shas:
        tree = _run_git(repo, "rev-parse", f"{sha}:tinygrad").stdout.strip()
        if tree not in seconds:
            with package_checkout(repo, sha) as root:
                env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root), "PYTHONHASHSEED": "0",
                       "HOME": os.environ.get("HOME", "/tmp")}
                start, cpu_start = time.monotonic(), cpu_seconds()
                subprocess.run([sys.executable, str(ROOT / "bench" / "baseline_tinygrad.py"),
                                str(plan.case_files[0]), ",".join(plan.effective_renderers)], env=env, check=True,
                               capture_output=True)
                seconds[tree] = (time.monotonic() - start, cpu_seconds() - cpu_start)
        total += seconds[tree][0]
        total_cpu += seconds[tree][1]
    return total / jobs, total_cpu


def debug_blobs_only_used_by(db: Path, run_ids: list[int | None]) -> int:
    """Per-case DEBUG text blobs that no other run shares (tinygrad prints timings there, so an unchanged commit's
    DEBUG text can differ from its parent's)."""
    ids = [i for i in run_ids if i is not None]
    marks = ",".join("?" * len(ids))
    with sqlite3.connect(db) as conn:
        return conn.execute(
            f"SELECT count(DISTINCT debug_blob_id) FROM run_cases WHERE run_id IN ({marks}) AND debug_blob_id "
            f"NOT IN (SELECT debug_blob_id FROM run_cases WHERE run_id NOT IN ({marks}) "
            f"AND debug_blob_id IS NOT NULL)", ids + ids).fetchone()[0]


if __name__ == "__main__":
    sys.exit(main())
