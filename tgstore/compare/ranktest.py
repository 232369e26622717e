"""The Mann-Whitney U test and Student's t tail, without scipy: importing `scipy.stats` took 1.6 s of the 2-core
machine's time per `tgstore regressions` (its whole budget on 10,000 commits is 1 s), `scipy.special` 0.35 s; both
are short to write. The t tail is the regularized incomplete beta function, P(|T| >= t) = I_x(df / 2, 1 / 2) with
x = df / (df + t^2), by its continued fraction (Lentz's method, as in Numerical Recipes' `betacf`).

U's p-value (two-sided), as scipy's `mannwhitneyu` gives it (tests/test_regressions.py checks both against each other
and against the published tables):
- untied samples with at most EXACT_UP_TO arrangements (C(n1 + n2, n1)): U's exact distribution (the count of
  arrangements with each U, by the usual recursion);
- tied samples that small: every arrangement of the pooled ranks enumerated (a permutation test, exact: twice
  the smaller tail);
- larger: the normal approximation with the tie correction to the variance and a continuity correction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

EXACT_UP_TO = 20_000  # arrangements (C(n1 + n2, n1)) up to which U's p is exact

_NORMAL = NormalDist()


def t_two_sided(z: float, df: float) -> float:
    """P(|T| >= |z|) for Student's t with df degrees of freedom."""
    if math.isinf(z):
        return 0.0
    return min(1.0, incomplete_beta(df / 2, 0.5, df / (df + z * z)))


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):  # the fraction converges fast here; else by symmetry
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float, steps: int = 300, eps: float = 1e-15) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, steps + 1):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            out *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return out


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """The number of arrangements of n1 and n2 untied values with each U = 0 .. n1 n2 (U: pairs with the first
    above)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    # the largest value is from the first sample (it is above all n2 of the second) or from the second
    with_first, with_second = _u_counts(n1 - 1, n2), _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(with_first):
        out[u + n2] += c
    for u, c in enumerate(with_second):
        out[u] += c
    return tuple(out)


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(U of `a`, two-sided p) of the Mann-Whitney U test (see the module). p is 1 when either side is empty or every
    value is tied."""
    n1, n2 = len(a), len(b)
    if not n1 or not n2 or len(set(a) | set(b)) == 1:
        return (n1 * n2 / 2 if n1 and n2 else 0.0), 1.0
    pooled = [*a, *b]
    ranks = _ranks(pooled)
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    tied = len(set(pooled)) < n1 + n2
    if math.comb(n1 + n2, n1) <= EXACT_UP_TO:
        if not tied:
            counts = _u_counts(n1, n2)
            far = abs(u - mean)
            extreme = sum(c for k, c in enumerate(counts) if abs(k - mean) >= far - 1e-9)
            return u, min(1.0, extreme / math.comb(n1 + n2, n1))
        # twice the smaller tail (the tied distribution need not be symmetric), as scipy's permutation test
        above = below = arrangements = 0
        offset = n1 * (n1 + 1) / 2
        for chosen in itertools.combinations(ranks, n1):
            arrangements += 1
            other = sum(chosen) - offset
            above += other >= u - 1e-9
            below += other <= u + 1e-9
        return u, min(1.0, 2 * min(above, below) / arrangements)
    n = n1 + n2
    ties = sum(t ** 3 - t for t in _tie_sizes(pooled))
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return u, 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(variance)
    return u, min(1.0, 2 * _NORMAL.cdf(-max(z, 0.0)))


def _tie_sizes(values: Sequence[float]) -> list[int]:
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return [c for c in counts.values() if c > 1]
