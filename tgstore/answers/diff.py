"""`diff`: what changed between two commits' runs (spelling-blind unless asked for raw spelling)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tgstore.answers.base import Answer, Reader, Unanswerable

if TYPE_CHECKING:
    from tgstore.compare.diff import CommitDiff

SPELLINGS = ("ignore", "raw")


@dataclass
class DiffAnswer(Answer):
    found: CommitDiff

    @property
    def has_changes(self) -> bool:
        return self.found.has_changes

    def to_json(self) -> dict[str, Any]:
        from tgstore.compare.diff import diff_to_json

        return diff_to_json(self.found)


def diff(db: Reader, a: str, b: str, case: str | None = None, renderer: str | None = None, what: str = "all",
         stages: bool = False, spelling: str = "ignore", suite: str | None = None, backend: str | None = None,
         context: int = 3, ignore_names: bool = False) -> DiffAnswer:
    """What changed between commits a and b: cases and kernels changed, unified diffs of kernel ASTs and generated
    sources (what: source, ast or all), with stages=True each case's first differing scheduler pass and each
    kernel's first differing codegen pass with a structural diff there. Spelling-blind by default (spelling="raw":
    compared as stored)."""
    from tgstore.compare.diff import DiffError, diff_commits
    from tgstore.store.commit_names import CommitNotFound

    if spelling not in SPELLINGS:
        raise Unanswerable(f"--spelling must be ignore or raw, not {spelling!r}")
    try:
        found = diff_commits(db, a, b, case=case, renderer=renderer, what=what, suite=suite, backend=backend,
                             context=context, ignore_names=ignore_names, stages=stages, schedule_stages=stages,
                             ignore_spelling=spelling == "ignore")
    except (DiffError, CommitNotFound) as exc:
        raise Unanswerable(str(exc)) from None
    return DiffAnswer(found)
