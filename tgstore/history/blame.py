"""Blame by pass: over the stored commits of a case, in history order (tinygrad's first-parent line), the commits
where one pass's output changed for one kernel, as `git blame` names the commit that last touched a line.

The kernel is followed across commits as the diff follows it (compare/kernel_match.py: AST, AST in one spelling,
name, position), from the newest stored commit back; each adjacent pair of stored runs has its pass lists aligned
by name and occurrence (compare/pass_align.py) and compared by graph hash, in one spelling across eras unless asked
raw. Where two adjacent stored commits are not adjacent on the first-parent line, the change lies somewhere in the
gap: said, with the `bisect --what pass:NAME` that would find it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.graphs import structural_diff
from tgstore.compare.kernel_match import case_kernels, match_kernel
from tgstore.compare.pass_align import AlignedPass, align
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import AnyConnection, rows
from tgstore.compare.stage_diff import KernelPasses, StageError, kernel_passes

# the current run of each stored commit holding the case, oldest first (history order), with its git position
RUNS_SQL = """
SELECT rc.run_id, rc.sha, rc.version, rc.history_rank, c.git_position, c.subject, rc.status
FROM v_run_cases rc JOIN tinygrad_commits c ON c.sha = rc.sha JOIN runs r ON r.id = rc.run_id
WHERE rc."case" = :case AND r.is_current AND r.status IN ('ok', 'partial')
  AND (:renderer IS NULL OR EXISTS (
    SELECT 1 FROM run_cases m JOIN cases k ON k.id = m.case_id JOIN schedule_items si
    ON si.case_result_id = m.case_result_id JOIN programs p ON p.schedule_item_id = si.id
    WHERE m.run_id = rc.run_id AND k.name = :case AND p.renderer = :renderer AND p.pass_list_id IS NOT NULL))
ORDER BY rc.history_rank, rc.run_id"""


@dataclass(frozen=True)
class StoredCommit:
    sha: str
    version: str | None
    subject: str | None
    position: int | None  # on the first-parent line (None: not from git)
    run_id: int

    @property
    def short(self) -> str:
        return self.sha[:10]

    def to_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "short": self.short, "version": self.version, "subject": self.subject,
                "position": self.position, "run_id": self.run_id}


@dataclass
class PassChange:
    """One pass's output changed between two adjacent stored commits, for the followed kernel."""

    pass_name: str
    occurrence: int  # the k-th pass of that name (from 1)
    kind: str  # "changed", "added" (only the newer commit runs it) or "removed"
    before: StoredCommit
    after: StoredCommit
    kernel_before: int
    kernel_after: int
    matched_by: str  # how the kernel at `before` was found (kernel_match.Match.how)
    pass_position_before: int | None
    pass_position_after: int | None
    nodes_before: int | None
    nodes_after: int | None
    graph_before: str | None
    graph_after: str | None
    gap: int  # commits on the first-parent line between the two that are not stored (0: adjacent)
    diff: list[str] = field(default_factory=list)

    @property
    def bisect_command(self) -> str | None:
        """The bisect that finds the commit inside a gap (None: the commits are adjacent)."""
        if not self.gap:
            return None
        return f"tgstore bisect CASE --what pass:{self.pass_name} --good {self.before.short} --bad {self.after.short}"

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "occurrence": self.occurrence, "kind": self.kind,
                "before": self.before.to_json(), "after": self.after.to_json(),
                "kernel_before": self.kernel_before, "kernel_after": self.kernel_after, "matched_by": self.matched_by,
                "pass_position_before": self.pass_position_before, "pass_position_after": self.pass_position_after,
                "nodes_before": self.nodes_before, "nodes_after": self.nodes_after,
                "graph_before": self.graph_before, "graph_after": self.graph_after, "gap": self.gap,
                "bisect": self.bisect_command, "diff": "\n".join(self.diff)}


@dataclass
class Blame:
    case: str
    kernel: int  # at the newest commit compared
    kernel_name: str | None
    renderer: str
    pass_name: str | None  # None: every pass
    ignore_spelling: bool
    commits: list[StoredCommit]  # the stored commits the kernel was followed through, oldest first
    changes: list[PassChange]  # oldest first
    kernel_starts: StoredCommit | None  # the oldest commit with the kernel (it has no counterpart before)
    gaps: list[tuple[StoredCommit, StoredCommit, int]]  # adjacent stored commits apart on the line, with the count
    positions: list[int] = field(default_factory=list)  # the kernel's position at each of `commits`


def stored_commits(conn: AnyConnection, case: str, renderer: str | None = None) -> list[StoredCommit]:
    """Every stored commit with a current usable run holding `case` (with `renderer`'s passes recorded, if
    given), oldest first (history order). A commit stored without them is, for a pass's history, not stored."""
    found, seen = [], set()
    for r in rows(conn, RUNS_SQL, case=case, renderer=renderer.upper() if renderer else None):
        if r["sha"] in seen:
            continue
        seen.add(r["sha"])
        found.append(StoredCommit(r["sha"], r["version"], r["subject"], r["git_position"], r["run_id"]))
    return found


def gap_between(a: StoredCommit, b: StoredCommit) -> int:
    """Commits between two stored ones on the first-parent line that are not stored (0 when unknown)."""
    if a.position is None or b.position is None:
        return 0
    return max(b.position - a.position - 1, 0)


def _passes(conn: AnyConnection, run_id: int, case: str, kernel: int, renderer: str) -> KernelPasses | None:
    found = kernel_passes(conn, run_id, case, kernel=kernel, renderer=renderer)
    return found[0] if found else None


def occurrences(aligned: list[AlignedPass]) -> list[int]:
    """Each aligned row's occurrence number of its pass name (the k-th 'expander'), counted on the side it is on
    (side b where both are)."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for p in aligned:
        side = "b" if p.b is not None else "a"
        seen[(side, p.name)] = seen.get((side, p.name), 0) + 1
        if p.a is not None and p.b is not None:  # a paired row advances both sides' counts
            seen[("a", p.name)] = seen.get(("a", p.name), 0) + 1
        out.append(seen[(side, p.name)])
    return out


def moved(aligned: list[AlignedPass], key_of) -> list[AlignedPass]:
    """The rows with a pass that only moved in the order paired again: a removed and an added row of one name and
    occurrence become one row (same output: not a change; another output: changed)."""
    numbered = list(zip(aligned, occurrences(aligned), strict=True))
    added = {(p.name, k): p for p, k in numbered if p.kind == "added"}
    removed = {(p.name, k) for p, k in numbered if p.kind == "removed"}
    key = key_of or (lambda digest: digest)
    out = []
    for p, k in numbered:
        if p.kind == "added" and (p.name, k) in removed:
            continue  # paired with its removed row
        if p.kind == "removed" and (p.name, k) in added:
            pair = AlignedPass(p.a, added[(p.name, k)].b)
            pair.spelling_only = pair.a.graph_hash != pair.b.graph_hash and key(pair.a.graph_hash) == key(
                pair.b.graph_hash)
            out.append(pair)
        else:
            out.append(p)
    return out


def blame(conn: AnyConnection, case: str, kernel: int, *, pass_name: str | None = None, renderer: str = "C",
          ignore_spelling: bool = True, upto: str | None = None, context: int = 3) -> Blame:
    """The commits where `pass_name` (every pass when None) of the case's kernel `kernel` (its position at the
    newest stored commit, or at `upto`) changed its output, oldest first. StageError when nothing answers."""
    commits = stored_commits(conn, case, renderer)
    if not commits:
        raise StageError(f"no stored run has case {case!r} with {renderer.upper()} passes (extract with --stages "
                         f"{renderer.upper()})")
    if upto is not None:
        index = next((i for i, c in enumerate(commits) if c.sha.startswith(upto) or c.version == upto), None)
        if index is None:
            raise StageError(f"commit {upto!r} has no stored run with case {case!r}")
        commits = commits[:index + 1]
    renderer = renderer.upper()
    newest = commits[-1]
    mine = case_kernels(conn, newest.run_id, case)
    here = next((k for k in mine if k.position == kernel), None)
    if here is None:
        raise StageError(f"case {case!r} has {len(mine)} kernels at {newest.short} (0..{len(mine) - 1}); "
                         f"no kernel {kernel}")
    newest_passes = _passes(conn, newest.run_id, case, kernel, renderer)
    if newest_passes is None:
        raise StageError(f"no {renderer} passes stored for {case!r} kernel {kernel} at {newest.short} (extract "
                         f"with --stages {renderer})")
    if pass_name is not None and pass_name not in {p.name for p in newest_passes.passes}:
        names = ", ".join(dict.fromkeys(p.name for p in newest_passes.passes))
        raise StageError(f"kernel {kernel} of {case!r} has no pass {pass_name!r} at {newest.short}; its passes: "
                         f"{names}")
    speller = Speller(conn, ignore_spelling)
    key_of = speller.graph_key if ignore_spelling else None
    changes: list[PassChange] = []
    followed, positions = [newest], [kernel]
    gaps = []
    starts: StoredCommit | None = None
    after, position, after_passes, after_kernels = newest, kernel, newest_passes, mine
    for before in reversed(commits[:-1]):
        theirs = case_kernels(conn, before.run_id, case)
        current = next(k for k in after_kernels if k.position == position)
        match = match_kernel(conn, current, theirs, len(theirs) == len(after_kernels))
        before_passes = _passes(conn, before.run_id, case, match.position, renderer) if match else None
        if match is None or before_passes is None:
            starts = after
            break
        gap = gap_between(before, after)
        if gap:
            gaps.append((before, after, gap))
        aligned = moved(align(before_passes.passes, after_passes.passes, key_of), key_of)
        for p, occurrence in zip(aligned, occurrences(aligned), strict=True):
            if pass_name is not None and p.name != pass_name:
                continue
            if p.kind not in ("changed", "added", "removed"):
                continue
            ga, gb = speller.graph(p.a.graph_hash if p.a else None), speller.graph(p.b.graph_hash if p.b else None)
            lines = structural_diff(ga or [], gb or [], f"{before.short} #{p.a.position} {p.name}" if p.a else
                                    f"{before.short} (no such pass)", f"{after.short} #{p.b.position} {p.name}"
                                    if p.b else f"{after.short} (no such pass)", context)
            changes.append(PassChange(p.name, occurrence, p.kind, before, after, match.position, position, match.how,
                                      p.a.position if p.a else None, p.b.position if p.b else None,
                                      p.a.node_count if p.a else None, p.b.node_count if p.b else None,
                                      p.a.graph_hash if p.a else None, p.b.graph_hash if p.b else None, gap, lines))
        followed.append(before)
        positions.append(match.position)
        after, position, after_passes, after_kernels = before, match.position, before_passes, theirs
    else:
        starts = followed[-1]
    changes.sort(key=lambda c: (commits.index(c.after), c.pass_position_after if c.pass_position_after is not None
                                else c.pass_position_before or 0))
    return Blame(case, kernel, here.name, renderer, pass_name, ignore_spelling, followed[::-1], changes,
                 starts, gaps[::-1], positions[::-1])
