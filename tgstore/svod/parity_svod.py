"""What parity reads of one Svod run (tgstore.svod.parity decides with it): each kernel's stages as their best
evidence (a tree in tinygrad's spelling, a canonical document, a node count), its kernels, where it failed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlalchemy import Connection

from tgstore.compare.sql import rows as _rows


@dataclass
class SvodSide:
    """A Svod stage's best evidence: a tree graph (normalized), a canonical document, a node count."""

    graph: list | None = None
    unknown: list[str] = field(default_factory=list)
    document: dict | None = None
    document_hash: str | None = None
    node_count: int | None = None


@dataclass
class SvodRunSide:
    """What parity reads of one Svod run: its stages per kernel, its kernels, where it failed (None: it did not).
    Read-only once loaded: `parity_store.refresh` reads it once for every tinygrad run it decides the run against."""

    stages: dict[int | None, dict[str, SvodSide]]
    kernels: list[dict]
    failure: dict | None


def svod_run_side(conn: Connection, run_id: int) -> SvodRunSide:
    rows = _rows(conn, """
        SELECT s.kernel_index, s.label, s.source, s.node_count, t.graph, t.unknown, d.document, d.hash AS doc_hash,
               d.stage AS doc_stage
        FROM svod_stages s LEFT JOIN svod_trees t ON t.id = s.tree_id
        LEFT JOIN canonical_docs d ON d.id = s.canonical_doc_id
        WHERE s.run_id = :run AND NOT s.unattributed ORDER BY s.seq""", run=run_id)
    out: dict[int | None, dict[str, SvodSide]] = {}
    for r in rows:
        side = out.setdefault(r["kernel_index"], {}).setdefault(r["label"], SvodSide())
        if r["graph"] and side.graph is None:
            side.graph = json.loads(r["graph"])
            side.unknown = json.loads(r["unknown"]) if r["unknown"] else []
        if r["document"] and side.document is None:
            side.document, side.document_hash = json.loads(r["document"]), r["doc_hash"]
        if side.node_count is None and r["node_count"] is not None:
            side.node_count = r["node_count"]
        if side.node_count is None and side.graph is not None:
            side.node_count = len(side.graph)
    failure = _rows(conn, "SELECT outcome, panic_location, panic_message, failed_kernel, last_stage, test "
                          "FROM svod_runs WHERE id = :run", run=run_id)[0]
    return SvodRunSide(out, svod_kernel_rows(conn, run_id),
                       failure if failure["panic_location"] or failure["outcome"] == "FAILED" else None)


def svod_kernel_rows(conn: Connection, run_id: int) -> list[dict]:
    """The Svod run's kernels, in order, with the renderer each is compared with (stored: spelling.kernel_renderer)."""
    return _rows(conn, "SELECT kernel_index, name, test, code_kind, renderer FROM svod_kernels WHERE run_id = :run "
                       "ORDER BY kernel_index", run=run_id)
