"""Speed in the CI gate (`tgstore check --against REV --time`): the working tree's kernels and REV's, timed on this
machine in one session, interleaved, and the kernels slower or faster beyond the noise.

REV's tinygrad comes from the working tree's own git repository (a PR checkout holds its base), unpacked as a sweep
does. Each round extracts and times both (`--time`: every kernel in fresh processes, the best kept), alternating which
goes first (ABBA...), so that load and drift hit both alike. A kernel (same case and schedule position) is slower when
every round of the working tree is slower than every round of REV, the best times differ by more than the threshold,
and the Mann-Whitney U test on all their timed runs gives p < 0.01; faster the same way round.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tgstore import tempdirs
from tgstore.compare.stepfit import mann_whitney
from tgstore.pipeline import ExtractionPlan, extract_bundle
from tgstore.store.timings import MIN_KERNEL_NS  # shorter kernels are launch overhead: not judged
from tgstore.units import format_ns

ALPHA = 0.01


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
    p: float = 1.0
    verdict: str = "same"  # slower | faster | same | too short

    @property
    def ratio(self) -> float:
        return min(self.ns) / min(self.base_ns) if self.ns and self.base_ns else float("nan")


@dataclass
class SpeedCheck:
    against: str
    rounds: int
    threshold: float
    kernels: list[KernelSpeed]

    @property
    def slower(self) -> list[KernelSpeed]:
        return sorted((k for k in self.kernels if k.verdict == "slower"), key=lambda k: -k.ratio)

    @property
    def faster(self) -> list[KernelSpeed]:
        return sorted((k for k in self.kernels if k.verdict == "faster"), key=lambda k: k.ratio)

    def as_json(self) -> dict:
        return {"against": self.against, "rounds": self.rounds, "threshold": self.threshold,
                "kernels": [{**dataclasses.asdict(k), "ratio": round(k.ratio, 4)} for k in self.kernels]}


def timing_plan(plan: ExtractionPlan) -> ExtractionPlan:
    """The plan's suite, timed, with nothing else recorded (no stages or rewrite steps: they only cost time)."""
    return dataclasses.replace(plan, time=True, compile_times=False, stages="none", rewrites=0,
                               renderers=list(plan.effective_renderers[:1]))


def kernel_timings(bundle: Path) -> dict[tuple[str, int], dict]:
    """(case, position) -> the timing of each kernel timed ok in a bundle."""
    found = {}
    for line in bundle.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") != "case":
            continue
        for item in record["schedule"]:
            timing = item.get("timing")
            if timing and timing.get("status") == "ok":
                found[(record["name"], item["position"])] = timing
    return found


def time_once(root: Path, plan: ExtractionPlan, out: Path) -> dict[tuple[str, int], dict]:
    result = extract_bundle(root, out, plan)
    if result.status != "ok":
        last = result.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SpeedCheckError(f"timing {root} {result.status}: {last[0]}")
    return kernel_timings(out)


def judge(kernel: KernelSpeed, threshold: float) -> None:


    if not kernel.ns or not kernel.base_ns:
        kernel.verdict = "same"
        return
    if min(kernel.base_ns) < MIN_KERNEL_NS and min(kernel.ns) < MIN_KERNEL_NS:
        kernel.verdict = "too short"
        return
    kernel.p = mann_whitney(kernel.samples, kernel.base_samples)[1]
    if min(kernel.ns) > max(kernel.base_ns) and kernel.ratio > 1 + threshold and kernel.p < ALPHA:
        kernel.verdict = "slower"
    elif max(kernel.ns) < min(kernel.base_ns) and kernel.ratio < 1 / (1 + threshold) and kernel.p < ALPHA:
        kernel.verdict = "faster"


def check_speed(tree: Path, base_tree: Path, against: str, plan: ExtractionPlan, *, rounds: int = 3,
                threshold: float = 0.05, log: Callable[[str], None] = lambda _m: None) -> SpeedCheck:
    """Time `tree` (the working tree) and `base_tree` (REV's package) `rounds` times each, interleaved."""
    timed = timing_plan(plan)
    kernels: dict[tuple[str, int], KernelSpeed] = {}
    with tempdirs.owned("speed") as tmp:
        for r in range(rounds):
            order = [("working tree", tree), ("base", base_tree)]
            for which, root in order if r % 2 == 0 else order[::-1]:
                log(f"round {r + 1}/{rounds}: timing the {which}")
                for key, t in time_once(root, timed, Path(tmp) / f"{r}-{which[0]}.jsonl").items():
                    k = kernels.setdefault(key, KernelSpeed(key[0], key[1], None))
                    if which == "base":
                        k.base_ns.append(t["ns_min"])
                        k.base_samples += t.get("samples") or [t["ns_min"]]
                    else:
                        k.kernel = t.get("program") or k.kernel
                        k.ns.append(t["ns_min"])
                        k.samples += t.get("samples") or [t["ns_min"]]
    for k in kernels.values():
        judge(k, threshold)
    return SpeedCheck(against, rounds, threshold, sorted(kernels.values(), key=lambda k: (k.case, k.position)))


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
                 f"beyond {check.threshold:.0%} and p < {ALPHA}): {len(check.slower)} slower, {len(check.faster)} "
                 "faster")
    if check.slower or check.faster:
        lines += ["", "| kernel | before | after | ratio | p |", "|---|---|---|---|---|"]
        for k in check.slower + check.faster:
            lines.append(f"| {k.case}[{k.position}] `{k.kernel}` | {format_ns(min(k.base_ns))} | "
                         f"{format_ns(min(k.ns))} | {k.ratio:.2f}x | {k.p:.1g} |")
    return "\n".join(lines) + "\n"
