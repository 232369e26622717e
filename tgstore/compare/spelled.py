"""Stored graphs read once and compared in one spelling across tinygrad eras (tgstore/spelling/eras.py): a kernel
AST (kernels, uop_nodes, uop_edges) or a pass's output graph (graphs), by its hash. Stored graphs never change and
their hashes name their content, so what was read is kept (a bounded cache shared by every comparison)."""

from __future__ import annotations

import json
from collections import OrderedDict

from tgstore.compare.sql import AnyConnection, raw
from tgstore.spelling.eras import Node, normalized, spelling_hash

CACHE = 8192  # graphs
_nodes: OrderedDict[tuple[str, str], list[Node] | None] = OrderedDict()
_hashes: dict[tuple[str, str], str | None] = {}


def _remember(key: tuple[str, str], nodes: list[Node] | None) -> list[Node] | None:
    _nodes[key] = nodes
    if len(_nodes) > CACHE:
        old, _ = _nodes.popitem(last=False)
        _hashes.pop(old, None)
    return nodes


def ast_nodes(conn: AnyConnection, digest: str) -> list[Node] | None:
    """A kernel AST's nodes, [op, dtype, arg, [source positions]], or None if no kernel has that hash."""
    key = ("ast", digest)
    if key in _nodes:
        return _nodes[key]
    db = raw(conn)
    row = db.execute("SELECT id FROM kernels WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return _remember(key, None)
    nodes: list[Node] = [[op, dtype, arg, []] for op, dtype, arg in db.execute(
        "SELECT op, dtype, arg FROM uop_nodes WHERE kernel_id = ? ORDER BY idx", (row[0],))]
    for parent, child in db.execute("SELECT parent_idx, child_idx FROM uop_edges WHERE kernel_id = ? "
                                    "ORDER BY parent_idx, src_pos", (row[0],)):
        nodes[parent][3].append(child)
    return _remember(key, nodes)


def graph_nodes(conn: AnyConnection, digest: str) -> list[Node] | None:
    """A pass's output graph's nodes, or None if no pass graph has that hash."""
    key = ("graph", digest)
    if key in _nodes:
        return _nodes[key]
    row = raw(conn).execute("SELECT nodes FROM graphs WHERE hash = ?", (digest,)).fetchone()
    return _remember(key, json.loads(row[0]) if row else None)


def _spelling(kind: str, nodes: list[Node] | None, digest: str) -> str | None:
    key = (kind, digest)
    if key not in _hashes:
        _hashes[key] = spelling_hash(nodes) if nodes is not None else None
    return _hashes[key]


def ast_spelling(conn: AnyConnection, digest: str) -> str | None:
    """The AST's hash in the common spelling (equal for two ASTs that differ in spelling only)."""
    return _spelling("ast", ast_nodes(conn, digest), digest)


def graph_spelling(conn: AnyConnection, digest: str | None) -> str | None:
    """A pass graph's hash in the common spelling; None without a graph."""
    if digest is None:
        return None
    return _spelling("graph", graph_nodes(conn, digest), digest)


class Speller:
    """A comparison's view of the database: raw hashes, or (spelling ignored) hashes in the common spelling."""

    def __init__(self, conn: AnyConnection, ignore_spelling: bool) -> None:
        self.conn, self.ignore = conn, ignore_spelling

    def graph_key(self, digest: str | None) -> str | None:
        """What two pass graphs are compared by: equal keys, equal outputs."""
        return graph_spelling(self.conn, digest) if self.ignore and digest else digest

    def ast_key(self, digest: str | None) -> str | None:
        return ast_spelling(self.conn, digest) if self.ignore and digest else digest

    def graph(self, digest: str | None) -> list[Node] | None:
        """A pass graph's nodes as the comparison shows them (in the common spelling when spelling is ignored)."""
        nodes = graph_nodes(self.conn, digest) if digest else None
        return normalized(nodes) if nodes is not None and self.ignore else nodes

    def ast(self, digest: str | None) -> list[Node] | None:
        nodes = ast_nodes(self.conn, digest) if digest else None
        return normalized(nodes) if nodes is not None and self.ignore else nodes
