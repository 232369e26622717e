"""Speed in the CI gate (`tgstore check --against REV --time`): the working tree's kernels and REV's, timed on this
machine in one session, interleaved, and the kernels slower or faster beyond the noise.

REV's tinygrad comes from the working tree's own git repository (a PR checkout holds its base), unpacked as a sweep
does. Each round extracts and times both (`--time`: every kernel in fresh processes, the best kept), alternating which
goes first (ABBA...), so that load and drift hit both alike. A round is one draw: the runs inside one process agree
with each other more than processes do, so pooling every run of every round into one test would call a
process-to-process difference certain. A kernel (same case and schedule position) is slower when the exact
Mann-Whitney U test of the working tree's per-round best times against REV's gives p below 1 - the confidence and
the best times differ by more than the threshold; faster the same way round. With n rounds a side the smallest p
the test can give is 2 / C(2n, n) (every round of one side below every round of the other): 0.1 with 3 rounds, 0.0079
with 5, so `rounds_needed` says how many rounds a confidence needs, and a kernel every round of which is slower, but
with too few rounds to reach it, is "unsure", not slower.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tgstore import tempdirs
from tgstore.bundle import Bundle
from tgstore.compare.stepfit import mann_whitney
from tgstore.pipeline import ExtractionFailed, ExtractionPlan, extract_to_bundle
from tgstore.store.timings import MIN_KERNEL_NS  # shorter kernels are launch overhead: not judged
from tgstore.units import format_ns

CONFIDENCE = 0.99


def smallest_p(rounds: int) -> float:
    """The smallest two-sided p of the exact Mann-Whitney U test with `rounds` values a side: 2 / C(2n, n)."""
    return min(1.0, 2 / math.comb(2 * rounds, rounds))


def rounds_needed(confidence: float) -> int:
    """The fewest rounds a side whose exact test can reach p < 1 - confidence."""
    rounds = 1
    while smallest_p(rounds) >= 1 - confidence:
        rounds += 1
    return rounds


class SpeedCheckError(Exception):
    """The speed check could not run (REV not in the working tree's repository, an extraction failed)."""


@dataclass
class KernelSpeed:
    case: str
    position: int
    kernel: str | None  # the working tree's program name
    base_ns: list[int] = field(default_factory=list)  # REV's best per round
    ns: list[int] = field(default_factory=list)  # the working tree's best per round
    base_samples: list[int] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    p: float = 1.0  # exact Mann-Whitney U, per-round best times against REV's
    verdict: str = "same"  # slower | faster | unsure (every round says so, too few rounds) | same | too short

    @property
    def ratio(self) -> float:
        return min(self.ns) / min(self.base_ns) if self.ns and self.base_ns else float("nan")


@dataclass
class SpeedCheck:
    against: str
    rounds: int
    threshold: float
    kernels: list[KernelSpeed]
    confidence: float = CONFIDENCE

    @property
    def unsure(self) -> list[KernelSpeed]:
        return [k for k in self.kernels if k.verdict == "unsure"]

    @property
    def needed(self) -> int:
        return rounds_needed(self.confidence)

    @property
    def slower(self) -> list[KernelSpeed]:
        return sorted((k for k in self.kernels if k.verdict == "slower"), key=lambda k: -k.ratio)

    @property
    def faster(self) -> list[KernelSpeed]:
        return sorted((k for k in self.kernels if k.verdict == "faster"), key=lambda k: k.ratio)

    def to_json(self) -> dict:
        return {"against": self.against, "rounds": self.rounds, "threshold": self.threshold,
                "confidence": self.confidence, "smallest_p": smallest_p(self.rounds), "rounds_needed": self.needed,
                "kernels": [{**dataclasses.asdict(k), "ratio": round(k.ratio, 4)} for k in self.kernels]}


def timing_plan(plan: ExtractionPlan) -> ExtractionPlan:
    """The plan's suite, timed, with nothing else recorded (no stages or rewrite steps: they only cost time)."""
    return dataclasses.replace(plan, time=True, compile_times=False, stages="none", rewrites=0,
                               renderers=list(plan.effective_renderers[:1]))


def kernel_timings(bundle: Bundle) -> dict[tuple[str, int], dict]:
    """(case, position) -> the timing of each kernel timed ok in a bundle."""
    found = {}
    for case in bundle.cases:
        for item in case["schedule"]:
            timing = item.get("timing")
            if timing and timing.get("status") == "ok":
                found[(case["name"], item["position"])] = timing
    return found


def timed_rounds(trees: list[tuple[str, Path]], plan: ExtractionPlan, rounds: int, *, alternate: bool,
                 log: Callable[[int, str], None]) -> dict[str, list[dict[tuple[str, int], dict]]]:
    """{label: [each round's kernel timings]}: each (label, package tree) extracted with timings once a round, in
    one session on one machine, one after the other; `alternate` reverses the order every other round (A B B A),
    which cancels a drift of the machine's speed that is linear in time. `log(round, label)` before each; an
    extraction that fails raises ExtractionFailed."""
    found: dict[str, list[dict[tuple[str, int], dict]]] = {label: [] for label, _root in trees}
    with tempdirs.owned("timing") as tmp:
        for r in range(rounds):
            for n, (label, root) in enumerate(trees[::-1] if alternate and r % 2 else trees):
                log(r, label)
                found[label].append(kernel_timings(extract_to_bundle(root, Path(tmp) / f"{r}-{n}.jsonl", plan)))
    return found


def judge(kernel: KernelSpeed, threshold: float, confidence: float = CONFIDENCE) -> None:
    """The kernel's verdict from its rounds (each round's best time is one draw)."""
    if not kernel.ns or not kernel.base_ns:
        kernel.verdict = "same"
        return
    if min(kernel.base_ns) < MIN_KERNEL_NS and min(kernel.ns) < MIN_KERNEL_NS:
        kernel.verdict = "too short"
        return
    kernel.p = mann_whitney(kernel.ns, kernel.base_ns)[1]
    alpha = 1 - confidence
    for verdict, apart, beyond in (("slower", min(kernel.ns) > max(kernel.base_ns), kernel.ratio > 1 + threshold),
                                   ("faster", max(kernel.ns) < min(kernel.base_ns),
                                    kernel.ratio < 1 / (1 + threshold))):
        if beyond and kernel.p < alpha:
            kernel.verdict = verdict
        elif beyond and apart:
            kernel.verdict = "unsure"  # every round says so; too few rounds for the confidence


def check_speed(tree: Path, base_tree: Path, against: str, plan: ExtractionPlan, *, rounds: int = 5,
                threshold: float = 0.05, confidence: float = CONFIDENCE,
                log: Callable[[str], None] = lambda _m: None) -> SpeedCheck:
    """Time `tree` (the working tree) and `base_tree` (REV's package) `rounds` times each, interleaved."""
    try:
        per_tree = timed_rounds([("working tree", tree), ("base", base_tree)], timing_plan(plan), rounds,
                                alternate=True, log=lambda r, which: log(f"round {r + 1}/{rounds}: timing the {which}"))
    except ExtractionFailed as exc:
        raise SpeedCheckError(str(exc)) from None
    kernels: dict[tuple[str, int], KernelSpeed] = {}
    for which, timings in per_tree.items():
        for round_timings in timings:
            for key, t in round_timings.items():
                k = kernels.setdefault(key, KernelSpeed(key[0], key[1], None))
                if which == "base":
                    k.base_ns.append(t["ns_min"])
                    k.base_samples += t.get("samples") or [t["ns_min"]]
                else:
                    k.kernel = t.get("program") or k.kernel
                    k.ns.append(t["ns_min"])
                    k.samples += t.get("samples") or [t["ns_min"]]
    for k in kernels.values():
        judge(k, threshold, confidence)
    return SpeedCheck(against, rounds, threshold, sorted(kernels.values(), key=lambda k: (k.case, k.position)),
                      confidence)


def markdown(check: SpeedCheck, changes: dict[str, list[str]] | None, tree: str) -> str:
    """A short summary to paste into a pull request: what changed, what got slower or faster, by how much, how
    sure."""
    lines = [f"### tgstore check: `{tree}` against `{check.against[:12]}`", ""]
    if changes is not None:
        changed = {title: entries for title, entries in changes.items() if entries}
        lines.append("**Output:** " + ("; ".join(f"{title}: {len(e)}" for title, e in changed.items())
                                       if changed else "no kernel changed"))
        lines.append("")
    judged = [k for k in check.kernels if k.verdict != "too short"]
    lines.append(f"**Speed** ({len(judged)} kernels timed {check.rounds}x each, interleaved, on one machine; "
                 f"beyond {check.threshold:.0%} and p < {1 - check.confidence:.2g} over rounds): {len(check.slower)} "
                 f"slower, {len(check.faster)} faster" + (f", {len(check.unsure)} unsure (every round agrees; "
                                                          f"{check.needed} rounds reach that confidence)"
                                                          if check.unsure else ""))
    if check.slower or check.faster or check.unsure:
        lines += ["", "| kernel | before | after | ratio | p |", "|---|---|---|---|---|"]
        for k in check.slower + check.faster + check.unsure:
            lines.append(f"| {k.case}[{k.position}] `{k.kernel}` | {format_ns(min(k.base_ns))} | "
                         f"{format_ns(min(k.ns))} | {k.ratio:.2f}x{' (unsure)' if k.verdict == 'unsure' else ''} | "
                         f"{k.p:.2g} |")
    return "\n".join(lines) + "\n"
