"""What the kernel workbench shows, read in one go: one case's kernel at one commit, rendered by one renderer; its
passes (name, node count, changed, rewrite steps), the selected pass's graph and steps, the generated source, the
linearized UOps and the canonical documents; the renderers and neighbouring commits to switch to."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field, replace
from typing import Any

from tgstore.compare.kernel_match import KernelRow, case_kernels, match_kernel
from tgstore.store.commit_names import CommitNotFound, CommitRow, resolve_commit
from tgstore.web import urls
from tgstore.web.passnav import PASSES_SQL as PASSES_SQL_OF_KERNEL

KERNELS_SQL = """
SELECT si.position, kn.name, kn.hash, si.root_op FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
WHERE rc.run_id = ? AND k.name = ? ORDER BY si.position"""
PROGRAMS_SQL = """
SELECT p.renderer, p.name, b.hash, b.text, p.linear_id, p.error, p.pass_list_id
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
JOIN programs p ON p.schedule_item_id = si.id LEFT JOIN blobs b ON b.id = p.source_blob_id
WHERE rc.run_id = ? AND k.name = ? AND si.position = ? ORDER BY p.pass_list_id IS NULL, p.renderer"""
PASSES_SQL = """
SELECT pe.position, pe.name, pe.depth, pe.node_count, pe.changed, g.hash, json_extract(b.text, '$.total')
FROM pass_entries pe LEFT JOIN graphs g ON g.id = pe.graph_id LEFT JOIN blobs b ON b.id = pe.rewrites_blob_id
WHERE pe.pass_list_id = ? ORDER BY pe.position"""
COMMITS_SQL = """
SELECT c.sha, c.version, c.history_rank, max(rc.run_id) FROM run_cases rc JOIN runs r ON r.id = rc.run_id
JOIN v_commits c ON c.commit_id = r.commit_id JOIN cases k ON k.id = rc.case_id
WHERE k.name = ? AND r.is_current GROUP BY c.sha ORDER BY c.history_rank, max(rc.run_id)"""
CANONICAL_SQL = """
SELECT cl.stage, cl.position, d.hash, d.node_count, d.unsupported, d.reason,
       json_type(d.document, '$.nodes') IS NOT NULL
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN canonical_links cl ON cl.case_result_id = rc.case_result_id
JOIN canonical_docs d ON d.id = cl.doc_id WHERE rc.run_id = ? AND k.name = ? AND cl.position IN (?, -1)
ORDER BY cl.position, cl.stage"""
UOPS_SQL = "SELECT idx, op, dtype, arg, src FROM linear_uops WHERE linear_id = ? ORDER BY idx LIMIT ?"
UOPS_SHOWN = 1000  # linearized UOps listed on the page (a big kernel has a few thousand)
# generated source shown on the page, whichever comes first; the whole text is a link away. Highlighted, 80,000
# characters of LLVM IR were 784 KB of HTML (transcendental), so a page stays under 1 MB with these
SOURCE_LINES, SOURCE_CHARS = 400, 30_000


class WorkbenchError(LookupError):
    """Nothing to show for these arguments; the message says what there is instead."""


@dataclass(frozen=True)
class Where:
    """The page's address: case, kernel position, commit (as given), renderer, selected pass and step."""

    case: str
    kernel: int | None  # None: the case's first kernel that a renderer lowered
    commit: str | None = None
    renderer: str | None = None
    pass_position: int | None = None
    step: int | None = None

    def url(self, **change: Any) -> str:
        params = {"kernel": self.kernel, "commit": self.commit, "renderer": self.renderer,
                  "pass_position": self.pass_position, "step": self.step, **change}
        return urls.kernel(self.case, **params)


@dataclass
class Pass:
    position: int
    name: str
    depth: int
    node_count: int | None
    changed: bool
    graph_hash: str | None
    steps: int | None  # rewrite steps tinygrad made in this pass (None: not recorded)
    delta: int | None = None  # node count minus the previous top-level pass's

    @property
    def has_steps(self) -> bool:
        return bool(self.steps)


@dataclass
class Neighbour:
    """The commit before or after in history holding the case, and the kernel there matched with this one (by AST
    or name: tgstore.compare.kernel_match), None when it has no counterpart there."""

    sha: str
    version: str | None
    run_id: int = 0
    kernel: int | None = None
    matched_by: str | None = None

    @property
    def label(self) -> str:
        return self.version or (self.sha[:17] if self.sha.startswith("tree:") else self.sha[:12])


@dataclass
class Workbench:
    where: Where
    commit: CommitRow
    run_id: int
    kernel_name: str | None
    kernel_hash: str
    kernels: list[tuple[int, str | None]]  # (position, name) of the case's kernels at this commit
    renderers: list[str]
    renderer: str
    program_name: str | None
    source: str | None
    source_hash: str | None
    error: str | None
    linear_id: int | None
    passes: list[Pass]
    selected: Pass | None
    older: Neighbour | None = None
    newer: Neighbour | None = None
    uops: list[tuple] = field(default_factory=list)
    uop_total: int = 0
    canonical: list[dict[str, Any]] = field(default_factory=list)
    notice: str | None = None  # what was shown instead of what was asked for

    def to_json(self) -> dict[str, Any]:
        def side(n: Neighbour | None) -> dict[str, Any] | None:
            return None if n is None else {"sha": n.sha, "version": n.version, "kernel": n.kernel,
                                           "matched_by": n.matched_by}

        return {"case": self.where.case, "kernel": self.where.kernel, "kernel_name": self.kernel_name,
                "kernel_hash": self.kernel_hash, "commit": {"sha": self.commit.sha, "version": self.commit.version},
                "run_id": self.run_id, "renderer": self.renderer, "renderers": self.renderers,
                "kernels": [{"position": p, "name": n} for p, n in self.kernels], "program_name": self.program_name,
                "error": self.error, "source_hash": self.source_hash, "notice": self.notice,
                "passes": [{"position": p.position, "name": p.name, "depth": p.depth, "node_count": p.node_count,
                            "changed": p.changed, "graph_hash": p.graph_hash, "steps": p.steps} for p in self.passes],
                "selected_pass": self.selected.position if self.selected else None,
                "older": side(self.older), "newer": side(self.newer), "uop_total": self.uop_total}

    @property
    def commit_label(self) -> str:
        return self.commit.version or self.commit.short

    @property
    def previous_pass(self) -> Pass | None:
        """The pass before the selected one (every pass steps, nested ones too, as tinygrad ran them)."""
        return self._beside(-1)

    @property
    def next_pass(self) -> Pass | None:
        return self._beside(1)

    def _beside(self, step: int) -> Pass | None:
        if self.selected is None:
            return None
        i = self.passes.index(self.selected) + step
        return self.passes[i] if 0 <= i < len(self.passes) else None

    @property
    def input_graph(self) -> Pass | None:
        """The nearest earlier pass with a graph: its output is the selected pass's input."""
        if self.selected is None:
            return None
        earlier = [p for p in self.passes[:self.passes.index(self.selected)] if p.graph_hash]
        return earlier[-1] if earlier else None

def shown_source(text: str | None) -> tuple[str | None, int, int]:
    """The start of a source the page shows, its line count and the source's line count."""
    if text is None:
        return None, 0, 0
    lines = text.splitlines(keepends=True)
    kept, size = [], 0
    for line in lines[:SOURCE_LINES]:
        if size + len(line) > SOURCE_CHARS and kept:
            break
        kept.append(line)
        size += len(line)
    return "".join(kept), len(kept), len(lines)


def case_commits(conn: sqlite3.Connection, case: str) -> list[tuple[str, str | None, int]]:
    """(sha, version, run id) of each commit with a current run holding `case`, in history order."""
    return [(sha, version, run) for sha, version, _rank, run in conn.execute(COMMITS_SQL, (case,))]


def commit_run(conn: sqlite3.Connection, where: Where, commits: list[tuple[str, str | None, int]]
            ) -> tuple[CommitRow, int]:
    if not commits:
        known = [r[0] for r in conn.execute("SELECT name FROM cases ORDER BY name LIMIT 40")]
        raise WorkbenchError(f"no run holds case {where.case!r}; cases: {', '.join(known) or 'none'}")
    if where.commit:
        try:
            row = resolve_commit(conn, where.commit)
        except CommitNotFound as exc:
            raise WorkbenchError(str(exc)) from exc
    else:
        row = resolve_commit(conn, commits[-1][0])
    runs = [run for sha, _v, run in commits if sha == row.sha]
    if not runs:
        raise WorkbenchError(f"commit {row.describe()} has no run with case {where.case!r}")
    return row, runs[0]


def load(conn: sqlite3.Connection, where: Where, details: bool = True) -> Workbench:
    """The workbench at `where`; without `details`, only the kernel, its programs and passes (no UOps, documents)."""
    commits = case_commits(conn, where.case)
    commit, run_id = commit_run(conn, where, commits)
    kernels = conn.execute(KERNELS_SQL, (run_id, where.case)).fetchall()
    if where.kernel is None:
        first = next((k for k in kernels if k[3] == "SINK"), kernels[0] if kernels else None)
        where = replace(where, kernel=first[0] if first else 0)
    found = next((k for k in kernels if k[0] == where.kernel), None)
    if found is None:
        raise WorkbenchError(f"case {where.case!r} at {commit.version or commit.short} has no kernel {where.kernel}; "
                             f"kernels: {', '.join(str(k[0]) for k in kernels) or 'none'}")
    programs = conn.execute(PROGRAMS_SQL, (run_id, where.case, where.kernel)).fetchall()
    renderers = [p[0] for p in programs]
    wanted = (where.renderer or "").upper()
    program = next((p for p in programs if p[0] == wanted), None) or (programs[0] if programs and not wanted
                                                                       else None)
    notice = None
    if program is None and wanted and programs:  # a renderer this commit lacks: its first, said so
        notice = (f"kernel {where.kernel} of {where.case!r} has no {wanted} program at {commit.version or commit.short}"
                  f"; showing {programs[0][0]} (renderers: {', '.join(renderers)})")
        program = programs[0]
    if not programs:  # a schedule item no renderer lowered (a copy, a buffer view): its AST, said so
        notice = (f"kernel {where.kernel} of {where.case!r} has no program at {commit.version or commit.short} (no "
                  "renderer lowered this schedule item)")
    renderer, program_name, source_hash, source, linear_id, error, pass_list = program or (None,) * 7
    passes = [Pass(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6])
              for r in conn.execute(PASSES_SQL, (pass_list,))] if pass_list is not None else []
    last = None
    for p in passes:
        if p.depth == 0 and p.node_count is not None:
            p.delta = None if last is None else p.node_count - last
            last = p.node_count
    selected = next((p for p in passes if p.position == where.pass_position), None) or (passes[0] if passes
                                                                                         else None)
    shas = [c[0] for c in commits]
    at = shas.index(commit.sha)
    mine = KernelRow(found[0], found[1], found[2])

    def neighbour(i: int) -> Neighbour | None:
        if not 0 <= i < len(commits):
            return None
        sha, version, run = commits[i]
        theirs = case_kernels(conn, run, where.case)
        match = match_kernel(conn, mine, theirs, len(kernels) == len(theirs))
        return Neighbour(sha, version, run, match.position if match else None, match.how if match else None)

    bench = Workbench(where, commit, run_id, found[1], found[2], [(k[0], k[1]) for k in kernels], renderers,
                      renderer or "", program_name, source, source_hash, error, linear_id, passes, selected,
                      neighbour(at - 1), neighbour(at + 1), notice=notice)
    if not details:
        return bench
    if linear_id is not None:
        bench.uops = conn.execute(UOPS_SQL, (linear_id, UOPS_SHOWN)).fetchall()
        bench.uop_total = conn.execute("SELECT uop_count FROM linears WHERE id = ?", (linear_id,)).fetchone()[0]
    bench.canonical = [dict(zip(("stage", "position", "hash", "node_count", "unsupported", "reason", "has_graph"), r,
                                strict=True)) for r in conn.execute(CANONICAL_SQL, (run_id, where.case, where.kernel))]
    return bench


def neighbour_pass(conn: sqlite3.Connection, bench: Workbench, neighbour: Neighbour | None) -> int | None:
    """The selected pass's position in the neighbour's pipeline of the matched kernel: the pass of the same name and
    occurrence (the k-th "expander" stays the k-th), None where it has none."""
    if neighbour is None or neighbour.kernel is None or bench.selected is None:
        return None
    name = bench.selected.name
    occurrence = sum(p.name == name for p in bench.passes if p.position <= bench.selected.position)
    theirs = [row[3] for row in conn.execute(PASSES_SQL_OF_KERNEL, (neighbour.run_id, bench.where.case,
                                                                  neighbour.kernel, bench.renderer))
              if row[4] == name]  # passnav's rows: kernel, kernel_name, renderer, position, name, ...
    return theirs[occurrence - 1] if len(theirs) >= occurrence else None
