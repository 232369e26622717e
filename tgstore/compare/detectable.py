"""The smallest step the detector finds 90% of the time: simulated, not derived from a formula that leaves out what
the detector does (its segmentation, the history test's spread estimated from the series, the Bonferroni factor).

For a series of n commits with independent noise of 1 (in log units), a step in the middle, no runs stored (the
history test alone: the runs are usually far quieter than the commits), `simulate.detectable(n)` bisects on the
step's size for the one found 90% of the time. The detector scales with the noise above its floor, so for noise
sigma the detectable ratio is exp(TABLE[n] x sigma). TABLE was printed by `bench/bench_regressions.py --table`
(1,000 series per length, seeds 0-9, 2026-12-04; 60-400 again 2026-12-07 with 2,000 series, when the windows
began to grow with the series: a fifth of it, up to 200 commits a side); lengths between are interpolated, longer
ones take the last entry (an understatement of what a longer series finds: its windows grow on to 200 commits).
"""

from __future__ import annotations

import math

# n -> the step (in noise units) found 90% of the time; inf: too short to report a step (two commits each side)
TABLE: dict[int, float] = {5: 37.18, 6: 20.83, 8: 10.14, 10: 6.98, 12: 6.79, 16: 5.86, 20: 5.51, 30: 5.71,
                           40: 4.67, 60: 3.74, 100: 2.93, 200: 2.43, 400: 2.35}
LENGTHS = (4, 5, 6, 8, 10, 12, 16, 20, 30, 40, 60, 100, 200, 400)
GOAL = 0.9


def detectable_step(n: int) -> float:
    """TABLE interpolated at n (a log step in units of the series' noise)."""
    if n < LENGTHS[0]:
        return math.inf
    known = sorted(TABLE.items())
    if not known:
        return math.inf
    if n >= known[-1][0]:
        return known[-1][1]
    for (n0, k0), (n1, k1) in zip(known, known[1:], strict=False):
        if n0 <= n <= n1:
            return k0 + (k1 - k0) * (n - n0) / (n1 - n0)
    return known[0][1]
