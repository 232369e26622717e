"""Kernel timing (--time): repeatability and cost. Prints a table per kernel and `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_timing.py                       # bench/timing_cases.py, installed tinygrad (~1 min)
    .venv/bin/python bench/bench_timing.py --tinygrad ~/src/tinygrad --cases my_cases.py --repeats 5
    .venv/bin/python bench/bench_timing.py --smallest           # matmul256 only, 2 repeats, 5 runs a kernel

The same tinygrad is extracted once without timing and `--repeats` times with `--time` (C renderer, no stages), each
repeat a fresh extraction (a new process: what a later timing of the same commit would be).
- timing_cv_median / timing_cv_max: coefficient of variation (stdev / mean) of each kernel's best time across the
  repeats, over the kernels whose median is above 100 µs (target: ≤ 5% on an idle machine). `timing_cv_median_of_
  medians` is the same for the per-run medians.
- time_overhead_seconds_per_case: (wall time with --time - without) / cases, and each case's own share.
- calibration_cv: the calibration loop's variation across the repeats (how steady the machine was); above ~5% the
  machine was busy and the CV figures say more about the load than about the timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, case_file, figure

sys.path[:0] = [str(ROOT)]

BENCH_CASES = ROOT / "bench" / "timing_cases.py"

LONG_NS = 100_000  # kernels above 100 µs: the ones whose repeatability is the target


def extract(out: Path, args: argparse.Namespace, timed: bool) -> float:
    command = [sys.executable, "-m", "tgstore", "extract", "--out", str(out), "--renderers", "C", "--stages", "none"]
    command += ["--cases", str(args.cases)]
    if args.tinygrad:
        command += ["--tinygrad", str(args.tinygrad)]
    if timed:
        command += ["--time"] + (["--time-runs", str(args.time_runs)] if args.time_runs else [])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"extraction failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def kernel_times(bundle: Path) -> tuple[dict[tuple[str, int], tuple[int, int]], int, int, dict, dict, dict]:
    """(case, position) -> (ns_min, ns_median) of the kernels timed ok; cases; calibration; counts by status; the
    machine record; (case, position) -> program name."""
    found, cases, calibration, statuses, machine, names = {}, 0, 0, {}, {}, {}
    for line in bundle.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "header":
            calibration = record["timing"]["calibration_ns"] or 0
            machine = record["timing"]["machine"]
        elif record["kind"] == "case":
            cases += 1
            for item in record["schedule"]:
                timing = item.get("timing")
                if timing:
                    statuses[timing["status"]] = statuses.get(timing["status"], 0) + 1
                    if timing["status"] == "ok":
                        found[(record["name"], item["position"])] = (timing["ns_min"], timing["ns_median"])
                        names[(record["name"], item["position"])] = timing.get("program") or "?"
    return found, cases, calibration, statuses, machine, names


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 and statistics.mean(values) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinygrad", type=Path, default=None, help="default: the installed tinygrad")
    ap.add_argument("--cases", type=Path, default=BENCH_CASES, help="default: bench/timing_cases.py")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--time-runs", type=int, default=None, help="default: the extractor's adaptive count")
    ap.add_argument("--smallest", action="store_true",
                    help="the smallest size, for a check that the bench still runs to its figures: matmul256 of "
                         "bench/timing_cases.py, 2 repeats, 5 timed runs; its figures mean nothing")
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if args.smallest:
            args.cases = case_file(["matmul256"], Path(tmp) / "smallest.py", source=BENCH_CASES)
            args.repeats, args.time_runs = 2, 5
        plain = extract(Path(tmp) / "plain.jsonl", args, timed=False)
        runs, walls, calibrations = [], [], []
        for i in range(args.repeats):
            bundle = Path(tmp) / f"timed{i}.jsonl"
            walls.append(extract(bundle, args, timed=True))
            found, cases, calibration, statuses, machine, names = kernel_times(bundle)
            runs.append(found)
            calibrations.append(calibration)
            print(f"repeat {i + 1}: {walls[-1]:.1f}s, {len(found)} kernels timed ok, statuses {statuses}, "
                  f"calibration {calibration / 1e6:.1f} ms", flush=True)
    keys = set.intersection(*(set(r) for r in runs))
    long = sorted(k for k in keys if statistics.median(r[k][1] for r in runs) > LONG_NS)
    cvs = {k: cv([r[k][0] for r in runs]) for k in long}
    cvs_median = [cv([r[k][1] for r in runs]) for k in long]
    print(f"\nmachine {machine.get('fingerprint')}: {machine.get('cpu_model')}, {machine.get('usable_cores')} usable "
          f"cores, kernels timed with {machine.get('timing_threads')} CPU threads")
    print(f"{cases} cases, {len(keys)} kernels timed in every repeat, {len(long)} above 100 µs:")
    print(f"  {'kernel':<38} {'best time per repeat (µs)':<44} cv")
    for case, position in long:
        best = " ".join(f"{r[(case, position)][0] / 1e3:7.1f}" for r in runs)
        print(f"  {case + ' #' + str(position) + ' ' + names.get((case, position), ''):<38} {best:<44} "
              f"{cvs[(case, position)]:.1%}")
    overhead = (statistics.median(walls) - plain) / max(cases, 1)
    print(f"\nrepeatability: median CV {statistics.median(cvs.values()):.1%} (target <= 5% on an idle machine), "
          f"worst {max(cvs.values()):.1%}" if cvs else "\nrepeatability: no kernel above 100 µs")
    print(f"--time overhead: {overhead:.2f} s per case (extraction {plain:.1f} s without --time, "
          f"{statistics.median(walls):.1f} s with, median of {args.repeats}; {cases} cases)")
    print(f"machine load: calibration CV {cv(calibrations):.1%} across the repeats "
          f"({'steady' if cv(calibrations) <= 0.05 else 'busy: the CV above measures the load too'}); "
          f"bench wall time {time.perf_counter() - started:.0f} s\n")
    if cvs:
        figure("timing_cv_median", statistics.median(cvs.values()), "target <= 0.05 on an idle machine")
        figure("timing_cv_max", max(cvs.values()))
        figure("timing_cv_median_of_medians", statistics.median(cvs_median))
    figure("time_overhead_seconds_per_case", overhead)
    figure("calibration_cv", cv(calibrations), "the reference loop across repeats: machine load")


if __name__ == "__main__":
    main()
