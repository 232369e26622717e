"""Detection beside asv's: tgstore's step detector (`compare/stepfit.analyse`, as `tgstore regressions` runs it on run
times) and asv's `step_detect.detect_steps` (asv 0.6, the test extra) on the same simulated series, over a grid of
noise models x lengths x steps.

    .venv/bin/python bench/bench_detection_grid.py               # the grid (a few minutes on 2 cores)
    .venv/bin/python bench/bench_detection_grid.py --smallest    # 2 lengths, 2 steps, 10 series a cell

A series of n commits: each commit's level is 100 us x exp(noise), the second half's times the step (at n // 2); its
10 runs are the level times 1 + |N(0, 0.5%)| and its value is their best. Noise models: independent 2% and 10%,
Student t (3 degrees of freedom, 2% sd), AR(1) (rho 0.9, 2% sd), random walk (1% a commit).
- found: the share of series with a step at its place (+-1 commit) in its direction. tgstore's `reported` (the
  history and the runs back it) and `listed` (reported, or listed as 'unconfirmed: too little history': the runs back
  it, the history is too short to judge; --confirm re-times it); asv: a boundary of its piecewise-constant fit there,
  the right way.
- false alarms (step x1): the share of series with any reported step (tgstore: reported; listed apart), asv: any
  boundary (asv reports every boundary of its fit). Target <= 1% per series for tgstore's reported steps.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from asv.step_detect import detect_steps  # noqa: E402

from tgstore.compare import simulate  # noqa: E402
from tgstore.compare.stepfit import analyse  # noqa: E402

MODELS = {
    "indep2": simulate.independent(0.02),
    "indep10": simulate.independent(0.10),
    "student_t": simulate.student(3.0, 0.02),
    "ar1": simulate.correlated(0.9, 0.02),
    "walk": simulate.random_walk(0.01),
}
LENGTHS = (6, 10, 20, 50, 200, 1000)
STEPS = (1.0, 1.10, 1.25, 2.0, 4.0, 1 / 1.10, 1 / 1.25, 0.5, 0.25)


def series_count(n: int, step: float, scale: float) -> int:
    base = 100 if n <= 50 else 30 if n <= 200 else 10
    return max(4, int(base * scale * (2 if step == 1.0 else 1)))


def asv_found(values: list[float], n: int, step: float) -> tuple[bool, bool]:
    """(a boundary at the planted place the right way, any boundary at all)."""
    steps = detect_steps(values)
    at = False
    for left, right in zip(steps, steps[1:], strict=False):
        if abs(right[0] - n // 2) <= 1 and (right[2] > left[2]) == (step > 1):
            at = True
    return at, len(steps) > 1


def cell(noise: simulate.Noise, n: int, step: float, count: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    out = {"reported": 0, "listed": 0, "asv": 0, "alarms": 0, "listed_alarms": 0, "asv_alarms": 0}
    for _ in range(count):
        series = simulate.history(rng, noise, n, step)
        found = analyse(series)
        def here(steps):  # noqa: E306
            return any(abs(s.index - n // 2) <= 1 and (s.ratio > 1) == (step > 1) for s in steps)
        out["reported"] += here(found.steps)
        out["listed"] += here(found.steps + found.short)
        out["alarms"] += bool(found.steps)
        out["listed_alarms"] += bool(found.steps or found.short)
        at, anything = asv_found(series.values, n, step)
        out["asv"] += at
        out["asv_alarms"] += anything
    return {k: v / count for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(prog="bench_detection_grid.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="series per cell, relative to the default")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--smallest", action="store_true", help="2 lengths, 2 steps, few series")
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    steps = STEPS
    if args.smallest:
        lengths, steps, args.scale = [6, 20], (1.0, 1.25), 0.1
    started = time.perf_counter()
    print("model      n     step   tgstore reported / listed   asv    (false alarms: tgstore reported / listed, asv)")
    worst_false = 0.0
    for name in args.models.split(","):
        for n in lengths:
            for step in steps:
                count = series_count(n, step, args.scale)
                r = cell(MODELS[name], n, step, count, seed=hash((name, n, step)) % 2**31)
                if step == 1.0:
                    worst_false = max(worst_false, r["alarms"])
                    print(f"{name:10} {n:5} x1      false alarms {r['alarms']:6.1%} / {r['listed_alarms']:6.1%}   "
                          f"asv {r['asv_alarms']:6.1%}   ({count} series)", flush=True)
                else:
                    mark = "" if r["listed"] >= r["asv"] else "  < asv"
                    print(f"{name:10} {n:5} x{step:<5.3g} found {r['reported']:6.1%} / {r['listed']:6.1%}   "
                          f"asv {r['asv']:6.1%}   ({count} series){mark}", flush=True)
    print(f"figure detection_grid_worst_false_alarm {worst_false:.4f}  # target <= 0.01 (tgstore's reported steps)")
    print(f"figure detection_grid_seconds {time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
