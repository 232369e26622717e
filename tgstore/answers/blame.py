"""Which commits changed a pass's output for a kernel (blame by pass), and why (the rules and the hunks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgstore.answers.base import Answer, Unanswerable
from tgstore.compare.sql import AnyConnection
from tgstore.history.attribution import Attribution, attribute
from tgstore.history.blame import StoredCommit
from tgstore.history.blame import blame as pass_changes


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
    found = pass_changes(conn, case, kernel, pass_name=pass_name, renderer=renderer, ignore_spelling=spelling != "raw",
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



def tinygrad_repo(repo: Path | None = None) -> Path | None:
    """The tinygrad repository the sweep used, as sweeps find it (`repo`, else TGSTORE_REPO, else
    submodules/tinygrad); None where there is none (rules are then listed without hunks)."""
    import os

    from tgstore.git import GitError, open_repo

    try:
        return open_repo(Path(repo or os.environ.get("TGSTORE_REPO") or "submodules/tinygrad"))
    except GitError as exc:
        if repo is not None:
            raise Unanswerable(str(exc)) from None
        return None


SPELLINGS = ("ignore", "raw")


def _spelling(spelling: str) -> str:
    if spelling not in SPELLINGS:
        raise Unanswerable(f"spelling must be {' or '.join(SPELLINGS)}, not {spelling!r}")
    return spelling


def blame(db: AnyConnection, case: str, kernel: int, pass_name: str | None = None, renderer: str = "C",
                 spelling: str = "ignore", commit: str | None = None, why: bool = False,
                 repo: Path | None = None) -> BlameAnswer:
    """The stored commits where a pass's output changed for a case's kernel, in git order, with node counts, a text
    diff and the gaps of unstored commits (spelling "ignore": compared in one spelling across tinygrad eras; "raw":
    as stored); why=True adds each change's rules and hunks (`why` of that change) under "why"."""
    from tgstore.compare.stage_diff import StageError

    spelling = _spelling(spelling)
    try:
        answer = blame_pass(db, case, kernel, pass_name, renderer, spelling, commit)
        if why:
            root = tinygrad_repo(repo)
            for change in answer.changes:
                change["why"] = why_changed(db, case, change["kernel_after"], change["pass"], change["before"]["sha"],
                                            change["after"]["sha"], renderer, root, spelling,
                                            change["occurrence"]).to_json()
    except (StageError, LookupError) as exc:
        raise Unanswerable(str(exc)) from None
    return answer


def why(db: AnyConnection, case: str, kernel: int, pass_name: str, commit: str, parent: str | None = None,
        renderer: str = "C", spelling: str = "ignore", occurrence: int = 1, repo: Path | None = None) -> WhyAnswer:
    """Why a pass's output changed for a case's kernel at a commit (since `parent`, default the stored commit before
    it): the rules whose matches in that pass differ, ranked most likely cause first, each with its UPat, file:line
    at both commits and the hunks of the git diff touching it; else the changed files the run read."""
    from tgstore.compare.stage_diff import StageError
    from tgstore.history.attribution import previous_stored

    spelling = _spelling(spelling)
    root = tinygrad_repo(repo)
    try:
        parent = parent or previous_stored(db, case, commit, root, renderer).sha
        return why_changed(db, case, kernel, pass_name, parent, commit, renderer, root, spelling, occurrence)
    except (StageError, LookupError) as exc:
        raise Unanswerable(str(exc)) from None
