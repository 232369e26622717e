"""The compare page without a case: one row per case that changed between two commits (AST, which renderers'
source, which passes), each linking to that case's full diff. Only hashes are read, never texts, so the page stays
small (a few KB per changed case) and quick whatever the suite."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tgstore.compare.diff import _cases, _items, _programs, choose_runs
from tgstore.spelling.eras import normalized, spelling_hash
from tgstore.store.commits import CommitRow, resolve_commit

PASS_LISTS_SQL = """
SELECT k.name AS "case", si.position, p.renderer, p.pass_list_id
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
JOIN programs p ON p.schedule_item_id = si.id
WHERE rc.run_id = :run AND p.pass_list_id IS NOT NULL
"""
ONE_SIDED = re.compile(r"^(?P<where>\S+): renderer (?P<renderer>\S+) only at (?P<side>\S+)$")


@dataclass
class CaseChange:
    case: str
    status: str  # "changed", "added", "removed", or "a -> b" for a status change
    ast: int = 0  # kernels whose AST changed
    kernels_added: int = 0
    kernels_removed: int = 0
    sources: dict[str, int] = field(default_factory=dict)  # renderer -> kernels whose source changed
    passes: dict[str, int] = field(default_factory=dict)  # renderer -> kernels whose pass list changed
    size: int = 0  # AST nodes that differ (in the common spelling if spelling is ignored); a kernel added counts whole
    spelling_only: int = 0  # kernels whose AST differs in spelling only

    @staticmethod
    def renderer_list(counts: dict[str, int]) -> str:
        return ", ".join(r if n == 1 else f"{r} ×{n}" for r, n in sorted(counts.items()))

    @property
    def what(self) -> str:
        parts = []
        if self.ast:
            parts.append(f"AST of {self.ast} kernel{'s' if self.ast > 1 else ''}")
        if self.spelling_only:
            parts.append(f"spelling only: {self.spelling_only}")
        if self.kernels_added or self.kernels_removed:
            parts.append(f"kernels +{self.kernels_added} −{self.kernels_removed}")
        return ", ".join(parts)


@dataclass
class Summary:
    a: CommitRow
    b: CommitRow
    run_a: int
    run_b: int
    notes: list[str]
    cases: list[CaseChange]
    compared: int
    renderers: list[str]
    ignore_spelling: bool = False
    hidden: int = 0  # cases left out because they changed in spelling (or source, passes) only


def label(commit: CommitRow) -> str:
    """A commit as people name it: its version, else a short sha."""
    return commit.version or commit.short


@dataclass(frozen=True)
class AstShape:
    """What the summary compares of a kernel AST: its hash in the common spelling, and its nodes' (op, dtype, arg)
    counted, raw and in the common spelling."""

    spelling_hash: str
    raw: Counter
    spelled: Counter


AST_CACHE = 4096  # kernels; stored ASTs never change, so a summary asked again reads none of them
_shapes: dict[str, AstShape] = {}


def ast_shape(raw: sqlite3.Connection, digest: str) -> AstShape | None:
    if digest in _shapes:
        return _shapes[digest]
    row = raw.execute("SELECT id FROM kernels WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    nodes: list[list[Any]] = [[op, dtype, arg, []] for op, dtype, arg in raw.execute(
        "SELECT op, dtype, arg FROM uop_nodes WHERE kernel_id = ? ORDER BY idx", (row[0],))]
    for parent, child in raw.execute("SELECT parent_idx, child_idx FROM uop_edges WHERE kernel_id = ? "
                                     "ORDER BY parent_idx, src_pos", (row[0],)):
        nodes[parent][3].append(child)
    shape = AstShape(spelling_hash(nodes), Counter((n[0], n[1], n[2]) for n in nodes),
                     Counter((n[0], n[1], n[2]) for n in normalized(nodes)))
    if len(_shapes) >= AST_CACHE:
        _shapes.clear()
    _shapes[digest] = shape
    return shape


def ast_difference(raw: sqlite3.Connection, hash_a: str, hash_b: str, ignore_spelling: bool) -> int:
    """How many AST nodes differ between two kernels: (op, dtype, arg) counted on both sides, in the common
    spelling across eras when spelling is ignored (0: equal there); 1 at least when only the edges differ."""
    a, b = ast_shape(raw, hash_a), ast_shape(raw, hash_b)
    if a is None or b is None:
        return 1
    if ignore_spelling and a.spelling_hash == b.spelling_hash:
        return 0
    count_a, count_b = (a.spelled, b.spelled) if ignore_spelling else (a.raw, b.raw)
    return max(1, sum((count_a - count_b).values()) + sum((count_b - count_a).values()))


def summarize(conn: Connection, ref_a: str, ref_b: str, ignore_spelling: bool = False) -> Summary:
    a, b = resolve_commit(conn, ref_a), resolve_commit(conn, ref_b)
    ra, rb, notes = choose_runs(conn, a, b)
    cases_a, cases_b = _cases(conn, ra.run_id), _cases(conn, rb.run_id)
    items_a, items_b = _items(conn, ra.run_id, None), _items(conn, rb.run_id, None)
    progs_a, progs_b = _programs(conn, ra.run_id, None), _programs(conn, rb.run_id, None)
    lists = [{(r["case"], r["position"], r["renderer"]): r["pass_list_id"]
              for r in conn.execute(text(PASS_LISTS_SQL), {"run": run}).mappings()} for run in (ra.run_id, rb.run_id)]
    changes: dict[str, CaseChange] = {}
    hidden = 0
    for name in sorted(set(cases_a) | set(cases_b)):
        if name not in cases_a or name not in cases_b:
            changes[name] = CaseChange(name, "added" if name not in cases_a else "removed")
            continue
        change = CaseChange(name, "changed" if cases_a[name] == cases_b[name] else f"{cases_a[name]} → {cases_b[name]}")
        positions = {p for c, p in items_a if c == name} | {p for c, p in items_b if c == name}
        for position in sorted(positions):
            ia, ib = items_a.get((name, position)), items_b.get((name, position))
            if ia is None or ib is None:
                change.kernels_added += ia is None
                change.kernels_removed += ib is None
                change.size += (ia or ib)["node_count"] or 1
                continue
            if ia["kernel_hash"] != ib["kernel_hash"]:
                raw = conn.connection.driver_connection
                size = ast_difference(raw, ia["kernel_hash"], ib["kernel_hash"], ignore_spelling)
                change.size += size
                change.ast += size > 0
                change.spelling_only += size == 0
            pa, pb = progs_a.get((name, position), {}), progs_b.get((name, position), {})
            for rend in set(pa) & set(pb):
                if (pa[rend]["source_hash"], pa[rend]["error"]) != (pb[rend]["source_hash"], pb[rend]["error"]):
                    change.sources[rend] = change.sources.get(rend, 0) + 1
                la, lb = lists[0].get((name, position, rend)), lists[1].get((name, position, rend))
                if la is not None and lb is not None and la != lb:
                    change.passes[rend] = change.passes.get(rend, 0) + 1
        structural = change.status != "changed" or change.ast or change.kernels_added or change.kernels_removed
        if structural or (not ignore_spelling and (change.sources or change.passes or change.spelling_only)):
            changes[name] = change
        elif change.sources or change.passes or change.spelling_only:
            hidden += 1
    renderers = sorted({r for progs in (*progs_a.values(), *progs_b.values()) for r in progs})
    ranked = sorted(changes.values(), key=lambda c: (-c.size, -(c.kernels_added + c.kernels_removed), c.case))
    return Summary(a, b, ra.run_id, rb.run_id, notes, ranked, len(set(cases_a) & set(cases_b)), renderers,
                   ignore_spelling, hidden)


def one_sided_notes(notes: list[str], a: CommitRow, b: CommitRow) -> tuple[list[str], list[str]]:
    """diff's per-kernel "renderer X only at <sha>" notes folded into one line per renderer and side, naming the
    commits by version (or short sha); the other notes as they are."""
    sides = {a.short: (label(a), label(b)), b.short: (label(b), label(a))}
    grouped: dict[tuple[str, str], int] = {}
    rest = []
    for note in notes:
        m = ONE_SIDED.match(note)
        if m and m["side"] in sides:
            key = (m["renderer"], m["side"])
            grouped[key] = grouped.get(key, 0) + 1
        else:
            rest.append(note)
    lines = [f"{renderer} only at {sides[side][0]}, not at {sides[side][1]} ({n} kernel{'s' if n > 1 else ''})"
             for (renderer, side), n in sorted(grouped.items())]
    return lines, rest


def context(summary: Summary) -> dict[str, Any]:
    return {"summary_table": summary, "label_a": label(summary.a), "label_b": label(summary.b)}
