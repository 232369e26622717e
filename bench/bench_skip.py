"""Skip by what ran, on a real stretch of history: sweep the same commits twice, with the skip (the default) and
with `--no-skip` (every commit extracted), and compare what the two databases store, commit by commit.

    .venv/bin/python bench/bench_skip.py --repo /work/tinygrad --rev master~100..master \
        --cases tests/fixtures/cases/core.py --renderers C --stages none [--dir /tmp/skip-bench] [--keep]

Prints `figure` lines: skip_share (commits not extracted, of those swept), copied_by_package and
copied_by_what_ran (the two kinds of copy), sweep_seconds_skip and sweep_seconds_full, sweep_speedup, and
facts_identical (1 when every commit's current run has the same status, case results, pattern set, tree hash and
version in both databases; the commits that differ are listed). With --keep, a database already in --dir is reused
(its sweep's seconds are then those stored beside it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import case_file  # noqa: E402

# first-parent commits v0.10.0..master and those that change tinygrad/ (docs/history-plan.md)
HISTORY_COMMITS, PACKAGE_COMMITS = 7576, 5321


def figure(name: str, value: float, note: str = "") -> None:
    print(f"figure {name} {value:.4g}" + (f"  # {note}" if note else ""), flush=True)


def sweep(db: Path, args: argparse.Namespace, *extra: str) -> float:
    """Sweep into `db` (reused with --keep); the seconds it took."""
    seconds_file = db.with_suffix(".seconds")
    if args.keep and db.is_file() and seconds_file.is_file():
        return float(seconds_file.read_text())
    db.unlink(missing_ok=True)
    command = [sys.executable, "-m", "tgstore", "ingest", "--db", str(db), "--repo", str(args.repo),
               "--renderers", args.renderers, "--stages", args.stages, "-j", str(args.jobs), *extra]
    for rev in args.rev:
        command += ["--rev", rev]
    for cases in args.cases or []:
        command += ["--cases", str(cases)]
    print(f"# {' '.join(command)}", flush=True)
    start = time.monotonic()
    subprocess.run(command, check=True, cwd=ROOT)
    seconds = time.monotonic() - start
    seconds_file.write_text(f"{seconds}\n")
    return seconds


CASES = """SELECT k.name, cr.hash, rc.status, ms.hash, d.hash FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN case_results cr ON cr.id = rc.case_result_id LEFT JOIN match_sets ms ON ms.id = rc.match_set_id
LEFT JOIN blobs d ON d.id = rc.debug_blob_id WHERE rc.run_id = ? ORDER BY k.name"""


def stored(db: Path) -> dict[str, tuple]:
    """Per commit: its current run's status, case results (case, result hash, status), pattern set, tree hash and
    version."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    found = {}
    for sha, run_id, status, patterns, tree_hash, version in conn.execute(
            "SELECT c.sha, r.id, r.status, ps.hash, c.tree_hash, c.version FROM runs r JOIN tinygrad_commits c ON "
            "c.id = r.commit_id LEFT JOIN pattern_sets ps ON ps.id = r.pattern_set_id WHERE r.is_current"):
        cases = conn.execute(CASES, (run_id,)).fetchall()
        found[sha] = (status, cases, patterns, tree_hash, version)
    conn.close()
    return found


def copies(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    found = dict(conn.execute("SELECT CASE WHEN copy_reason LIKE 'its package is %' THEN 'package' ELSE 'what_ran' "
                              "END, count(*) FROM runs WHERE is_current AND copied_from IS NOT NULL GROUP BY 1"))
    conn.close()
    return found


def smallest_history(repo: Path) -> tuple[Path, list[str]]:
    """Two commits of the installed tinygrad: as installed, then with a comment added to the AMD runtime, which a CPU
    extraction never reads (so the skip copies it)."""
    from tgstore.extract.runner import locate_installed_tinygrad

    shutil.copytree(locate_installed_tinygrad() / "tinygrad", repo / "tinygrad",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def git(*words: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                               *words], check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "installed tinygrad")
    with (repo / "tinygrad" / "runtime" / "ops_amd.py").open("a", encoding="utf-8") as f:
        f.write("\n# an edit no CPU extraction reads\n")
    git("commit", "-qam", "edit the AMD runtime")
    return repo, [git("rev-parse", "HEAD~1"), git("rev-parse", "HEAD")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path)
    ap.add_argument("--rev", action="append")
    ap.add_argument("--cases", type=Path, action="append")
    ap.add_argument("--renderers", default="C")
    ap.add_argument("--stages", default="none")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/tgstore-bench-skip"))
    ap.add_argument("--keep", action="store_true", help="reuse the databases already in --dir")
    ap.add_argument("--smallest", action="store_true", help="a built history of the installed tinygrad (a commit, "
                    "then one that edits a file no CPU extraction reads) and the softmax case: a check that the bench "
                    "still runs to its figures")
    args = ap.parse_args()
    if args.smallest:
        args.dir = Path(tempfile.mkdtemp(prefix="tgstore-bench-skip-"))
        args.repo, args.rev = smallest_history(args.dir / "tinygrad")
        args.cases = [case_file(["softmax"], args.dir / "smallest.py")]
    elif args.repo is None or not args.rev:
        ap.error("--repo and --rev are needed (or --smallest)")
    args.dir.mkdir(parents=True, exist_ok=True)
    skip_seconds = sweep(args.dir / "skip.db", args)
    full_seconds = sweep(args.dir / "full.db", args, "--no-skip")
    skip, full = stored(args.dir / "skip.db"), stored(args.dir / "full.db")
    differ = sorted(sha for sha in skip.keys() | full.keys() if skip.get(sha) != full.get(sha))
    kinds = copies(args.dir / "skip.db")
    swept = len(full)
    share = sum(kinds.values()) / swept
    figure("skip_share", share, f"{sum(kinds.values())} of {swept} commits not extracted")
    figure("copied_by_package", kinds.get("package", 0), "package byte-identical to a stored commit's")
    figure("copied_by_what_ran", kinds.get("what_ran", 0), "changed no file the parent's run read")
    figure("sweep_seconds_full", full_seconds, "--no-skip: every commit extracted")
    figure("sweep_seconds_skip", skip_seconds)
    figure("sweep_speedup", full_seconds / skip_seconds, "wall time: only comparable on an otherwise idle machine")
    figure("extraction_ratio", (swept - sum(kinds.values())) / swept, "extractions with the skip over without")
    figure("facts_identical", float(not differ), f"{swept} commits compared; {len(differ)} differ")
    for sha in differ:
        print(f"# differs: {sha} {json.dumps([skip.get(sha), full.get(sha)])[:300]}")
    changed_package = swept - kinds.get("package", 0)
    what_ran_share = kinds.get("what_ran", 0) / max(1, changed_package)
    print(f"# whole history: of its {PACKAGE_COMMITS} commits that change tinygrad/ (of {HISTORY_COMMITS}), "
          f"{what_ran_share:.1%} skipped at this stretch's rate ({kinds.get('what_ran', 0)} of {changed_package}): "
          f"{PACKAGE_COMMITS * (1 - what_ran_share):.0f} extractions")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
