"""The noise a series has shown in its own history, and whether a change stands out from it.

A series of per-commit timings on a shared machine is not independent noise around levels: the machine's load drifts
and stays for a while, so neighbouring commits agree with each other more than distant ones (correlated noise), or a
whole stretch slides (drift). A step test that assumes independent commits calls such a slide certain. Here the
noise model is the series' own history of changes over every lag h, its variogram

    gamma(h) = half the mean square of y[t + h] - y[t]

(independent noise: flat; correlated noise: rising to its level; drift: growing as h^2). Any change measured as a
contrast of the series (the mean of the commits after a breakpoint minus the mean of those before; one commit
against its neighbours) has, under that history, the mean square -sum_ij c_i c_j gamma(|i - j|), exact for
any process whose increments are stationary; a drift's trend is part of that mean square, as the variogram is taken
about zero. Pairs that straddle the change being tested are left out, so a real step does not hide itself in its
own noise model. The estimator is Cressie and Hawkins' (1980), robust to the odd slow reading, and the estimates
are fitted non-decreasing in h (as correlated noise and drift are: pool adjacent violators, weighted by pairs); a
lag with fewer than MIN_PAIRS pairs takes the estimate below it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CRESSIE_HAWKINS = (0.457, 0.494)
MIN_PAIRS = 8  # a lag with fewer pairs than this is not estimated


def variogram(y: Sequence[float], most_lag: int, cut: int | Sequence[int] | None = None, *,
              median: bool = False, classical: bool = False) -> np.ndarray:
    """gamma(h) for h = 0 .. most_lag (gamma(0) = 0) from the pairs of `y` that do not straddle a `cut` (a pair
    (t, t + h) straddles c when t < c <= t + h): non-decreasing in h (the weighted isotonic fit of each lag's estimate,
    weighted by its pairs); a lag with fewer than MIN_PAIRS pairs takes the estimate below it. `median`: each lag's
    estimate is the median of the squared differences over its value for normal noise (2 x 0.4549 gamma), which a
    few odd commits among the pairs do not move (Cressie-Hawkins' mean of square roots is moved by them).
    `classical`: half the mean square (Matheron's), the mean square a mean over many commits really has when the
    noise has heavy tails (the robust estimates give the bulk's, which a long mean's spread exceeds)."""
    values = np.asarray(y, dtype=float)
    n = len(values)
    estimates, weights = [], []
    for h in range(1, min(most_lag, n - 1) + 1):
        diffs = values[h:] - values[:-h]  # pair (t, t + h) for t = 0 .. n - h - 1
        if cut is not None:
            t = np.arange(n - h)
            keep = np.ones(n - h, dtype=bool)
            for c in [cut] if isinstance(cut, int | np.integer) else cut:
                keep &= (t + h < c) | (t >= c)
            diffs = diffs[keep]
        m = len(diffs)
        if m < MIN_PAIRS and estimates:
            break
        if not m:
            estimates.append(0.0)
        elif classical:
            estimates.append(float(np.mean(diffs * diffs)) / 2)
        elif median:
            estimates.append(float(np.median(diffs * diffs)) / (2 * 0.4549))
        else:
            estimates.append(np.mean(np.sqrt(np.abs(diffs))) ** 4 / (2 * (CRESSIE_HAWKINS[0] + CRESSIE_HAWKINS[1] / m)))
        weights.append(m)
    fitted = isotonic(estimates, weights)
    out = np.zeros(most_lag + 1)
    for h in range(1, most_lag + 1):
        out[h] = fitted[min(h, len(fitted)) - 1] if fitted else 0.0
    return out


def isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest `values` in weighted least squares (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight, count = blocks.pop()
            last = blocks[-1]
            total = last[1] + weight
            last[0] = (last[0] * last[1] + mean * weight) / total if total else (last[0] + mean) / 2
            last[1], last[2] = total, last[2] + count
    return [mean for mean, _w, count in blocks for _ in range(int(count))]


def contrast_mean_square(weights: dict[int, float], gamma: np.ndarray) -> float:
    """E[(sum_i w_i y_i)^2] for weights summing to 0, under the variogram `gamma` (indexes: commits)."""
    index = np.fromiter(weights, dtype=np.int64)
    w = np.fromiter(weights.values(), dtype=float)
    return max(float(-w @ gamma[np.abs(index[:, None] - index[None, :])] @ w), 0.0)


def level_change(before: Sequence[int], after: Sequence[int]) -> dict[int, float]:
    """The contrast mean(y[after]) - mean(y[before]) as weights per commit index."""
    weights = {i: -1 / len(before) for i in before}
    for i in after:
        weights[i] = weights.get(i, 0.0) + 1 / len(after)
    return weights

