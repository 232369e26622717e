"""Finding a stored graph by its hash, wherever it is kept: a kernel AST, a pass's output graph, a Svod tree or a
canonical document. All come back as tgstore's node encoding: [op, dtype, arg, [source positions]]."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StoredGraph:
    hash: str
    kind: str  # "kernel AST", "pass graph", "Svod tree", "canonical document"
    nodes: list[list[Any]]
    title: str
    uses: list[dict[str, Any]] = field(default_factory=list)  # where it appears (run, case, kernel, pass)
    linear_id: int | None = None  # a PROGRAM graph: the linearized UOps of a program it is the last pass of


def _kernel(conn: sqlite3.Connection, digest: str) -> StoredGraph | None:
    row = conn.execute("SELECT id, name, root_op, node_count FROM kernels WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    kernel_id, name, root_op, _count = row
    nodes: list[list[Any]] = [[op, dtype, arg, []] for op, dtype, arg in conn.execute(
        "SELECT op, dtype, arg FROM uop_nodes WHERE kernel_id = ? ORDER BY idx", (kernel_id,))]
    for parent, _pos, child in conn.execute("SELECT parent_idx, src_pos, child_idx FROM uop_edges WHERE kernel_id = ? "
                                            "ORDER BY parent_idx, src_pos", (kernel_id,)):
        nodes[parent][3].append(child)
    uses = [dict(zip(("run_id", "sha", "version", "case", "position"), r, strict=True)) for r in conn.execute(
        'SELECT run_id, sha, version, "case", position FROM v_kernels WHERE kernel_id = ? ORDER BY history_rank '
        "DESC LIMIT 20", (kernel_id,))]
    return StoredGraph(digest, "kernel AST", nodes, f"kernel {name or root_op}", uses)


def _pass_graph(conn: sqlite3.Connection, digest: str) -> StoredGraph | None:
    row = conn.execute("SELECT id, nodes FROM graphs WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    graph_id, nodes_json = row
    uses = [dict(zip(("run_id", "sha", "version", "case", "position", "renderer", "pass_position", "pass_name"), r,
                     strict=True)) for r in conn.execute(
        'SELECT run_id, sha, version, "case", position, renderer, pass_position, pass_name FROM v_passes '
        "WHERE graph_id = ? ORDER BY history_rank DESC LIMIT 20", (graph_id,))]
    name = uses[0]["pass_name"] if uses else "pass"
    nodes = json.loads(nodes_json)
    linear_id = None
    if nodes and nodes[-1][0] == "PROGRAM":  # its LINEAR node's sources are the program's linearized UOps
        linear_id = conn.execute("SELECT p.linear_id FROM pass_entries pe JOIN programs p "
                                 "ON p.pass_list_id = pe.pass_list_id WHERE pe.graph_id = ? "
                                 "AND p.linear_id IS NOT NULL LIMIT 1", (graph_id,)).fetchone()
        linear_id = linear_id[0] if linear_id else None
    return StoredGraph(digest, "pass graph", nodes, f"graph after {name!r}", uses, linear_id)


def _svod_tree(conn: sqlite3.Connection, digest: str) -> StoredGraph | None:
    row = conn.execute("SELECT graph, root_op FROM svod_trees WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    return StoredGraph(digest, "Svod tree", json.loads(row[0]), f"Svod tree ({row[1] or '?'})")


def canonical_nodes(document: dict[str, Any]) -> list[list[Any]]:
    """A canonical (schema v7) graph document's nodes in tgstore's encoding; ids become positions."""
    position = {node["id"]: i for i, node in enumerate(document.get("nodes") or [])}

    def short(value: Any) -> str:
        if isinstance(value, dict):
            if value.get("kind") == "scalar":
                return str(value.get("name"))
            inner = {k: v for k, v in value.items() if k != "kind"}
            return f"{value.get('kind')}({', '.join(f'{k}={short(v)}' for k, v in inner.items())})"
        return json.dumps(value) if isinstance(value, list) else str(value)

    return [[n["op"], short(n.get("dtype")), "None" if (n.get("arg") or {}).get("kind") == "none"
             else short(n.get("arg")), [position[s] for s in n.get("src") or [] if s in position]]
            for n in document.get("nodes") or []]


def _canonical(conn: sqlite3.Connection, digest: str) -> StoredGraph | None:
    row = conn.execute("SELECT stage, document FROM canonical_docs WHERE hash = ?", (digest,)).fetchone()
    if row is None or not row[1]:
        return None
    document = json.loads(row[1])
    if "nodes" not in document:
        return None  # a schedule document (items), not a graph
    return StoredGraph(digest, "canonical document", canonical_nodes(document), f"canonical {row[0]}")


FINDERS = (_kernel, _pass_graph, _svod_tree, _canonical)


def find_graph(conn: sqlite3.Connection, digest: str) -> StoredGraph | None:
    for finder in FINDERS:
        try:
            found = finder(conn, digest)
        except sqlite3.OperationalError:  # a table an older schema lacks
            continue
        if found is not None:
            return found
    return None
