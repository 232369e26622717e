"""Svod parity of one case as a grid: each Svod run, each of its kernels at each stored tinygrad commit, one cell
per mapped Svod stage with its verdict. The verdicts are read through the canned query parity_matrix (queries/),
which decides nothing: it shows what tgstore/svod/parity.py decided and stored (svod/parity_store.py), and "not
decided" for a pair not decided yet; this adds the stages a log lacks ("not in this log") and, per cell, the Svod
tree and tinygrad's graph after the mapped pass, so a cell links to the two drawn over each other with the
difference marked."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from tgstore.queries import load_queries

STAGES_SQL = "SELECT label, pass_name, pass_input FROM svod_stage_map WHERE scope = 'lower' ORDER BY position"
RUNS_SQL = """
SELECT r.id, r.svod_commit, r.kind, r.source_path, r.kernel_count, r.stage_count FROM svod_runs r
JOIN cases c ON c.id = r.case_id WHERE c.name = ? ORDER BY r.id"""
TREES_SQL = """
SELECT s.run_id, s.kernel_index, s.label, max(t.hash) FROM svod_stages s JOIN svod_runs r ON r.id = s.run_id
JOIN cases c ON c.id = r.case_id LEFT JOIN svod_trees t ON t.id = s.tree_id
WHERE c.name = ? AND s.kernel_index IS NOT NULL GROUP BY s.run_id, s.kernel_index, s.label"""
# each kernel's top-level passes in order, and its AST: a stage that is a pass's input is compared with the graph
# after the pass before it (the AST before the first), as parity_matrix does
GRAPHS_SQL = """
SELECT sha, position, renderer, pass_name, pass_position, graph_hash FROM v_passes
WHERE "case" = ? AND scope = 'lower' AND depth = 0 ORDER BY sha, position, renderer, pass_position"""
ASTS_SQL = 'SELECT sha, position, kernel_hash FROM v_kernels WHERE "case" = ?'
# what the kernel grid leaves out and `tgstore parity` reports: the schedule's stages and every canonical document's
# verdict, as decided and stored (svod_parity)
OTHER_ROWS_SQL = """
SELECT v.svod_run, rc.sha, rc.version, v.scope, v.kernel_index, v.tinygrad_position, v.stage, v.basis, v.verdict,
       v.svod_nodes, v.tinygrad_nodes, v.why
FROM svod_parity v JOIN svod_runs r ON r.id = v.svod_run JOIN cases c ON c.id = r.case_id
JOIN v_run_cases rc ON rc.run_id = v.tinygrad_run AND rc."case" = c.name
WHERE c.name = ? AND (v.scope = 'schedule' OR v.basis = 'canonical')
ORDER BY v.svod_run, rc.history_rank, v.scope = 'kernel', v.kernel_index, v.seq"""
# verdict -> the class that colours it
VERDICT_CLASS = {"equal": "verdict-equal", "equal (node count)": "verdict-equal", "differs": "verdict-differs",
                 "differs (node count)": "verdict-differs", "missing in tinygrad": "verdict-missing",
                 "not decided": "verdict-undecided"}
NOT_IN_LOG = "not in this log"


@dataclass
class Cell:
    stage: str
    verdict: str
    svod_nodes: int | None = None
    tinygrad_nodes: int | None = None
    svod_tree: str | None = None
    tinygrad_graph: str | None = None
    tinygrad_pass: int | None = None

    @property
    def css(self) -> str:
        return VERDICT_CLASS.get(self.verdict, "verdict-absent")


@dataclass
class Row:
    kernel_index: int
    svod_name: str | None
    sha: str
    version: str | None
    tinygrad_position: int | None
    tinygrad_name: str | None
    renderer: str
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def commit_label(self) -> str:
        return self.version or (self.sha[:17] if self.sha.startswith("tree:") else self.sha[:12])

    def count(self, verdict: str) -> int:
        return sum(c.verdict.startswith(verdict) for c in self.cells.values())


@dataclass
class OtherRow:
    """A schedule stage or a canonical document's verdict, as stored (the kernel grid shows tree stages)."""

    sha: str
    version: str | None
    scope: str  # schedule | kernel
    kernel_index: int | None
    tinygrad_position: int | None
    stage: str
    basis: str  # tree | node_count | canonical
    verdict: str
    svod_nodes: int | None
    tinygrad_nodes: int | None
    why: str | None

    @property
    def commit_label(self) -> str:
        return self.version or (self.sha[:17] if self.sha.startswith("tree:") else self.sha[:12])

    @property
    def css(self) -> str:
        return VERDICT_CLASS.get(self.verdict, "verdict-absent")


@dataclass
class SvodRun:
    id: int
    svod_commit: str | None
    kind: str | None
    source_path: str | None
    rows: list[Row] = field(default_factory=list)
    other_rows: list[OtherRow] = field(default_factory=list)  # the schedule's stages and the canonical documents

    def kernels(self) -> list[tuple[int, str | None, list[Row]]]:
        """(Svod kernel index, its name, its rows: one per tinygrad commit), for a table per kernel."""
        out: dict[int, list[Row]] = {}
        for row in self.rows:
            out.setdefault(row.kernel_index, []).append(row)
        return [(k, rows[0].svod_name, rows) for k, rows in out.items()]


@dataclass
class Parity:
    case: str
    stages: list[str]
    runs: list[SvodRun]

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for run in self.runs:
            for row in run.rows:
                for cell in row.cells.values():
                    out[cell.verdict] = out.get(cell.verdict, 0) + 1
        return out


def parity(conn: sqlite3.Connection, case: str, svod_run: int | None = None, commit: str = "") -> Parity:
    stages = conn.execute(STAGES_SQL).fetchall()
    mapped = {label: (pass_name, bool(pass_input)) for label, pass_name, pass_input in stages}
    runs = [SvodRun(r[0], r[1], r[2], r[3]) for r in conn.execute(RUNS_SQL, (case,))
            if svod_run is None or r[0] == svod_run]
    trees = {(r[0], r[1], r[2]): r[3] for r in conn.execute(TREES_SQL, (case,))}
    pipelines: dict[tuple, list[tuple[str, int, str | None]]] = {}
    for sha, position, renderer, name, at, graph in conn.execute(GRAPHS_SQL, (case,)):
        pipelines.setdefault((sha, position, renderer), []).append((name, at, graph))
    asts = {(sha, position): digest for sha, position, digest in conn.execute(ASTS_SQL, (case,))}

    def graph_at(sha: str, position: int | None, renderer: str, label: str) -> tuple[int | None, str | None]:
        """(pass position, graph hash) of what the stage is compared with."""
        pass_name, is_input = mapped.get(label, (None, False))
        passes = pipelines.get((sha, position, renderer), [])
        index = next((i for i, p in enumerate(passes) if p[0] == pass_name), None)
        if index is None:
            return None, None
        if not is_input:
            return passes[index][1], passes[index][2]
        return (passes[index - 1][1], passes[index - 1][2]) if index > 0 else (None, asts.get((sha, position)))
    sql = load_queries()["parity_matrix"].sql
    found = conn.execute(sql, {"case_name": case, "svod_run": "" if svod_run is None else str(svod_run),
                               "commit": commit})
    names = [d[0] for d in found.description]
    by_run = {run.id: run for run in runs}
    rows: dict[tuple, Row] = {}
    for values in found.fetchall():
        r = dict(zip(names, values, strict=True))
        run = by_run.get(r["svod_run"])
        if run is None:
            continue
        key = (r["svod_run"], r["kernel_index"], r["sha"])
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(r["kernel_index"], r["svod_name"], r["sha"], r["version"], r["tinygrad_position"],
                                  r["tinygrad_name"], r["renderer"])
            run.rows.append(row)
        at, graph = graph_at(r["sha"], r["tinygrad_position"], r["renderer"], r["stage"])
        row.cells[r["stage"]] = Cell(r["stage"], r["verdict"], r["svod_nodes"], r["tinygrad_nodes"],
                                     trees.get((r["svod_run"], r["kernel_index"], r["stage"])), graph, at)
    for run_id, *values in conn.execute(OTHER_ROWS_SQL, (case,)):
        if run_id in by_run and (not commit or commit in (values[0], values[1]) or values[0].startswith(commit)):
            by_run[run_id].other_rows.append(OtherRow(*values))
    shown = [label for label, *_ in stages if any(label in row.cells for run in runs for row in run.rows)] or \
        [label for label, *_ in stages]
    for run in runs:
        for row in run.rows:
            for label in shown:
                row.cells.setdefault(label, Cell(label, NOT_IN_LOG))
    return Parity(case, shown, runs)


def svod_cases(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT c.name FROM svod_runs r JOIN cases c ON c.id = r.case_id "
                                       "ORDER BY 1")]
