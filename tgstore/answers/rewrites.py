"""`rewrites`: the rewrite steps recorded inside a case's passes at a commit, as tinygrad's VIZ lists them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tgstore.answers.base import Answer, CommitRef, Reader, Unanswerable
from tgstore.compare.rewrite_steps import KernelSteps, case_steps, one_renderer, require_recorded
from tgstore.compare.stage_diff import StageError, run_with_case


@dataclass
class RewritesAnswer(Answer):
    case: str
    commit: CommitRef
    kernels: list[KernelSteps] = field(default_factory=list)  # each with its passes and their steps
    missing: str | None = None  # why no step is listed (nothing recorded at this commit), else None


def rewrites(db: Reader, case: str, commit: str | None = None, kernel: int | None = None,
             pass_name: str | None = None, renderer: str | None = None, schedule: bool = False) -> RewritesAnswer:
    """The rewrite steps inside a case's passes at a commit (default: the newest holding the case): per kernel and
    pass, each rule that matched (file:line, the UPat's source) and the node before and after (op, dtype, arg, the
    hash of its subgraph). Without renderer, one renderer stands for each kernel."""
    try:
        row, run_id = run_with_case(db, case, commit)
        found = case_steps(db, run_id, case, kernel=kernel, pass_name=pass_name, renderer=renderer,
                           schedule=schedule)
    except (StageError, LookupError) as exc:
        raise Unanswerable(str(exc)) from None
    where = row.describe() + (f" kernel {kernel}" if kernel is not None else "") + (
        f" pass {pass_name!r}" if pass_name else "")
    try:
        require_recorded(found, case, where)
        missing = None
    except StageError as exc:
        missing = str(exc)
    return RewritesAnswer(case, CommitRef.of(row), found if renderer else one_renderer(found), missing)
