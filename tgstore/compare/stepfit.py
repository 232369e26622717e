"""Steps in a noisy series, and how sure each one is: the statistics under `tgstore regressions`, with no database.

The model is asv's (`asv/step_detect.py`): a benchmark's history is piecewise constant plus noise, so its steps are
the breakpoints of the piecewise-constant fit that minimises
    penalty * (number of segments) + sum over segments of sum |y - median(segment)|
(an L1 "Potts" fit: medians and absolute deviations, so one slow outlier moves nothing). Here the fit is exact
(dynamic programming over every segmentation; O(n^2 log n), a few ms at 100 commits) and runs on log times, so a
step is a ratio and the penalty does not depend on the kernel's scale. The penalty is the series' own noise times a
BIC-like factor (`PENALTY` x ln n). asv picks its penalty by an information criterion instead; its series are the
same shape.

Each breakpoint is then tested, which asv does not do: LNT and conbench test repeated samples. Two tests, both must
pass (`Step.p` is the larger p-value):
  * the samples: Mann-Whitney U between the stored timed runs of the commits next to the step on each side
    (a rank test: no assumption on the runs' distribution, which is skewed and heavy-tailed);
  * the commits: the step's size in units of the between-commit noise (a z-test of the two segments' medians
    against the residual spread of every commit around its segment). Runs within one process agree with each other
    more than processes do (a kernel's speed can be a property of the process: see docs/timing.md), so the samples
    alone would call a process-to-process difference certain.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

PENALTY = 3.0  # x ln(n): the cost of one more segment in the Schwarz criterion (asv uses 4)
MOST_SEGMENTS = 20  # per series
MIN_NOISE = 0.005  # relative (0.5%): no series is trusted to be quieter than this
ALPHA = 0.01  # a step is reported when both tests give p below this
NEAREST = 3  # commits each side of a step whose samples are compared
MIN_SIDE = 2  # commits each side of a step for it to be called: one commit at an end may be a slow reading


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(U of `a`, two-sided p) of the Mann-Whitney U test: normal approximation with the tie correction and a
    continuity correction (what scipy.stats.mannwhitneyu gives with method="asymptotic"). p is 1 when either side is
    empty or every value is tied."""
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return 0.0, 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, pooled, strict=True) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return u1, 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return u1, min(1.0, 2 * normal_sf(max(z, 0.0)))


def _segment_costs(y: Sequence[float], right: int) -> list[float]:
    """cost[l] = sum |y[i] - median(y[l..right])| for l = right down to 0 (two heaps, O(n log n))."""
    low: list[float] = []  # max-heap (negated): the smaller half, holding the median when the count is odd
    high: list[float] = []  # min-heap: the larger half
    sum_low = sum_high = 0.0
    costs = [0.0] * (right + 1)
    for left in range(right, -1, -1):
        v = y[left]
        if low and v > -low[0]:
            heapq.heappush(high, v)
            sum_high += v
        else:
            heapq.heappush(low, -v)
            sum_low += v
        if len(low) > len(high) + 1:
            moved = -heapq.heappop(low)
            sum_low -= moved
            heapq.heappush(high, moved)
            sum_high += moved
        elif len(high) > len(low):
            moved = heapq.heappop(high)
            sum_high -= moved
            heapq.heappush(low, -moved)
            sum_low += moved
        cost = sum_high - sum_low + (-low[0] if len(low) > len(high) else 0.0)
        costs[left] = max(0.0, cost)
    return costs


def fits(y: Sequence[float], most: int) -> list[tuple[float, list[tuple[int, int]]]]:
    """For k = 1 .. `most` segments: (least L1 cost, its segments [start, end)), by exact dynamic programming over
    every segmentation (a segment's cost is its sum of absolute deviations from its median)."""
    n = len(y)
    cost = [_segment_costs(y, right) for right in range(n)]  # cost[right][left]
    most = max(1, min(most, n))
    best = [[math.inf] * (n + 1) for _ in range(most + 1)]
    start = [[0] * (n + 1) for _ in range(most + 1)]
    best[0][0] = 0.0
    for k in range(1, most + 1):
        previous, here, starts = best[k - 1], best[k], start[k]
        for end in range(k, n + 1):
            row = cost[end - 1]
            for left in range(k - 1, end):
                c = previous[left] + row[left]
                if c < here[end]:
                    here[end], starts[end] = c, left
    out = []
    for k in range(1, most + 1):
        segments, end = [], n
        for j in range(k, 0, -1):
            segments.append((start[j][end], end))
            end = start[j][end]
        out.append((best[k][n], segments[::-1]))
    return out


def choose(y: Sequence[float], floor: float, most: int = MOST_SEGMENTS) -> list[tuple[int, int]]:
    """The segmentation that minimises n ln(floor + mean absolute deviation) + PENALTY k ln n: the Schwarz
    criterion for Laplace noise of unknown size, as asv selects its fit (the floor keeps a perfect fit from winning
    by its log going to minus infinity)."""
    n = len(y)
    scored = [(n * math.log(floor + cost / n) + PENALTY * k * math.log(n), segments)
              for k, (cost, segments) in enumerate(fits(y, most), start=1)]
    return min(scored, key=lambda s: s[0])[1]


def noise(y: Sequence[float]) -> float:
    """The series' noise (a standard deviation, in y's units) from its successive differences."""
    return noise_of_differences([b - a for a, b in zip(y, y[1:], strict=False)])


def noise_of_differences(diffs: Sequence[float]) -> float:
    """The median absolute difference over 0.954 (its value for normal noise): robust to the few that are steps."""
    return statistics.median(abs(d) for d in diffs) / 0.954 if diffs else 0.0


@dataclass
class Step:
    index: int  # the first commit after the step (an index into the series)
    before: float  # the median of the segment before (linear units)
    after: float  # and after
    p: float  # the larger p-value of the two tests
    p_samples: float | None  # Mann-Whitney U over the nearest commits' samples (None: no samples)
    p_commits: float  # the step against the between-commit noise

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf

    @property
    def confidence(self) -> float:
        return 1 - self.p


@dataclass
class Series:
    values: list[float]  # one per commit, history order, all > 0
    samples: list[list[float]] | None = None  # the runs behind each value, if stored
    floor: float = MIN_NOISE  # the least relative noise to assume (e.g. the runs' own spread)


@dataclass
class Analysis:
    steps: list[Step]  # significant steps only
    noise: float  # relative noise per commit (a standard deviation of log values)
    segments: list[tuple[int, int]]  # of the points kept (indexes into the series)
    outliers: list[int] = field(default_factory=list)  # single commits off the level on both sides of them
    unsure: list[Step] = field(default_factory=list)  # significant, with one commit on one side (an end)

    @property
    def detectable(self) -> float:
        """The smallest step (a ratio - 1) this noise lets the test call with one commit on each side."""
        return math.expm1(z_for(ALPHA) * self.noise * math.sqrt(2))


def z_for(alpha: float) -> float:
    """The two-sided critical z of `alpha` (bisection on normal_sf; no scipy)."""
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 2 * normal_sf(mid) > alpha else (lo, mid)
    return hi


def spikes(y: Sequence[float], segments: list[tuple[int, int]]) -> list[int]:
    """Interior one-commit segments whose neighbours are nearer each other's level than the commit's: a reading off
    the level (one slow process, a loaded minute), not two steps."""
    found = []
    for (s0, e0), (s1, e1), (s2, e2) in zip(segments, segments[1:], segments[2:], strict=False):
        if e1 - s1 == 1:
            before, after = statistics.median(y[s0:e0]), statistics.median(y[s2:e2])
            if abs(after - before) < min(abs(y[s1] - before), abs(y[s1] - after)):
                found.append(s1)
    return found


def analyse(series: Series, alpha: float = ALPHA) -> Analysis:
    """The significant steps of a series (see the module's docstring)."""
    everything = [math.log(v) for v in series.values]
    n = len(everything)
    if n < 2:
        return Analysis([], series.floor, [(0, n)] if n else [])
    outliers = spikes(everything, choose(everything, series.floor))
    kept = [i for i in range(n) if i not in set(outliers)]
    y = [everything[i] for i in kept]
    segments = choose(y, series.floor)
    # the noise per commit around the fit: mean absolute deviation, corrected for the medians fitted, as a sigma
    deviation = sum(abs(y[i] - statistics.median(y[s:e])) for s, e in segments for i in range(s, e))
    sigma = max(series.floor, deviation / max(1, len(y) - len(segments)) * 1.2533)
    steps: list[Step] = []
    unsure: list[Step] = []  # significant, but one commit on one side
    for (s0, e0), (s1, e1) in zip(segments, segments[1:], strict=False):
        a, b = y[s0:e0], y[s1:e1]
        m0, m1 = statistics.median(a), statistics.median(b)
        z = abs(m1 - m0) / (sigma * math.sqrt(1 / len(a) + 1 / len(b)) * 1.2533)  # 1.2533: a median's variance
        p_commits = min(1.0, 2 * normal_sf(z))
        p_samples = None
        if series.samples is not None:
            near_a = [v for i in range(max(s0, e0 - NEAREST), e0) for v in series.samples[kept[i]] or []]
            near_b = [v for i in range(s1, min(e1, s1 + NEAREST)) for v in series.samples[kept[i]] or []]
            if near_a and near_b:
                p_samples = mann_whitney(near_a, near_b)[1]
        p = max(p_commits, p_samples if p_samples is not None else 0.0)
        if p < alpha:
            step = Step(kept[s1], math.exp(m0), math.exp(m1), p, p_samples, p_commits)
            (steps if min(len(a), len(b)) >= MIN_SIDE else unsure).append(step)
    return Analysis(steps, sigma, [(kept[s], kept[e - 1] + 1) for s, e in segments], outliers, unsure)
