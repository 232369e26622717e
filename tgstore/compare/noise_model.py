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
LAGS_AT_ONCE = 32  # from this many lags on they are estimated a block at a time (_by_block)


def variogram(y: Sequence[float], most_lag: int, cut: int | Sequence[int] | None = None, *,
              median: bool = False, classical: bool = False) -> np.ndarray:
    """gamma(h) for h = 0 .. most_lag (gamma(0) = 0) from the pairs of `y` that do not straddle a `cut` (a pair
    (t, t + h) straddles c when t < c <= t + h): non-decreasing in h (the weighted isotonic fit of each lag's estimate,
    weighted by its pairs); a lag with fewer than MIN_PAIRS pairs takes the estimate below it. `median`: each lag's
    estimate is the median of the squared differences over its value for normal noise (2 x 0.4549 gamma), which a
    few odd commits among the pairs do not move (Cressie-Hawkins' mean of square roots is moved by them).
    `classical`: half the mean square (Matheron's), the mean square a mean over many commits really has when the
    noise has heavy tails (the robust estimates give the bulk's, which a long mean's spread exceeds)."""
    kind = "classical" if classical else "median" if median else "robust"
    return variograms(y, most_lag, cut, (kind,))[0]


def variograms(y: Sequence[float], most_lag: int, cut: int | Sequence[int] | None = None,
               kinds: Sequence[str] = ("robust", "classical")) -> list[np.ndarray]:
    """`variogram` of each kind ("robust": Cressie-Hawkins', "median", "classical") from one pass over the pairs."""
    values = np.asarray(y, dtype=float)
    n = len(values)
    reach = _reach(n, cut)
    lags = min(most_lag, n - 1)
    by = _by_lag if "median" in kinds or lags < LAGS_AT_ONCE else _by_block
    estimates, weights = by(values, lags, reach, kinds)
    return [_fitted(estimates[kind], weights, most_lag) for kind in kinds]


def _by_lag(values: np.ndarray, lags: int, reach: np.ndarray | None, kinds: Sequence[str]
            ) -> tuple[dict[str, list[float]], list[int]]:
    n = len(values)
    estimates: dict[str, list[float]] = {kind: [] for kind in kinds}
    weights: list[int] = []
    for h in range(1, lags + 1):
        diffs = values[h:] - values[:-h]  # pair (t, t + h) for t = 0 .. n - h - 1
        if reach is not None:
            diffs = diffs[reach[:n - h] > h]
        m = len(diffs)
        if m < MIN_PAIRS and weights:
            break
        weights.append(m)
        for kind in kinds:
            estimates[kind].append(_lag_estimate(kind, diffs))
    return estimates, weights


def _by_block(values: np.ndarray, lags: int, reach: np.ndarray | None, kinds: Sequence[str]
              ) -> tuple[dict[str, list[float]], list[int]]:
    """`_by_lag`'s robust and classical estimates, LAGS_AT_ONCE lags at a time from one (t, h) array of pairs: a
    variogram to 400 lags made 400 small numpy calls an estimate (the same figures to 1e-14)."""
    n = len(values)
    t = np.arange(n)[:, None]
    padded = np.concatenate([values, np.zeros(lags)])
    estimates: dict[str, list[float]] = {kind: [] for kind in kinds}
    weights: list[int] = []
    for first in range(1, lags + 1, LAGS_AT_ONCE):
        h = np.arange(first, min(first + LAGS_AT_ONCE, lags + 1))[None, :]
        valid = t + h < n
        if reach is not None:
            valid &= reach[:, None] > h
        diffs = np.where(valid, padded[t + h] - values[:, None], 0.0)
        sums = {"robust": np.sqrt(np.abs(diffs)).sum(axis=0) if "robust" in kinds else None,
                "classical": (diffs * diffs).sum(axis=0) if "classical" in kinds else None}
        for j, m in enumerate(valid.sum(axis=0).tolist()):
            if m < MIN_PAIRS and weights:
                return estimates, weights
            weights.append(m)
            for kind in kinds:
                estimates[kind].append(_from_sum(kind, float(sums[kind][j]), m) if m else 0.0)
    return estimates, weights


def _from_sum(kind: str, total: float, m: int) -> float:
    """A lag's estimate from the sum over its m pairs of |d|^(1/2) (robust) or d^2 (classical)."""
    if kind == "classical":
        return total / m / 2
    return (total / m) ** 4 / (2 * (CRESSIE_HAWKINS[0] + CRESSIE_HAWKINS[1] / m))


def _reach(n: int, cut: int | Sequence[int] | None) -> np.ndarray | None:
    """For each t, how far a pair (t, t + h) reaches before it straddles a cut: it is kept while h < reach[t] (the
    first cut after t, less t). One mask a lag instead of one per cut (a 10,000-commit series has dozens)."""
    if cut is None:
        return None
    cuts = np.unique(np.asarray([cut] if isinstance(cut, int | np.integer) else list(cut), dtype=np.int64))
    if not len(cuts):
        return None
    t = np.arange(n)
    following = np.searchsorted(cuts, t, side="right")  # the index of the first cut > t
    return np.where(following < len(cuts), cuts[np.minimum(following, len(cuts) - 1)] - t, np.iinfo(np.int64).max)


def _lag_estimate(kind: str, diffs: np.ndarray) -> float:
    m = len(diffs)
    if not m:
        return 0.0
    if kind == "median":
        return float(np.median(diffs * diffs)) / (2 * 0.4549)
    return _from_sum(kind, float(np.sum(diffs * diffs if kind == "classical" else np.sqrt(np.abs(diffs)))), m)


def _fitted(estimates: list[float], weights: list[int], most_lag: int) -> np.ndarray:
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

