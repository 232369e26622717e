"""The machine's persistent state from the reference kernel (a fixed C loop timed in every session,
extract/child/reference.py): what divides out of every series a machine-wide level change that is not tinygrad's.

The reference series (one best time per session, in history order) is fitted piecewise constant on log times with
the step detector's own fit (`segment.pelt`, penalty PENALTY x sigma^2 ln n, sigma its noise per session floored at
FLOOR): a state that persists over several sessions (another host, a frequency state) is a level of that fit, one
slow session is not. Each session's factor is its level over the median level; levels within MIN_STATE of the
median are 1 (no state to divide out). A series without the reference at every commit is left as it is.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from tgstore.compare.segment import pelt

PENALTY = 3.0
# the reference loop's noise per session is taken to be at least this (the real loop varies ~0.1%, docs/timing.md): a
# floor of 1% and no state under 3% left most of a wandering machine state in every series (bench/
# bench_detection_grid.py's family-wise figure under AR(1): 30% of histories -> 10-12% with these)
FLOOR = 0.003
MIN_STATE = 0.005  # a level this close to the median is no machine state: stepfit.MIN_NOISE, no series is quieter


def machine_factors(reference: Sequence[float | None]) -> list[float] | None:
    """Each session's machine factor (its time over the usual), or None where a session has no reference time."""
    if not reference or any(r is None or r <= 0 for r in reference):
        return None
    y = np.log(np.asarray(reference, dtype=float))
    diffs = np.abs(np.diff(y))
    sigma = max(FLOOR, float(np.median(diffs)) / 0.954 if len(diffs) else FLOOR)
    segments = pelt(y, PENALTY * sigma ** 2 * math.log(max(len(y), 2)))
    levels = [float(np.median(y[s:e])) for s, e in segments]
    usual = statistics.median(y.tolist())
    out = []
    for (s, e), level in zip(segments, levels, strict=True):
        factor = math.exp(level - usual)
        out += [1.0 if abs(factor - 1) < MIN_STATE else factor] * (e - s)
    return out
