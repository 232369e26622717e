"""Which commits changed a pass's output for a kernel (blame by pass), and why (the rules and the hunks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgstore.answers.base import Answer
from tgstore.compare.sql import AnyConnection
from tgstore.history.attribution import Attribution, attribute
from tgstore.history.blame import StoredCommit, blame


@dataclass
class BlameAnswer(Answer):
    case: str
    kernel: int
    kernel_name: str | None
    renderer: str
    pass_name: str | None  # None: every pass
    spelling: str  # "ignore" (one spelling across eras) or "raw"
    commits: int  # stored commits the kernel was followed through
    first: dict[str, Any] | None  # the oldest of them
    last: dict[str, Any] | None  # the newest
    kernel_starts: dict[str, Any] | None  # where the stored history of this kernel begins
    changes: list[dict[str, Any]] = field(default_factory=list)  # PassChange.to_json(), oldest first
    gaps: list[dict[str, Any]] = field(default_factory=list)  # {"before", "after", "missing"}: unstored commits


def _commit(c: StoredCommit | None) -> dict[str, Any] | None:
    return c.to_json() if c else None


def blame_pass(conn: AnyConnection, case: str, kernel: int, pass_name: str | None = None, renderer: str = "C",
               spelling: str = "ignore", commit: str | None = None) -> BlameAnswer:
    """In history order over the stored commits, each commit where `pass_name` (every pass when None) changed its
    output for the case's kernel (its position at the newest stored commit, or at `commit`), with the node counts
    and a text diff; gaps of unstored commits between stored ones. StageError when nothing answers."""
    found = blame(conn, case, kernel, pass_name=pass_name, renderer=renderer, ignore_spelling=spelling != "raw",
                  upto=commit)
    return BlameAnswer(case, kernel, found.kernel_name, found.renderer, pass_name, "raw" if spelling == "raw"
                       else "ignore", len(found.commits), _commit(found.commits[0] if found.commits else None),
                       _commit(found.commits[-1] if found.commits else None), _commit(found.kernel_starts),
                       [c.to_json() for c in found.changes],
                       [{"before": a.to_json(), "after": b.to_json(), "missing": n} for a, b, n in found.gaps])


@dataclass
class WhyAnswer(Answer):
    """A pass change between two stored commits, explained: the rules whose matches differ, ranked, with the hunks
    of the commit range's diff that touch them; else the changed files the run read."""

    case: str
    pass_name: str
    renderer: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    kernel_before: int | None
    kernel_after: int | None
    changed: bool  # the pass's output differs (in the spelling compared)
    rules: list[dict[str, Any]] = field(default_factory=list)  # ranked, most likely cause first
    files_read: list[str] = field(default_factory=list)  # changed files the newer run read (no rule explains it)
    changed_files: list[str] = field(default_factory=list)  # every file of the diff under tinygrad/
    notes: list[str] = field(default_factory=list)


def why_changed(conn: AnyConnection, case: str, kernel: int, pass_name: str, a: str, b: str, renderer: str = "C",
                repo: Path | None = None, spelling: str = "ignore", occurrence: int = 1) -> WhyAnswer:
    """Why `pass_name` of the case's kernel (its position at `b`) changed between stored commits `a` and `b`: the
    rules whose recorded matches in that pass differ, each with its UPat and file:line at both commits and the
    hunks of `git diff a b` in `repo` that touch its lines, its matcher, its function or the helpers it calls."""
    found: Attribution = attribute(conn, case, kernel, pass_name, a, b, renderer=renderer, repo=repo,
                                   ignore_spelling=spelling != "raw", occurrence=occurrence)
    return WhyAnswer(case, pass_name, found.renderer, _commit(found.before), _commit(found.after),
                     found.kernel_before, found.kernel_after, found.changed, [r.to_json() for r in found.rules],
                     found.files_read, found.changed_files, found.notes)

