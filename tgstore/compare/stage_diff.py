"""Stage queries: the passes a kernel went through at a commit, its canonical documents, and the first pass whose
output differs between two commits (with a structural diff of the two graphs there)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.graphs import structural_diff
from tgstore.compare.pass_align import AlignedPass, added, align, first_one_sided, removed
from tgstore.compare.pass_align import first_difference as aligned_first_difference
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import AnyConnection, rows
from tgstore.store.commit_names import CommitRow, resolve_commit

CASE_STAGES = ("tensor", "rangeified", "kernel_graph")  # canonical stages of a whole case (position -1)


class StageError(LookupError):
    """Nothing stored answers the question (no such case, kernel, stage, or no stages recorded)."""


@dataclass
class PassRow:
    position: int
    name: str
    depth: int
    node_count: int | None
    changed: bool
    graph_hash: str | None

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "name": self.name, "node_count": self.node_count,
                "changed": bool(self.changed), "graph_hash": self.graph_hash, "depth": self.depth}


@dataclass
class KernelPasses:
    case: str
    kernel_index: int | None  # schedule position; None for the case's scheduler passes
    kernel_name: str | None
    renderer: str | None
    passes: list[PassRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "kernel_index": self.kernel_index, "kernel_name": self.kernel_name,
                "renderer": self.renderer, "passes": [p.to_json() for p in self.passes]}


def _rows(conn: AnyConnection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return rows(conn, sql, **params)


def run_with_case(conn: AnyConnection, case: str, commit: str | None) -> tuple[CommitRow, int]:
    """The commit (given, else the newest in history order holding the case) and its current run holding it."""
    if commit is not None:
        row = resolve_commit(conn, commit)
        found = _rows(conn, 'SELECT run_id FROM v_run_cases WHERE sha = :sha AND "case" = :case '
                            "ORDER BY run_id DESC LIMIT 1", sha=row.sha, case=case)
        if not found:
            raise StageError(f"commit {row.describe()} has no run with case {case!r}")
        return row, found[0]["run_id"]
    found = _rows(conn, 'SELECT sha, run_id FROM v_run_cases WHERE "case" = :case ORDER BY history_rank DESC, '
                        "run_id DESC LIMIT 1", case=case)
    if not found:
        known = [r["case"] for r in _rows(conn, 'SELECT DISTINCT "case" FROM v_run_cases ORDER BY 1')]
        raise StageError(f"no run has case {case!r}; stored cases: {', '.join(known) or 'none'}")
    return resolve_commit(conn, found[0]["sha"]), found[0]["run_id"]


def kernel_passes(conn: AnyConnection, run_id: int, case: str, *, kernel: int | None = None,
                  renderer: str | None = None, schedule: bool = False) -> list[KernelPasses]:
    """Per kernel and renderer (or, with `schedule`, the case's scheduler passes), the passes in order."""
    rows = _rows(conn, 'SELECT * FROM v_passes WHERE run_id = :run AND "case" = :case AND scope = :scope '
                       "AND (:kernel IS NULL OR position = :kernel) AND (:renderer IS NULL OR renderer = :renderer) "
                       "ORDER BY position, renderer, pass_position", run=run_id, case=case,
                 scope="schedule" if schedule else "lower", kernel=kernel, renderer=renderer)
    out: dict[tuple, KernelPasses] = {}
    for r in rows:
        key = (r["position"], r["renderer"])
        entry = out.setdefault(key, KernelPasses(case, r["position"], r["kernel_name"], r["renderer"]))
        entry.passes.append(PassRow(r["pass_position"], r["pass_name"], r["depth"], r["node_count"],
                                    bool(r["changed"]), r["graph_hash"]))
    return list(out.values())


def canonical_document(conn: AnyConnection, run_id: int, case: str, stage: str, kernel: int | None) -> dict[str, Any]:
    """The stored canonical document row (document text, or the unsupported error and reason)."""
    position = -1 if stage in CASE_STAGES else kernel
    if position is None:
        kernels = _rows(conn, "SELECT DISTINCT cl.position FROM canonical_links cl JOIN run_cases rc "
                              "ON rc.case_result_id = cl.case_result_id JOIN cases k ON k.id = rc.case_id "
                              "WHERE rc.run_id = :run AND k.name = :case AND cl.position >= 0 ORDER BY 1",
                        run=run_id, case=case)
        if len(kernels) != 1:
            raise StageError(f"case {case!r} has {len(kernels)} kernels with canonical documents; choose one with "
                             f"--kernel ({', '.join(str(k['position']) for k in kernels)})")
        position = kernels[0]["position"]
    rows = _rows(conn, "SELECT d.* FROM canonical_links cl JOIN canonical_docs d ON d.id = cl.doc_id "
                       "JOIN run_cases rc ON rc.case_result_id = cl.case_result_id JOIN cases k ON k.id = rc.case_id "
                       "WHERE rc.run_id = :run AND k.name = :case AND cl.position = :position AND cl.stage = :stage",
                 run=run_id, case=case, position=position, stage=stage)
    if not rows:
        stages = [r["stage"] for r in _rows(
            conn, "SELECT DISTINCT cl.stage FROM canonical_links cl JOIN run_cases rc "
                  "ON rc.case_result_id = cl.case_result_id JOIN cases k ON k.id = rc.case_id "
                  "WHERE rc.run_id = :run AND k.name = :case ORDER BY 1", run=run_id, case=case)]
        where = "the case" if position == -1 else f"kernel {position}"
        raise StageError(f"no canonical document at stage {stage!r} for {where} of case {case!r}; stored stages: "
                         f"{', '.join(stages) or 'none (extract with stages on a tinygrad that names its passes)'}")
    return rows[0]


SCHEDULE_POSITION = -1  # a StageDiff of the case's scheduler passes (no kernel, no renderer), as canonical's -1


@dataclass
class StageDiff:
    case: str
    position: int  # the kernel; SCHEDULE_POSITION for the scheduler passes
    renderer: str | None  # None for the scheduler passes
    pass_position: int | None  # the first differing pass's position on side a (on side b if added there)
    name_a: str | None
    name_b: str | None
    title: str
    lines: list[str]
    graph_a: str | None = None  # the graphs after that pass (hashes), for the graph view; for a pass only one
    graph_b: str | None = None  # side ran, the other side's graph at that point (after its nearest pass)
    pass_position_a: int | None = None  # its position on each side (None: the side lacks it)
    pass_position_b: int | None = None
    kind: str = "changed"  # "changed" (another output graph), "added" (only on b) or "removed" (only on a)
    added: list[str] = field(default_factory=list)  # every pass only on side b, by name, in order
    removed: list[str] = field(default_factory=list)  # every pass only on side a
    ignore_spelling: bool = False  # compared (and the diff printed) in one spelling across tinygrad eras
    spelling_only: int = 0  # shared passes whose outputs differ in spelling only (counted when spelling is ignored)

    @property
    def scope(self) -> str:
        return "schedule" if self.position == SCHEDULE_POSITION else "kernel"

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "scope": self.scope, "position": self.position, "renderer": self.renderer,
                "pass_position": self.pass_position, "pass_position_a": self.pass_position_a,
                "pass_position_b": self.pass_position_b, "kind": self.kind, "pass_a": self.name_a,
                "pass_b": self.name_b, "added": self.added, "removed": self.removed,
                "graph_a": self.graph_a, "graph_b": self.graph_b, "title": self.title, "diff": "\n".join(self.lines),
                "ignore_spelling": self.ignore_spelling, "spelling_only": self.spelling_only}


def first_difference(a: list[PassRow], b: list[PassRow]) -> AlignedPass | None:
    """The first pass, in the lists aligned by name and occurrence, present on both sides whose output graph
    differs as stored; None if none does."""
    return aligned_first_difference(align(a, b))


def stage_diffs(conn: AnyConnection, run_a: int, run_b: int, label_a: str, label_b: str, *, case: str | None = None,
                renderer: str | None = None, context: int = 3, schedule: bool = False,
                ignore_spelling: bool = False) -> list[StageDiff]:
    """Per case, its scheduler passes and each kernel and renderer recorded at both runs: the passes aligned by
    name and occurrence, the passes added and removed, and the first pass present on both sides whose output
    differs, with a structural diff of the two graphs after it (ids ignored; with `ignore_spelling`, compared and
    printed in one spelling across tinygrad eras). A kernel whose shared passes all agree but whose pass lists
    differ is reported at its first one-sided pass (kind added or removed). With `schedule`, the case's scheduler
    passes too (what port-queue reports at schedule scope), first, whatever `renderer` is: they have none."""
    def lists(run: int) -> dict[tuple, KernelPasses]:
        cases = [case] if case else [r["case"] for r in _rows(conn, 'SELECT DISTINCT "case" FROM v_passes '
                                                                    "WHERE run_id = :run", run=run)]
        found = {(c, SCHEDULE_POSITION, None): k for c in cases if schedule
                 for k in kernel_passes(conn, run, c, schedule=True)}
        found.update({(c, k.kernel_index, k.renderer): k for c in cases
                      for k in kernel_passes(conn, run, c, renderer=renderer)})
        return found

    speller = Speller(conn, ignore_spelling)
    key_of = speller.graph_key if ignore_spelling else None  # pairs differing in spelling only are marked
    side_a, side_b = lists(run_a), lists(run_b)
    out = []
    for key in sorted(set(side_a) & set(side_b), key=lambda k: (k[0], k[1], k[2] or "")):
        aligned = align(side_a[key].passes, side_b[key].passes, key_of)
        first = aligned_first_difference(aligned) or first_one_sided(aligned)
        if first is None:
            continue
        ra, rb = first.a, first.b
        where = f"{key[0]} schedule" if key[1] == SCHEDULE_POSITION else f"{key[0]}[{key[1]}] {key[2]}"
        name_a, name_b = (ra.name if ra else None), (rb.name if rb else None)
        at = f"#{ra.position if ra else '-'} -> #{rb.position if rb else '-'}"
        counts = f"{ra.node_count if ra else '-'} -> {rb.node_count if rb else '-'} nodes"
        what = "first differing pass" if first.differs else "no shared pass differs; first one-sided pass"
        title = f"{where}: {what} {first.name!r} {at}, {first.kind} ({counts})"
        plus, minus = added(aligned), removed(aligned)
        if plus or minus:
            title += "; " + "; ".join(part for part in (f"added {', '.join(plus)}" if plus else "",
                                                        f"removed {', '.join(minus)}" if minus else "") if part)
        # a pass only one side ran is compared with the other side's graph at that point: after its last pass
        # before, or (added at the start) after its first pass
        index = aligned.index(first)
        nearby = [*reversed(aligned[:index]), *aligned[index + 1:]]
        near_a = ra or next((p.a for p in nearby if p.a), None)
        near_b = rb or next((p.b for p in nearby if p.b), None)
        hash_a, hash_b = (near_a.graph_hash if near_a else None), (near_b.graph_hash if near_b else None)
        ga, gb = speller.graph(hash_a), speller.graph(hash_b)
        lines = structural_diff(ga or [], gb or [], f"{label_a} {where} {_side(ra, near_a)}",
                                f"{label_b} {where} {_side(rb, near_b)}", context) if (ga or gb) else []
        out.append(StageDiff(key[0], key[1], key[2], ra.position if ra else rb.position, name_a, name_b, title,
                             lines, hash_a, hash_b,
                             ra.position if ra else None, rb.position if rb else None, first.kind, plus, minus,
                             ignore_spelling, sum(p.kind == "spelling" for p in aligned)))
    return out


def _side(own: PassRow | None, near: PassRow | None) -> str:
    """A diff side's label: its pass, or, where the side lacks the pass, the pass whose graph stands in for it."""
    if own is not None:
        return f"#{own.position} {own.name}"
    return f"(no such pass; the graph after #{near.position} {near.name})" if near else "(no such pass)"


def pretty_document(document_text: str) -> str:
    return json.dumps(json.loads(document_text), indent=2, sort_keys=False) + "\n"
