"""Rule attribution: why one pass's output changed between two stored commits. The rules whose matches in that pass
differ (compare/rule_diff.py), each placed in tinygrad's source at both commits (history/rule_source.py: its own
lines, its matcher, its function, the helpers it calls) and paired with the hunks of `git diff A B` that touch those
places, in the repository the sweep used. Ranked: a hunk on the rule's own lines first, then on a helper it calls,
then on its function or matcher; among equals a rule that appeared or disappeared before one whose count moved.
Where no hunk touches any such rule (a change outside every PatternMatcher: the pass order, a Python function), the
changed files the newer run read (its recorded inputs, history/skip.py) say where to look instead."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tgstore.compare.kernel_match import case_kernels, counterpart
from tgstore.compare.pass_align import align
from tgstore.compare.rewrite_steps import PassSteps, case_steps
from tgstore.compare.rule_diff import STATUSES, RuleChange, match_counts, rule_diff
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import AnyConnection, scalar
from tgstore.compare.stage_diff import StageError, kernel_passes
from tgstore.git import GitError, Hunk, changed_paths, diff_hunks, file_at, verify_rev
from tgstore.history.blame import StoredCommit, moved, occurrences, stored_commits
from tgstore.history.rule_source import WEIGHTS, Scope, rule_scopes
from tgstore.store.commits import resolve_commit

STATUS_WEIGHT = {"appeared": 3, "disappeared": 3, "matched differently": 2, "count changed": 1, "same": 0}


@dataclass
class Touch:
    """A hunk touching one of a rule's scopes, at one side."""

    hunk: Hunk
    scope: Scope
    side: str  # "a" (the older commit's lines) or "b"

    def to_json(self) -> dict[str, Any]:
        h = self.hunk
        return {"path": h.path, "old_start": h.old_start, "old_count": h.old_count, "new_start": h.new_start,
                "new_count": h.new_count, "text": h.text, "scope": self.scope.to_json(), "side": self.side}


@dataclass
class RankedRule:
    change: RuleChange
    scopes_a: list[Scope]
    scopes_b: list[Scope]
    touches: list[Touch]
    score: float
    why: str

    def to_json(self) -> dict[str, Any]:
        seen: set[tuple] = set()
        hunks = []
        for t in self.touches:  # one hunk once, at its strongest scope (touches are sorted strongest first)
            key = (t.hunk.path, t.hunk.old_start, t.hunk.new_start)
            if key not in seen:
                seen.add(key)
                hunks.append(t.to_json())
        return {**self.change.to_json(), "score": self.score, "why": self.why,
                "scopes_a": [s.to_json() for s in self.scopes_a], "scopes_b": [s.to_json() for s in self.scopes_b],
                "hunks": hunks}


@dataclass
class Attribution:
    case: str
    pass_name: str
    renderer: str
    before: StoredCommit | None
    after: StoredCommit | None
    kernel_before: int | None
    kernel_after: int | None
    changed: bool
    rules: list[RankedRule] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def stored_commit(conn: AnyConnection, case: str, ref: str, repo: Path | None = None,
                  renderer: str | None = None) -> StoredCommit:
    """The stored commit `ref` names (a sha, a prefix, a version; with `repo`, any git revision) holding `case`."""
    try:
        sha = resolve_commit(conn, ref).sha
    except LookupError:
        if repo is None:
            raise StageError(f"no stored commit matches {ref!r}") from None
        try:
            sha = verify_rev(repo, ref)
        except GitError as exc:
            raise StageError(str(exc)) from None
    found = [c for c in stored_commits(conn, case, renderer) if c.sha == sha]
    if not found:
        raise StageError(f"commit {ref!r} has no stored run with case {case!r}")
    return found[-1]


def previous_stored(conn: AnyConnection, case: str, ref: str, repo: Path | None = None,
                    renderer: str | None = None) -> StoredCommit:
    """The stored commit holding `case` (with `renderer`'s passes) just before `ref` in history order."""
    after = stored_commit(conn, case, ref, repo, renderer)
    commits = stored_commits(conn, case, renderer)
    index = next(i for i, c in enumerate(commits) if c.sha == after.sha)
    if index == 0:
        raise StageError(f"{after.short} is the oldest stored commit with case {case!r}: nothing to compare with")
    return commits[index - 1]


def _pass_steps(conn: AnyConnection, run: int, case: str, kernel: int, renderer: str, position: int | None
                ) -> PassSteps | None:
    if position is None:
        return None
    found = case_steps(conn, run, case, kernel=kernel, renderer=renderer, pass_position=position,
                       trace_of=position)
    return found[0].passes[0] if found and found[0].passes else None


def files_read(conn: AnyConnection, run: int) -> set[str]:
    """The package files a run's extraction read (its recorded inputs), empty when it recorded none."""
    text = scalar(conn, "SELECT b.text FROM runs r JOIN blobs b ON b.id = r.inputs_blob_id WHERE r.id = :run",
                  run=run)
    if not text:
        return set()
    inputs = json.loads(text)
    return set(inputs.get("files") or {}) | set(inputs.get("versions") or {})


def _changes_name(hunk: Hunk, name: str) -> bool:
    """Whether the hunk's changed lines set `name`, in any case: an assignment to it or a setting read into it
    (`DISABLE_FAST_IDIV = ContextVar(...)` for the guard `disable_fast_idiv`, a parameter the caller fills)."""
    word = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
    sets = re.compile(rf"\b{re.escape(name)}\b\s*(=|:[^=]*=)|ContextVar|getenv", re.IGNORECASE)
    return any(line[:1] in "+-" and word.search(line[1:]) and sets.search(line[1:])
               for line in hunk.text.splitlines()[1:])


def _touches(hunks: list[Hunk], scopes: list[Scope], side: str) -> list[Touch]:
    found = []
    for scope in scopes:
        for h in hunks:
            if scope.kind == "guard":
                if _changes_name(h, scope.name):
                    found.append(Touch(h, scope, side))
                continue
            if side == "a" and h.old_path == scope.path and scope.covers(h.old_lines()):
                found.append(Touch(h, scope, side))
            elif side == "b" and h.path == scope.path and scope.covers(h.new_lines()):
                found.append(Touch(h, scope, side))
    return found


def _why(rule: RuleChange, touch: Touch | None) -> str:
    count = {"appeared": f"appeared ({rule.b.steps if rule.b else 0} steps)",
             "disappeared": f"disappeared ({rule.a.steps if rule.a else 0} steps before)",
             "count changed": f"matched {rule.a.steps if rule.a else 0} -> {rule.b.steps if rule.b else 0} times",
             "matched differently": "matched as often, rewrote to something else"}.get(rule.status, rule.status)
    if touch is None:
        return f"{count}; no hunk of the diff touches it (its input changed?)"
    where = {"rule": "the rule's own lines", "helper": f"helper {touch.scope.name}() it calls",
             "guard": f"{touch.scope.name}, which the `if` around the rule tests",
             "function": f"its function {touch.scope.name}()", "matcher": f"its matcher {touch.scope.name}"}
    side = "at the older commit" if touch.side == "a" else "at the newer commit"
    return (f"{count}; a hunk of {touch.hunk.path} touches {where[touch.scope.kind]} "
            f"(lines {touch.scope.start}-{touch.scope.end} {side})")


def rank(changes: list[RuleChange], hunks: list[Hunk], read_a, read_b) -> list[RankedRule]:
    """Each rule change with its scopes at both commits and the hunks touching them, most likely cause first."""
    ranked = []
    for rule in changes:
        scopes_a = rule_scopes(rule.a.file, read_a(rule.a.file), rule.a.line, read_a) \
            if rule.a and rule.a.file and rule.a.line else []
        scopes_b = rule_scopes(rule.b.file, read_b(rule.b.file), rule.b.line, read_b) \
            if rule.b and rule.b.file and rule.b.line else []
        touches = _touches(hunks, scopes_a, "a") + _touches(hunks, scopes_b, "b")
        touches.sort(key=lambda t: -WEIGHTS[t.scope.kind])
        best = touches[0] if touches else None
        score = (WEIGHTS[best.scope.kind] * 10 if best else 0) + STATUS_WEIGHT[rule.status] + min(abs(rule.delta),
                                                                                                   9) / 10
        ranked.append(RankedRule(rule, scopes_a, scopes_b, touches, score, _why(rule, best)))
    ranked.sort(key=lambda r: (-r.score, STATUSES.index(r.change.status)))
    return ranked


def attribute(conn: AnyConnection, case: str, kernel: int, pass_name: str, a: str, b: str, *, renderer: str = "C",
              repo: Path | None = None, ignore_spelling: bool = True, occurrence: int = 1) -> Attribution:
    """Why the `occurrence`-th pass named `pass_name` of the case's kernel (its position at `b`) changed between
    stored commits `a` and `b` (see the module's doc). StageError when nothing answers; a repository git cannot
    read leaves the rules without hunks, said in `notes`."""
    renderer = renderer.upper()
    before, after = stored_commit(conn, case, a, repo, renderer), stored_commit(conn, case, b, repo, renderer)
    match = counterpart(conn, case, after.run_id, kernel, before.run_id)
    found = Attribution(case, pass_name, renderer, before, after, match.position if match else None, kernel, False)
    if match is None:
        found.notes.append(f"kernel {kernel} at {after.short} has no counterpart at {before.short}")
        return found
    passes_a = kernel_passes(conn, before.run_id, case, kernel=match.position, renderer=renderer)
    passes_b = kernel_passes(conn, after.run_id, case, kernel=kernel, renderer=renderer)
    if not passes_a or not passes_b:
        raise StageError(f"no {renderer} passes stored for {case!r} kernel {kernel} at both {before.short} and "
                         f"{after.short}")
    speller = Speller(conn, ignore_spelling)
    key_of = speller.graph_key if ignore_spelling else None
    aligned = moved(align(passes_a[0].passes, passes_b[0].passes, key_of), key_of)
    numbered = list(zip(aligned, occurrences(aligned), strict=True))
    index = next((i for i, (p, k) in enumerate(numbered) if p.name == pass_name and k == occurrence), None)
    if index is None:
        raise StageError(f"kernel {kernel} of {case!r} has no pass {pass_name!r} (occurrence {occurrence}) at "
                         f"{before.short} or {after.short}")
    row = numbered[index][0]
    found.changed = row.kind in ("changed", "added", "removed")
    earlier = next((p for p, _k in reversed(numbered[:index]) if p.kind in ("changed", "added", "removed")), None)
    if earlier is not None:
        found.notes.append(f"an earlier pass changed too ({earlier.name!r}): this pass's input differs, so some of "
                           "its rules may match differently for that reason alone")
    if earlier is None and found.changed and _ast_differs(conn, case, before.run_id, match.position, after.run_id,
                                                           kernel, speller):
        found.notes.append("the kernel's AST differs between the commits and no earlier pass changed: the change "
                           "came before codegen (scheduling, the Tensor front end); this pass carries it")
    if not found.changed:
        found.notes.append(f"pass {pass_name!r} gave the same output at both commits")
    counts_a, counts_b = match_counts(conn, before.run_id, case), match_counts(conn, after.run_id, case)
    diff = rule_diff(_pass_steps(conn, before.run_id, case, match.position, renderer, row.a.position if row.a else
                                 None),
                     _pass_steps(conn, after.run_id, case, kernel, renderer, row.b.position if row.b else None),
                     counts_a, counts_b)
    if not diff.recorded:
        found.notes.append("no rewrite steps recorded for this pass at one of the commits (extract with --rewrites)")
    if diff.truncated:
        found.notes.append("a side recorded only the pass's first steps (--rewrites N): counts past them are unknown")
    hunks: list[Hunk] = []
    read_a = read_b = _no_file
    if repo is None:
        found.notes.append("no tinygrad repository: rules are listed without the hunks of the diff")
    else:
        try:
            hunks = diff_hunks(repo, before.sha, after.sha)
            found.changed_files = [p for p in changed_paths(repo, before.sha, after.sha) if p.startswith("tinygrad/")]
            read_a, read_b = _reader(repo, before.sha), _reader(repo, after.sha)
        except GitError as exc:
            found.notes.append(f"the diff could not be read: {exc}")
    found.rules = rank(diff.changes, hunks, read_a, read_b)
    if not any(r.touches for r in found.rules):
        read = files_read(conn, after.run_id) | files_read(conn, before.run_id)
        found.files_read = [p for p in found.changed_files if p in read]
        if found.changed and repo is not None:
            found.notes.append("no hunk touches a rule whose matches differ: the change is outside the rules "
                               "(pass order, a Python function); files_read lists the changed files the run read")
    return found


def _ast_differs(conn: AnyConnection, case: str, run_a: int, kernel_a: int, run_b: int, kernel_b: int,
                 speller: Speller) -> bool:
    ka = {k.position: k.hash for k in case_kernels(conn, run_a, case)}
    kb = {k.position: k.hash for k in case_kernels(conn, run_b, case)}
    return speller.ast_key(ka.get(kernel_a)) != speller.ast_key(kb.get(kernel_b))


def _no_file(_path: str) -> str | None:
    return None


def _reader(repo: Path, sha: str):
    @lru_cache(maxsize=64)
    def read(path: str) -> str | None:
        return file_at(repo, sha, path)

    return read

