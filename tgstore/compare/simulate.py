"""Simulated timing histories, to count what the step detector (`stepfit.analyse`) reports where nothing happened
and what it finds where something did: the figures bench/bench_regressions.py prints and `detectable` is built from.

A commit's value is the best of its runs; its runs are that level times 1 + |N(0, RUN_NOISE)| (one process's runs
agree closely, as on the real machine). The level is the noise model's draw: independent, correlated (AR(1)), or
drifting, and a step multiplies the level of the second half.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tgstore.compare.detectable import GOAL
from tgstore.compare.stepfit import Series, analyse

RUN_NOISE = 0.005
RUNS = 10
FLOOR = 0.02  # the least noise `tgstore regressions` assumes of run times (history.regressions.TIME_FLOOR)

Noise = Callable[[np.random.Generator, int], np.ndarray]


def independent(sd: float = 0.02) -> Noise:
    return lambda rng, n: rng.normal(0, sd, n)


def correlated(rho: float = 0.9, sd: float = 0.02) -> Noise:
    """AR(1) with this correlation from commit to commit and this standard deviation overall (stationary)."""
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        out = np.empty(n)
        out[0] = rng.normal(0, sd)
        innovation = sd * math.sqrt(1 - rho * rho)
        for t in range(1, n):
            out[t] = rho * out[t - 1] + rng.normal(0, innovation)
        return out
    return draw


def student(df: float = 3.0, sd: float = 0.02) -> Noise:
    """Independent heavy-tailed noise: Student's t with df degrees of freedom, scaled to this standard deviation."""
    scale = sd / math.sqrt(df / (df - 2)) if df > 2 else sd
    return lambda rng, n: scale * rng.standard_t(df, n)


def random_walk(per_commit: float = 0.01, sd: float = 0.0) -> Noise:
    """The level wanders: each commit moves it by N(0, per_commit), plus independent noise."""
    return lambda rng, n: np.cumsum(rng.normal(0, per_commit, n)) + (rng.normal(0, sd, n) if sd else 0.0)


def drifting(per_commit: float = 0.01, sd: float = 0.02) -> Noise:
    """The level moves by `per_commit` (relative) at every commit, plus independent noise."""
    return lambda rng, n: per_commit * np.arange(n) + rng.normal(0, sd, n)


def history(rng: np.random.Generator, noise: Noise, n: int = 40, step: float = 1.0, runs: int = RUNS,
            floor: float = FLOOR) -> Series:
    """A series of n commits with `noise`, the second half's level times `step` (the step at n // 2)."""
    levels = 1e5 * np.exp(noise(rng, n) + math.log(step) * (np.arange(n) >= n // 2))
    samples = [list(level * (1 + np.abs(rng.normal(0, RUN_NOISE, runs)))) for level in levels]
    return Series([min(s) for s in samples], samples if runs else None, floor)


@dataclass
class Counts:
    series: int = 0
    alarms: int = 0  # series with a reported step (anywhere)
    found: int = 0  # series with a reported step at the planted place (+-1 commit), in its direction
    spikes: int = 0  # series with a reported spike
    runs_only: int = 0  # series with a candidate only the runs back (what a runs-only test would have reported)

    def rate(self, what: str) -> float:
        return getattr(self, what) / self.series if self.series else 0.0


def count(noise: Noise, seeds: range, per_seed: int, n: int = 40, step: float = 1.0, runs: int = RUNS) -> Counts:
    out = Counts()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for _ in range(per_seed):
            found = analyse(history(rng, noise, n, step, runs))
            out.series += 1
            out.alarms += bool(found.steps)
            out.found += any(abs(s.index - n // 2) <= 1 and (s.ratio > 1) == (step > 1) for s in found.steps)
            out.spikes += bool(found.spikes)
            out.runs_only += any(s.evidence() == "runs only" for s in found.set_aside)
    return out


def found_share(n: int, step: float, draws: list[np.ndarray]) -> float:
    """The share of `draws` (noise series of length n, sd 1) in which a step of `step` noise units at n // 2 is
    reported at its place (+-1 commit)."""
    scale = 0.05  # any scale above the floor: the detector is scale-free there
    found = 0
    for noise in draws:
        y = scale * (noise + step * (np.arange(n) >= n // 2))
        analysis = analyse(Series(list(np.exp(y)), None, 0.0))
        found += any(abs(s.index - n // 2) <= 1 and s.ratio > 1 for s in analysis.steps)
    return found / len(draws)


def detectable(n: int, series: int = 2000, seeds: range = range(10), low: float = 0.5, high: float = 40.0) -> float:
    """The step (noise units) found GOAL of the time in series of n commits: bisection on common random noise."""
    per_seed = max(1, series // len(seeds))
    draws = [draw for seed in seeds for draw in np.random.default_rng(seed).normal(0, 1, (per_seed, n))]
    if found_share(n, high, draws) < GOAL:
        return math.inf
    for _ in range(12):
        middle = (low + high) / 2
        low, high = (low, middle) if found_share(n, middle, draws) >= GOAL else (middle, high)
        if high - low < 0.05:
            break
    return round(high, 2)
