"""Steps in a noisy series, and how sure each one is: the statistics under `tgstore regressions`, with no database.

1. The fit: a benchmark's history is piecewise constant plus noise (asv's model), fitted on log times (a step is a
   ratio) by PELT (`segment.pelt`) with a penalty of PENALTY x sigma^2 x ln n per segment, sigma the series' noise
   per commit. A commit off the level on both sides is taken out first (`spike_candidates`), so one slow reading
   does not become two steps; it is tested on its own as a spike (below).
2. Each breakpoint the fit proposes is a candidate, tested twice; it is reported when both agree (`Step.evidence`):
   - the history: the change of level (the mean of up to w commits after minus up to w before) against the
     series' own history of commit-to-commit changes at every lag (`noise_model`: its variogram, from the pairs
     that straddle neither this breakpoint nor another step of more than OTHER_STEP noise units), compared with
     Student's t (`degrees_of_freedom`: the spread is estimated from the series itself). Correlated noise and drift
     make the history's changes large, so they are not mistaken for a step. The window w (`windows`: WINDOW
     commits, doubled up to a fifth of the series) is the one whose change the history says is least spread: long
     for independent or correlated noise, whose means settle, short for a random walk, whose means wander. It is
     chosen from the variogram alone, not from the change, so the choice does not make a step;
   - the runs: Mann-Whitney U (`ranktest.mann_whitney`, exact for small samples) between the stored timed runs of the
     NEAREST commits each side. Runs within one process agree with each other more than processes do, so the runs
     alone call a drift certain: they are needed, not enough.
   The breakpoint was chosen by the same data, as the most step-like place: each p-value is multiplied by the number
   of places a breakpoint could have been chosen (Bonferroni), which bounds the chance that the most extreme of
   them looks like this under no step. Re-timing the two commits (`tgstore regressions --confirm`) is the test on
   data that did not choose the breakpoint.
3. A spike: one commit off its neighbours both ways, tested the same two ways (the history of that contrast, the
   commit's runs against each neighbour's): "slower at X, back at Y".

bench/bench_regressions.py prints what this does on simulated histories (false alarms under drift and correlated
noise, detection); docs/timing.md has the figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from tgstore.compare.detectable import detectable_step
from tgstore.compare.noise_model import contrast_mean_square, level_change, variogram, variograms
from tgstore.compare.ranktest import mann_whitney, t_two_sided
from tgstore.compare.segment import pelt

PENALTY = 3.0  # x sigma^2 ln(n): the cost of one more segment (BIC's is 2; candidates are tested after)
MIN_NOISE = 0.005  # relative (0.5%): no series is trusted to be quieter than this
ALPHA = 0.01  # a step is reported when both tests give p below this (after the Bonferroni factor)
WINDOW = 10  # commits each side whose mean measures a level change: the shortest window (see windows)
WINDOW_SHARE = 0.2  # the longest window, as a share of the series (window_for)
MOST_WINDOW = 200  # and at most (the variogram to twice this lag costs O(n x lag) a test)
HISTORY_REACH = 1000  # commits each side of a breakpoint whose history is its noise model
NEAREST = 3  # commits each side of a step whose runs are compared
MIN_SIDE = 2  # commits each side of a step for it to be called: one commit at an end may be a slow reading
SPIKE_Z = 3.0  # a commit this many noise units off both neighbours (and they nearer each other) is set apart
STANDARD = NormalDist()
DF_SHARE = 0.6  # see degrees_of_freedom
OTHER_STEP = 5.0  # see big_steps
LISTED_UNITS = 3.0  # a change the runs back but too little history can judge is listed from this many noise units
JUDGING_DF = 5.0  # fewer degrees of freedom (under ~6 commits a side): the history's spread is itself too uncertain


def degrees_of_freedom(before: int, after: int) -> float:
    """The Student t degrees of freedom of a level change measured over `before` and `after` commits: the spread
    is estimated from the series itself, whose commits are not independent, so fewer than a two-sample t-test's
    (DF_SHARE of them: chosen by simulation, bench/bench_regressions.py)."""
    return max(1.0, DF_SHARE * (before + after - 2))


def window_for(n: int) -> int:
    """The longest window a side a series of n commits gives a level change: WINDOW_SHARE of it (its variogram is
    estimated at twice that lag from the series itself: a shorter series cannot say how correlated noise adds up
    over longer stretches, and calls an AR(1) wander a step), at least WINDOW, at most MOST_WINDOW."""
    return max(WINDOW, min(MOST_WINDOW, int(n * WINDOW_SHARE)))


def windows(longest: int) -> list[int]:
    """The windows tried: WINDOW, doubled up to `longest`, and `longest`."""
    out = [WINDOW]
    while out[-1] * 2 <= longest:
        out.append(out[-1] * 2)
    if out[-1] < longest:
        out.append(longest)
    return out


def least_spread_windows(before: tuple[int, int], after: tuple[int, int], longest: int, gamma: np.ndarray,
                         floor: float, classical: np.ndarray | None = None) -> tuple[range, range, float, float]:
    """The windows (of `windows(longest)`, cut at the segments' ends) before and after a breakpoint between the
    segments `before` and `after` whose level change is least spread under the variogram `gamma`: (before, after,
    the spread, the least spread a series at the noise floor would have over them). Each spread is floored there.
    A window longer than WINDOW is spread at least as the `classical` variogram says: a mean over many commits of
    heavy-tailed noise (Student t) spreads as its whole variance, more than the robust variogram's bulk (a t3 series
    of 1,000 commits called 2 of 20 steps without it, bench/bench_detection_grid.py)."""
    (s0, e0), (s1, e1) = before, after
    best: tuple[range, range, float, float] | None = None
    for window in windows(longest):
        sides = range(max(s0, e0 - window), e0), range(s1, min(e1, s1 + window))
        if best is not None and min(len(sides[0]), len(sides[1])) < window:
            break  # a segment ends within it: a long mean against a short one is as spread as the short one, and
            # the degrees of freedom of the long one's commits would overstate what is known (2-commit excursions
            # of Student t noise were called steps so)
        least = floor ** 2 * (1 / len(sides[0]) + 1 / len(sides[1]))
        weights = level_change(*sides)
        square = contrast_mean_square(weights, gamma)
        if classical is not None and window > WINDOW:
            square = max(square, contrast_mean_square(weights, classical))
        spread = math.sqrt(max(square, least))
        if best is None or spread < best[2]:
            best = (*sides, spread, least)
    assert best is not None
    return best


def two_sided(z: float) -> float:
    return 2 * STANDARD.cdf(-abs(z))


def noise(y: Sequence[float]) -> float:
    """The series' noise (a standard deviation, in y's units) from its successive differences."""
    return noise_of_differences([b - a for a, b in zip(y, y[1:], strict=False)])


def noise_of_differences(diffs: Sequence[float]) -> float:
    """The median absolute difference over 0.954 (its value for normal noise of sd 1 per commit): robust to the few
    that are steps."""
    return statistics.median(abs(d) for d in diffs) / 0.954 if diffs else 0.0


@dataclass
class Step:
    index: int  # the first commit after the step (an index into the series)
    before: float  # the median of the level before (linear units)
    after: float  # and after
    p_history: float  # the level change against the series' history (Bonferroni-adjusted)
    p_runs: float | None  # Mann-Whitney U over the nearest commits' runs, adjusted (None: no runs stored)
    history_judged: bool = True  # False: a change of LISTED_UNITS or more where the series' history runs out within
    # a window (it starts or ends there) and is too short to judge it: the test could not call it even at the noise
    # floor, its windows give fewer than JUDGING_DF degrees of freedom (a spread estimated from so few commits is
    # itself a guess), or one side has one commit
    size: float = math.inf  # the change in noise units
    last_before: int | None = None  # the last commit of the level before (an index; None: index - 1)
    sides: int = MIN_SIDE  # commits on the shorter side (of the fit's levels)
    back_at: int | None = None  # an excursion: the index of the step that comes back
    excursion_from: int | None = None  # this step comes back from the excursion that started there

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf

    @property
    def p(self) -> float:
        return max(self.p_history, self.p_runs if self.p_runs is not None else 0.0)

    @property
    def confidence(self) -> float:
        return 1 - self.p

    def evidence(self, alpha: float = ALPHA) -> str:
        """What it stands out from: 'history and runs', 'history (no runs stored)', 'runs only', 'runs (too little
        history to judge)' (the history test could not have called it: re-timing decides), 'too little history to
        judge (no runs stored)' (likewise, for a series without runs: a case's total), 'history only', 'neither'."""
        history = self.p_history < alpha
        if self.p_runs is None:
            if history:
                return "history (no runs stored)"
            return "neither" if self.history_judged else "too little history to judge (no runs stored)"
        runs = self.p_runs < alpha
        if runs and not history and not self.history_judged:
            return "runs (too little history to judge)"
        return {(True, True): "history and runs", (True, False): "history only", (False, True): "runs only",
                (False, False): "neither"}[(history, runs)]

    def reported(self, alpha: float = ALPHA) -> bool:
        return self.evidence(alpha) in ("history and runs", "history (no runs stored)")


@dataclass
class Spike:
    index: int  # the commit off its neighbours ("slower at X"; X + 1 is "back at Y")
    level: float  # its neighbours' mean level (linear units)
    value: float  # its own value
    p_history: float
    p_runs: float | None

    @property
    def ratio(self) -> float:
        return self.value / self.level if self.level else math.inf

    @property
    def p(self) -> float:
        return max(self.p_history, self.p_runs if self.p_runs is not None else 0.0)


@dataclass
class Series:
    values: list[float]  # one per commit, history order, all > 0
    samples: list[list[float]] | None = None  # the runs behind each value, if stored
    floor: float = MIN_NOISE  # the least relative noise to assume (e.g. the runs' own spread)


@dataclass
class Analysis:
    steps: list[Step]  # reported: the history and the runs agree
    noise: float  # relative noise per commit (a standard deviation of log values)
    segments: list[tuple[int, int]]  # of the points kept (indexes into the series)
    outliers: list[int] = field(default_factory=list)  # single commits off the level on both sides, not spikes
    unsure: list[Step] = field(default_factory=list)  # significant, with one commit on one side (an end)
    set_aside: list[Step] = field(default_factory=list)  # a candidate only one test (or neither) backs
    spikes: list[Spike] = field(default_factory=list)  # one-commit excursions the history and their runs back
    commits: int = 0
    short: list[Step] = field(default_factory=list)  # the runs back it (or none are stored); too little history to
    # judge: listed, to re-time

    @property
    def detectable(self) -> float:
        """The smallest step (a ratio - 1) this detector finds 90% of the time in a series of this length and noise,
        the step in the middle (simulated: `detectable.TABLE`)."""
        return math.expm1(detectable_step(self.commits) * self.noise)


def spike_candidates(y: np.ndarray, sigma: float) -> list[int]:
    """Interior commits further than SPIKE_Z noise units from both neighbours' mean, whose neighbours are nearer
    each other than to it: a reading off the level (one slow process, a loaded minute), not two steps."""
    found = []
    for i in range(1, len(y) - 1):
        off = y[i] - (y[i - 1] + y[i + 1]) / 2
        if abs(off) > SPIKE_Z * sigma * math.sqrt(1.5) and abs(y[i + 1] - y[i - 1]) < abs(off) and \
                (y[i] - y[i - 1]) * (y[i] - y[i + 1]) > 0:
            found.append(i)
    return found


def _runs_p(samples: list[list[float]] | None, a: Sequence[int], b: Sequence[int], places: int) -> float | None:
    if samples is None:
        return None
    left = [v for i in a for v in samples[i] or []]
    right = [v for i in b for v in samples[i] or []]
    if not left or not right:
        return None
    return min(1.0, places * mann_whitney(left, right)[1])


def _spike(y: np.ndarray, i: int, gamma: np.ndarray, samples: list[list[float]] | None, floor: float,
           places: int) -> Spike:
    """Commit i against its neighbours: the history (its change from each neighbour, y[i] - y[i-1] and
    y[i] - y[i+1], the same way and each standing out from the series' commit-to-commit changes, 2 gamma(1) under
    `gamma`, the variogram of the series without commit i: the smaller of the two is tested, so a commit beside a
    step is not a spike by half the step) and its runs, which must differ from each neighbour's runs on their own,
    the same way (a single odd run makes a best time odd, not the commit)."""
    off = y[i] - (y[i - 1] + y[i + 1]) / 2
    nearest = min(abs(y[i] - y[i - 1]), abs(y[i] - y[i + 1]))
    spread = math.sqrt(max(contrast_mean_square({i - 1: -1.0, i: 1.0}, gamma), 2 * floor ** 2))
    p_history = min(1.0, places * two_sided(nearest / spread)) if spread > 0 else float(nearest == 0)
    p_runs = None
    if samples is not None and samples[i]:
        sides = []
        for j in (i - 1, i + 1):
            if not samples[j]:
                continue
            same_way = (statistics.median(samples[i]) > statistics.median(samples[j])) == (off > 0)
            sides.append(min(1.0, places * mann_whitney(samples[i], samples[j])[1]) if same_way else 1.0)
        p_runs = max(sides) if sides else None
    return Spike(i, math.exp((y[i - 1] + y[i + 1]) / 2), math.exp(y[i]), p_history, p_runs)


def big_steps(segments: list[tuple[int, int]], y: np.ndarray, sigma: float) -> list[int]:
    """The fit's breakpoints between levels more than OTHER_STEP noise units apart. When the history of one step is
    estimated, pairs may not straddle these (another real step in the history would make every change across it
    look like noise); smaller ones stay in, since leaving out the places a correlated series wandered most would
    make its history look quieter than it is."""
    medians = [float(np.median(y[s:e])) for s, e in segments]
    return [segments[k + 1][0] for k in range(len(segments) - 1)
            if abs(medians[k + 1] - medians[k]) > OTHER_STEP * sigma]


def analyse(series: Series, alpha: float = ALPHA) -> Analysis:
    """The steps and spikes of a series (see the module's docstring)."""
    everything = np.log(np.asarray(series.values, dtype=float))
    n = len(everything)
    if n < 3:
        return Analysis([], series.floor, [(0, n)] if n else [], commits=n)
    sigma = max(series.floor, noise(list(everything)))
    candidates = spike_candidates(everything, sigma)
    kept = [i for i in range(n) if i not in set(candidates)]
    y = everything[kept]
    segments = pelt(y, PENALTY * sigma ** 2 * math.log(len(y)))
    spikes, outliers = [], []
    big = big_steps(segments, y, sigma)
    big_commits = [kept[c] for c in big]  # as commit indexes
    for i in candidates:
        # the history of the series without commit i (its other odd commits kept, as leaving every large change
        # out would make the history quieter than it is, but a median does not let them decide), across no big step
        spike_gamma = variogram(np.delete(everything, i), 1, cut=[c - (c > i) for c in big_commits], median=True)
        spike = _spike(everything, i, spike_gamma, series.samples, series.floor, n - 2)
        if spike.p_history < alpha and (spike.p_runs is None or spike.p_runs < alpha):
            spikes.append(spike)  # backed by the history and by its own runs
        else:
            outliers.append(i)
    places = len(y) - 1  # where a breakpoint could have been chosen
    kept_samples = [series.samples[i] for i in kept] if series.samples is not None else None

    longest = window_for(len(y))

    def test(before_segment: tuple[int, int], after_segment: tuple[int, int]) -> Step:
        (s0, e0), (s1, e1) = before_segment, after_segment
        lags = min(e0 - s0, longest) + min(e1 - s1, longest)  # the longest windows (under 55 commits: 10, as ever)
        # the history near the breakpoint (all of it up to 2 x HISTORY_REACH commits): a 10,000-commit series spans
        # years of machines, and its variogram at 400 lags cost 40 ms a test
        lo, hi = max(0, s1 - HISTORY_REACH), min(len(y), s1 + HISTORY_REACH)
        near, cuts = y[lo:hi], [c - lo for c in sorted({*big, s1}) if lo < c < hi]
        gamma, *classical = variograms(near, lags, cuts, ("robust", "classical") if longest > WINDOW else ("robust",))
        before, after, spread, least = least_spread_windows(before_segment, after_segment, longest, gamma,
                                                            series.floor, classical[0] if classical else None)
        weights = level_change(before, after)
        change = sum(w * y[i] for i, w in weights.items())
        z = change / spread if spread > 0 else (math.copysign(math.inf, change) if change else 0.0)
        df = degrees_of_freedom(len(before), len(after))
        p_runs = _runs_p(kept_samples, range(max(s0, e0 - NEAREST), e0), range(s1, min(e1, s1 + NEAREST)), places)
        step = Step(kept[s1], math.exp(float(np.median(y[s0:e0]))), math.exp(float(np.median(y[s1:e1]))),
                    min(1.0, places * t_two_sided(z, df)), p_runs)
        # could the history have called this change at all? Not when even a series as quiet as the floor would
        # leave it under the test's threshold: its few commits give the t-test too few degrees of freedom
        at_floor = min(1.0, places * t_two_sided(abs(change) / math.sqrt(least), df)) if least else 0.0
        step.size = float(abs(change) / sigma) if sigma else math.inf
        step.last_before, step.sides = kept[e0 - 1], min(e0 - s0, e1 - s1)
        # the history runs out within a window of the breakpoint (the series starts or ends there, whatever levels
        # lie between: a last commit off its level is a segment of its own): only then is it too short to judge; a
        # short level inside a long history is the history's to judge (a random walk has many)
        edge = s1 < WINDOW or len(y) - s1 < WINDOW
        step.history_judged = bool(step.size < LISTED_UNITS or not edge or (
            at_floor < alpha and df >= JUDGING_DF and min(e0 - s0, e1 - s1) >= MIN_SIDE))
        return step

    def kind(step: Step) -> str:
        if step.reported(alpha) and step.sides >= MIN_SIDE:
            return "step"  # the history called it (whether or not it could have failed to)
        runs_back = step.p_runs is not None and step.p_runs < alpha
        if runs_back and not step.history_judged:
            return "short"  # the runs back it, the history is too short to judge: listed, re-timing decides
        if step.reported(alpha):
            return "unsure"  # the history backs it with one commit on a side, no runs to say more
        if step.p_runs is None and not step.history_judged:
            return "short"  # no runs stored (a case's total) and too little history to judge a large change: said
        return "rejected"

    # Each breakpoint tested; a rejected one is merged back into its neighbours and they are tested again (its
    # segment had cut their windows short: a large step lost beside an odd commit), the weakest first
    bounds = list(segments)
    tested = [test(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    dropped: list[Step] = []
    while True:
        rejected = [k for k, step in enumerate(tested) if kind(step) == "rejected"]
        if not rejected:
            break
        k = max(rejected, key=lambda j: (tested[j].p_history, -tested[j].size))
        dropped.append(tested[k])
        bounds[k:k + 2] = [(bounds[k][0], bounds[k + 1][1])]
        del tested[k]
        for j in (k - 1, k):
            if 0 <= j < len(tested):
                tested[j] = test(bounds[j], bounds[j + 1])
    steps = [step for step in tested if kind(step) == "step"]
    short = [step for step in tested if kind(step) == "short"]
    unsure = [step for step in tested if kind(step) == "unsure"]
    set_aside = [step for step in dropped if step.p_history < alpha or (step.p_runs is not None
                                                                          and step.p_runs < alpha)]
    link_excursions(steps + short)
    segments = bounds
    return Analysis(steps, sigma, [(kept[s], kept[e - 1] + 1) for s, e in segments], outliers, unsure, set_aside,
                    spikes, n, short)


def link_excursions(steps: list[Step]) -> None:
    """Two successive steps the opposite ways that come back to about the level before (their log ratios cancel to
    within half the smaller): an excursion, "slower at X, back at Y", of any length. Each names the other."""
    ordered = sorted(steps, key=lambda st: st.index)
    for first, second in zip(ordered, ordered[1:], strict=False):
        a, b = math.log(first.ratio), math.log(second.ratio)
        if a * b < 0 and abs(a + b) <= min(abs(a), abs(b)) / 2 and first.back_at is None:
            first.back_at, second.excursion_from = second.index, first.index
