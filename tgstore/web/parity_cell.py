"""One cell of the Svod parity grid as text: a Svod kernel's stage against tinygrad's graph after the mapped pass at
one commit. Its verdict (the grid's: queries/parity_matrix.sql), the two graphs matched by structure in Svod parity's
spelling (tgstore.compare.matching), each differing node as a row (op, dtype, arg at tinygrad and at Svod), counts
that add up (added + changed + removed = the rows), which tinygrad renderer, kernel and pass it was compared with,
and where in the Svod log the stage was printed (svod_stages.file_position/line_no; the file is kept whole)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.matching import compare
from tgstore.spelling.svod import normalize_tinygrad
from tgstore.svod.treediff import tree_diff
from tgstore.web.graphs import find_graph
from tgstore.web.parity import Cell, Row, parity

LOG_LINES_SQL = """
SELECT s.source, s.line_no, s.node_count, f.path, f.position, b.hash FROM svod_stages s
JOIN svod_files f ON f.run_id = s.run_id AND f.position = s.file_position JOIN blobs b ON b.id = f.blob_id
WHERE s.run_id = ? AND s.kernel_index = ? AND s.label = ? ORDER BY s.seq"""
NODES_SHOWN = 400  # differing nodes listed (the counts cover them all)


@dataclass
class LogLine:
    source: str  # event | per-stage | dump-stage | ...
    line_no: int
    node_count: int | None
    path: str
    blob: str


@dataclass
class NodeDiff:
    kind: str  # "added" (tinygrad only), "removed" (Svod only), "changed" (matched, op/dtype/arg or sources differ)
    tinygrad: list[Any] | None  # [op, dtype, arg]
    svod: list[Any] | None
    what: list[str] = field(default_factory=list)  # changed: which of op, dtype, arg, sources differ

    def to_json(self) -> dict[str, Any]:
        def side(n: list[Any] | None) -> dict[str, Any] | None:
            return None if n is None else {"op": n[0], "dtype": n[1], "arg": n[2]}
        return {"kind": self.kind, "tinygrad": side(self.tinygrad), "svod": side(self.svod), "what": self.what}


@dataclass
class CellDetail:
    case: str
    svod_run: int
    row: Row
    cell: Cell
    log: list[LogLine] = field(default_factory=list)
    nodes: list[NodeDiff] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    pass_name: str | None = None
    unknown_spellings: list[str] = field(default_factory=list)
    tree_diff: list[str] = field(default_factory=list)  # the aligned tree diff `tgstore parity` prints for the stage

    @property
    def title(self) -> str:
        row = self.row
        where = f"kernel {row.tinygrad_position} {row.tinygrad_name or ''}".strip() \
            if row.tinygrad_position is not None else "no tinygrad kernel"
        after = f", after #{self.cell.tinygrad_pass} {self.pass_name}" if self.cell.tinygrad_pass is not None else ""
        return (f"Svod parity: {self.case} · Svod kernel {row.kernel_index} · {self.cell.stage} · tinygrad {where} "
                f"({row.renderer}) at {row.commit_label}{after}")

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "svod_run": self.svod_run, "svod_kernel": self.row.kernel_index,
                "stage": self.cell.stage, "verdict": self.cell.verdict, "renderer": self.row.renderer,
                "commit": self.row.sha, "tinygrad_kernel": self.row.tinygrad_position,
                "tinygrad_pass": self.cell.tinygrad_pass, "pass_name": self.pass_name,
                "svod_tree": self.cell.svod_tree, "tinygrad_graph": self.cell.tinygrad_graph,
                "counts": self.counts, "nodes": [n.to_json() for n in self.nodes], "tree_diff": self.tree_diff,
                "log": [{"path": g.path, "line": g.line_no, "source": g.source, "blob": g.blob} for g in self.log],
                "title": self.title}


def cell_detail(conn: sqlite3.Connection, case: str, svod_run: int, kernel: int, stage: str, commit: str
                ) -> CellDetail | None:
    """The cell of Svod run `svod_run`'s kernel `kernel` at `stage` against tinygrad at `commit` (its label in the
    grid: version or short sha), or None when the grid has no such cell."""
    grid = parity(conn, case, svod_run, commit)  # only the cell's commit: not the whole grid
    row = next((r for run in grid.runs for r in run.rows
                if r.kernel_index == kernel and commit in (r.commit_label, r.sha)), None)
    if row is None or stage not in row.cells:
        return None
    cell = row.cells[stage]
    detail = CellDetail(case, svod_run, row, cell)
    detail.log = [LogLine(source, line_no, count, path, blob) for source, line_no, count, path, _pos, blob
                  in conn.execute(LOG_LINES_SQL, (svod_run, kernel, stage))]
    tiny = find_graph(conn, cell.tinygrad_graph) if cell.tinygrad_graph else None
    svod = find_graph(conn, cell.svod_tree) if cell.svod_tree else None
    if tiny is not None:
        use = next((u for u in tiny.uses if u.get("pass_position") == cell.tinygrad_pass), None)
        detail.pass_name = use.get("pass_name") if use else None
    if tiny is not None and svod is not None:
        ours, detail.unknown_spellings = normalize_tinygrad(tiny.nodes)
        theirs = svod.nodes
        result = compare(theirs, ours, max_ghosts=0)
        nodes = [NodeDiff("changed", ours[n][:3], theirs[result.new_to_old[n]][:3],
                          differing(ours[n], theirs[result.new_to_old[n]], result.new_to_old))
                 for n in sorted(result.changed)]
        nodes += [NodeDiff("added", ours[n][:3], None) for n in sorted(result.added)]
        nodes += [NodeDiff("removed", None, theirs[o][:3]) for o in result.removed]
        detail.counts = {"added": len(result.added), "changed": len(result.changed), "removed": len(result.removed),
                         "differ": len(result.added) + len(result.changed) + len(result.removed),
                         "tinygrad_nodes": len(ours), "svod_nodes": len(theirs)}
        detail.nodes = nodes[:NODES_SHOWN]
        detail.tree_diff = tree_diff(theirs, ours, f"svod {stage}", f"tinygrad {stage}")
    return detail


def differing(ours: list[Any], theirs: list[Any], new_to_old: dict[int, int]) -> list[str]:
    """What of a matched node differs: its op, dtype, arg, or its sources (matched in order)."""
    what = [name for name, i in (("op", 0), ("dtype", 1), ("arg", 2)) if ours[i] != theirs[i]]
    if [new_to_old.get(s) for s in ours[3]] != list(theirs[3]):
        what.append("sources")
    return what
