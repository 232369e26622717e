"""`stages`: the passes each kernel of a case went through at a commit."""

from __future__ import annotations

from dataclasses import dataclass, field

from tgstore.answers.base import Answer, CommitRef, Reader, Unanswerable
from tgstore.compare.stage_diff import KernelPasses, StageError, kernel_passes, run_with_case


@dataclass
class StagesAnswer(Answer):
    case: str
    commit: CommitRef
    schedule: bool  # the case's scheduler passes (one entry, kernel_index None) instead of its kernels' codegen
    kernels: list[KernelPasses] = field(default_factory=list)  # one per kernel and renderer; empty: none recorded


def stages(db: Reader, case: str, commit: str | None = None, kernel: int | None = None,
           renderer: str | None = None, schedule: bool = False) -> StagesAnswer:
    """The passes each kernel of a case went through at a commit (default: the newest holding the case), in order:
    name, nesting depth, node count after the pass, whether it changed the graph, the graph's hash; one entry per
    kernel and renderer (schedule=True: the case's scheduler passes)."""
    try:
        row, run_id = run_with_case(db, case, commit)
        found = kernel_passes(db, run_id, case, kernel=kernel, renderer=renderer.upper() if renderer else None,
                              schedule=schedule)
    except (StageError, LookupError) as exc:
        raise Unanswerable(str(exc)) from None
    return StagesAnswer(case, CommitRef.of(row), schedule, found)
