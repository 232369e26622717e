"""Two commits compared case by case, from hashes only (no texts read), for the compare page without a case and
`tgstore diff --summary`: per case whether its status, kernels, kernel ASTs, generated sources (per renderer) and
pass lists changed, and how big the change is (AST nodes that differ).

Spelling-blind by default (`ignore_spelling`): kernel ASTs and pass graphs are compared in one spelling across
tinygrad eras (tgstore/spelling/eras.py). A case is listed when anything of it changed there: its status, its
kernels, an AST, a generated source (the output: compared as stored), or a pass's output; a case whose every
difference is one of spelling is counted in `hidden`, not listed."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tgstore.compare.diff import _cases, _items, _programs, choose_runs
from tgstore.compare.pass_align import align
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import AnyConnection, rows
from tgstore.spelling.eras import Node
from tgstore.store.commit_names import CommitRow, resolve_commit

PASS_LISTS_SQL = """
SELECT k.name AS "case", si.position, p.renderer, p.pass_list_id
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
JOIN programs p ON p.schedule_item_id = si.id
WHERE rc.run_id = :run AND p.pass_list_id IS NOT NULL
"""
PASS_ENTRIES_SQL = """
SELECT pe.position, pe.name, g.hash AS graph_hash FROM pass_entries pe LEFT JOIN graphs g ON g.id = pe.graph_id
WHERE pe.pass_list_id = :list ORDER BY pe.position"""


@dataclass
class CaseChange:
    case: str
    status: str  # "changed", "added", "removed", or "a -> b" for a status change
    ast: int = 0  # kernels whose AST changed (in the spelling compared)
    kernels_added: int = 0
    kernels_removed: int = 0
    sources: dict[str, int] = field(default_factory=dict)  # renderer -> kernels whose source changed
    passes: dict[str, int] = field(default_factory=dict)  # renderer -> kernels whose passes' outputs changed
    size: int = 0  # AST nodes that differ (in the spelling compared); a kernel added counts whole
    spelling_only: int = 0  # kernels whose AST differs in spelling only
    kernels: list[int] = field(default_factory=list)  # positions of the kernels that changed, for links

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

    @property
    def structural(self) -> bool:
        return self.status != "changed" or bool(self.ast or self.kernels_added or self.kernels_removed)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "what": self.what}


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
    ignore_spelling: bool = True
    hidden: int = 0  # cases left out: every difference of theirs is one of spelling

    def to_json(self) -> dict[str, Any]:
        def commit(c: CommitRow, run: int) -> dict[str, Any]:
            return {"sha": c.sha, "version": c.version, "subject": c.subject, "run_id": run}

        return {"a": commit(self.a, self.run_a), "b": commit(self.b, self.run_b), "notes": self.notes,
                "ignore_spelling": self.ignore_spelling, "cases_compared": self.compared,
                "cases": [c.to_json() for c in self.cases], "hidden_spelling_only": self.hidden,
                "renderers": self.renderers}


def label(commit: CommitRow) -> str:
    """A commit as people name it: its version, else a short sha."""
    return commit.version or commit.short


def node_difference(a: list[Node] | None, b: list[Node] | None) -> int:
    """How many nodes differ between two graphs: (op, dtype, arg) counted on both sides; 1 at least when only the
    edges differ."""
    if a is None or b is None:
        return 1
    count_a, count_b = Counter((n[0], n[1], n[2]) for n in a), Counter((n[0], n[1], n[2]) for n in b)
    return max(1, sum((count_a - count_b).values()) + sum((count_b - count_a).values()))


class _Passes:
    """Pass lists read once each and compared in the spelling asked for."""

    def __init__(self, conn: AnyConnection, speller: Speller) -> None:
        self.conn, self.speller, self.lists = conn, speller, {}

    def entries(self, list_id: int) -> list[Any]:
        if list_id not in self.lists:
            self.lists[list_id] = [_Entry(r["position"], r["name"], r["graph_hash"])
                                   for r in rows(self.conn, PASS_ENTRIES_SQL, list=list_id)]
        return self.lists[list_id]

    def differ(self, list_a: int, list_b: int) -> bool:
        """Whether the two pass lists differ: another pass list, or a shared pass with another output."""
        if list_a == list_b:
            return False
        if not self.speller.ignore:
            return True
        aligned = align(self.entries(list_a), self.entries(list_b))  # raw first: a pass one side ran is enough
        if any(p.a is None or p.b is None for p in aligned):
            return True
        key = self.speller.graph_key  # then the pairs, in order, each read only if no earlier one differed
        return any(p.a.graph_hash != p.b.graph_hash and key(p.a.graph_hash) != key(p.b.graph_hash) for p in aligned)


@dataclass
class _Entry:
    position: int
    name: str
    graph_hash: str | None


def summarize(conn: AnyConnection, ref_a: str, ref_b: str, ignore_spelling: bool = True) -> Summary:
    a, b = resolve_commit(conn, ref_a), resolve_commit(conn, ref_b)
    ra, rb, notes = choose_runs(conn, a, b)
    speller = Speller(conn, ignore_spelling)
    passes = _Passes(conn, speller)
    cases_a, cases_b = _cases(conn, ra.run_id), _cases(conn, rb.run_id)
    items_a, items_b = _items(conn, ra.run_id, None), _items(conn, rb.run_id, None)
    progs_a, progs_b = _programs(conn, ra.run_id, None), _programs(conn, rb.run_id, None)
    lists = [{(r["case"], r["position"], r["renderer"]): r["pass_list_id"] for r in rows(conn, PASS_LISTS_SQL, run=run)}
             for run in (ra.run_id, rb.run_id)]
    changes: dict[str, CaseChange] = {}
    hidden = 0
    for name in sorted(set(cases_a) | set(cases_b)):
        if name not in cases_a or name not in cases_b:
            changes[name] = CaseChange(name, "added" if name not in cases_a else "removed")
            continue
        change = CaseChange(name, "changed" if cases_a[name] == cases_b[name] else f"{cases_a[name]} → {cases_b[name]}")
        spelled_any = False
        positions = {p for c, p in items_a if c == name} | {p for c, p in items_b if c == name}
        for position in sorted(positions):
            ia, ib = items_a.get((name, position)), items_b.get((name, position))
            if ia is None or ib is None:
                change.kernels_added += ia is None
                change.kernels_removed += ib is None
                change.size += (ia or ib)["node_count"] or 1
                change.kernels.append(position)
                continue
            before = (change.ast, sum(change.sources.values()), sum(change.passes.values()))
            if ia["kernel_hash"] != ib["kernel_hash"]:
                spelled_any = True
                if speller.ast_key(ia["kernel_hash"]) == speller.ast_key(ib["kernel_hash"]):
                    change.spelling_only += 1
                else:
                    change.size += node_difference(speller.ast(ia["kernel_hash"]), speller.ast(ib["kernel_hash"]))
                    change.ast += 1
            pa, pb = progs_a.get((name, position), {}), progs_b.get((name, position), {})
            for rend in set(pa) & set(pb):
                if (pa[rend]["source_hash"], pa[rend]["error"]) != (pb[rend]["source_hash"], pb[rend]["error"]):
                    change.sources[rend] = change.sources.get(rend, 0) + 1
                la, lb = lists[0].get((name, position, rend)), lists[1].get((name, position, rend))
                if la is not None and lb is not None and la != lb:
                    spelled_any = True
                    if passes.differ(la, lb):
                        change.passes[rend] = change.passes.get(rend, 0) + 1
            if (change.ast, sum(change.sources.values()), sum(change.passes.values())) != before:
                change.kernels.append(position)
        if change.structural or change.sources or change.passes or (not ignore_spelling and change.spelling_only):
            changes[name] = change
        elif spelled_any:
            hidden += 1
    renderers = sorted({r for progs in (*progs_a.values(), *progs_b.values()) for r in progs})
    ranked = sorted(changes.values(), key=lambda c: (-c.size, -(c.kernels_added + c.kernels_removed),
                                                     -sum(c.sources.values()), c.case))
    return Summary(a, b, ra.run_id, rb.run_id, notes, ranked, len(set(cases_a) & set(cases_b)), renderers,
                   ignore_spelling, hidden)
