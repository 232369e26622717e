"""`slowdowns`: two commits' kernel times side by side on one machine, slowest change first (compare/slowdowns.py),
with the timed commits to choose from; the same keys when nothing (or one commit) is timed, with a message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgstore.answers.base import Answer, Reader, Unanswerable
from tgstore.compare.slowdowns import DEFAULT_THRESHOLD


@dataclass
class SlowdownsAnswer(Answer):
    timed_commits: list[dict[str, Any]] = field(default_factory=list)  # newest first: {"sha", "version"}
    comparison: Any = None  # compare.slowdowns.Slowdowns, when two commits are compared
    threshold: float = DEFAULT_THRESHOLD
    message: str | None = None  # why nothing is compared (nothing timed, one commit timed, no machine timed both)

    def to_json(self) -> dict[str, Any]:
        found = self.comparison.to_json() if self.comparison is not None else {
            "a": None, "b": None, "machine": None, "hostname": None, "threshold": self.threshold, "kernels": [],
            "unmatched_a": [], "unmatched_b": [], "machines": []}
        return {"timed_commits": self.timed_commits, **found, "message": self.message}


def slowdowns(db: Reader, a: str | None = None, b: str | None = None, case: str | None = None,
              machine: str | None = None, threshold: float = DEFAULT_THRESHOLD) -> SlowdownsAnswer:
    """Two commits' kernel times on one machine that timed both (default: the newest two timed commits), each
    kernel's best time at each, the ratio and whether it is beyond the threshold and the noise (slower, faster,
    within noise), slowest change first; kernels without a counterpart listed apart."""
    from tgstore.compare.slowdowns import compare_times, timed_commits
    from tgstore.store.commit_names import CommitNotFound

    commits = [{"sha": sha, "version": version} for sha, version in timed_commits(db)]
    answer = SlowdownsAnswer(commits, None, threshold)
    if len(commits) < 2 and not (a and b):
        answer.message = ("no kernel times are stored: `tgstore ingest --time` compiles and times every kernel"
                          if not commits else "only one commit has kernel times: time another "
                          "(`tgstore ingest --time`)")
        return answer
    a = a or commits[1]["sha"]
    b = b or commits[0]["sha"]
    try:
        answer.comparison = compare_times(db, a, b, case=case, machine=machine, threshold=threshold)
    except CommitNotFound as exc:
        raise Unanswerable(str(exc)) from None
    if answer.comparison.machine is None:
        answer.message = (f"no machine timed both {a} and {b}" + (f" (machine {machine})" if machine else "")
                          + ": times are only compared on one machine")
    return answer
