"""The rewrite steps recorded inside each pass (`--rewrites N`): for a case at a commit, per kernel and pass, each
step in order with the rule that matched (file, line, the UPat's source) and the node before and after it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.sql import AnyConnection, rows
from tgstore.compare.stage_diff import StageError

# One row per pass of each kernel's program (or of the case's scheduler), with its stored trace if any.
PASSES_SQL = """
SELECT si.position AS kernel, kn.name AS kernel_name, p.renderer, pe.position AS pass_position, pe.name, pe.depth,
       pe.node_count, g.hash AS graph_hash, CASE WHEN :want IS NULL OR pe.position = :want THEN b.text END AS trace,
       pe.rewrites_blob_id IS NOT NULL AS has_trace
FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
LEFT JOIN graphs g ON g.id = pe.graph_id LEFT JOIN blobs b ON b.id = pe.rewrites_blob_id
WHERE rc.run_id = :run AND k.name = :case AND NOT :schedule AND (:kernel IS NULL OR si.position = :kernel)
  AND (:renderer IS NULL OR p.renderer = :renderer)
UNION ALL
SELECT NULL, NULL, NULL, pe.position, pe.name, pe.depth, pe.node_count, g.hash,
       CASE WHEN :want IS NULL OR pe.position = :want THEN b.text END, pe.rewrites_blob_id IS NOT NULL
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN case_results cr ON cr.id = rc.case_result_id
JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id
LEFT JOIN graphs g ON g.id = pe.graph_id LEFT JOIN blobs b ON b.id = pe.rewrites_blob_id
WHERE rc.run_id = :run AND k.name = :case AND :schedule
ORDER BY 1, 3, 4
"""


@dataclass
class Step:
    index: int
    file: str | None
    line: int | None
    upat: str | None
    before: dict[str, Any] | None  # op, dtype, arg, hash (of its whole subgraph), graph (nearest nodes)
    after: dict[str, Any] | None

    def to_json(self, graphs: bool = False) -> dict[str, Any]:
        def node(n: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if n is None else {k: v for k, v in n.items() if graphs or k != "graph"}

        return {"index": self.index, "pattern": {"file": self.file, "line": self.line, "upat": self.upat},
                "before": node(self.before), "after": node(self.after)}


@dataclass
class PassSteps:
    position: int
    name: str
    depth: int
    renderer: str | None
    graph_hash: str | None
    total: int | None  # steps tinygrad made (None: not recorded)
    limit: int | None
    steps: list[Step] = field(default_factory=list)
    has_trace: bool = False
    node_count: int | None = None

    @property
    def recorded(self) -> bool:
        return self.has_trace

    def to_json(self, graphs: bool = False) -> dict[str, Any]:
        return {"name": self.name, "position": self.position, "depth": self.depth, "renderer": self.renderer,
                "graph_hash": self.graph_hash, "total": self.total, "limit": self.limit,
                "steps": [s.to_json(graphs) for s in self.steps]}


@dataclass
class KernelSteps:
    index: int | None  # schedule position; None for the case's scheduler passes
    name: str | None
    renderer: str | None
    passes: list[PassSteps] = field(default_factory=list)

    def to_json(self, graphs: bool = False) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "renderer": self.renderer,
                "passes": [p.to_json(graphs) for p in self.passes]}


def _node(stored: Any, text_line: Any) -> dict[str, Any] | None:
    """A step's node: the stored object (op, dtype, arg, hash, graph), or for traces recorded before those were,
    what its one-line text says."""
    if isinstance(stored, dict):
        return stored
    if isinstance(text_line, str) and text_line:
        op, _, rest = text_line.partition(" ")
        dtype, _, arg = rest.partition(" ")
        return {"op": op, "dtype": dtype, "arg": arg, "hash": None}
    return None


def _table_node(nodes: list, ref: Any) -> dict[str, Any] | None:
    """A step's node from a pass's node table: `ref` gives the subgraph's hash and its drawing as table indexes,
    sources first, the node last; a source outside the drawing is left out of `src`, and a node drawn with fewer
    sources than it has carries their number as a 5th element (the marker the text and drawing show)."""
    if not isinstance(ref, dict) or not ref.get("graph"):
        return None
    drawing = ref["graph"]
    position = {index: i for i, index in enumerate(drawing)}
    graph = []
    for index in drawing:
        node = nodes[index]
        kept = [position[s] for s in node[3] if s in position]
        whole = node[4] if len(node) > 4 else len(node[3])  # the node's own source count, where the child cut some
        graph.append([*node[:3], kept, whole] if len(kept) < whole else [*node[:3], kept])
    op, dtype, arg = graph[-1][:3]
    return {"op": op, "dtype": dtype, "arg": arg, "hash": ref.get("hash"), "graph": graph}


def parse_steps(trace: dict[str, Any]) -> list[Step]:
    """A pass's stored steps: the node-table form (`nodes`, steps' `before`/`after` referring to it), or the earlier
    form with each step's `before_node`/`after_node` written out (or only its one-line text)."""
    steps = []
    nodes = trace.get("nodes")
    for i, raw in enumerate(trace.get("steps") or []):
        file, line = raw.get("file"), raw.get("line")
        if file is None and isinstance(raw.get("rule"), str) and ":" in raw["rule"]:
            file, _, line_text = raw["rule"].rpartition(":")
            line = int(line_text) if line_text.isdigit() else None
        if isinstance(nodes, list):
            before, after = _table_node(nodes, raw.get("before")), _table_node(nodes, raw.get("after"))
        else:
            before = _node(raw.get("before_node"), raw.get("before"))
            after = _node(raw.get("after_node"), raw.get("after"))
        steps.append(Step(i, file, line, raw.get("upat"), before, after))
    return steps


def case_steps(conn: AnyConnection, run_id: int, case: str, *, kernel: int | None = None, pass_name: str | None = None,
               renderer: str | None = None, schedule: bool = False, pass_position: int | None = None,
               trace_of: int | None = None) -> list[KernelSteps]:
    """Per kernel (and renderer) of `case` in run `run_id`, its passes with their recorded steps, in order. With
    `trace_of`, only the pass at that position has its steps read (the others say only whether they have some)."""
    found_rows = rows(conn, PASSES_SQL, run=run_id, case=case, schedule=schedule, kernel=kernel,
                      renderer=renderer.upper() if renderer else None, want=trace_of)
    out: dict[tuple, KernelSteps] = {}
    for r in found_rows:
        if pass_name is not None and r["name"] != pass_name:
            continue
        if pass_position is not None and r["pass_position"] != pass_position:
            continue
        trace = json.loads(r["trace"]) if r["trace"] else None
        entry = out.setdefault((r["kernel"], r["renderer"]), KernelSteps(r["kernel"], r["kernel_name"], r["renderer"]))
        entry.passes.append(PassSteps(r["pass_position"], r["name"], r["depth"], r["renderer"], r["graph_hash"],
                                      trace.get("total") if trace else None, trace.get("limit") if trace else None,
                                      parse_steps(trace) if trace else [], bool(r["has_trace"]), r["node_count"]))
    return list(out.values())


def one_renderer(found: list[KernelSteps]) -> list[KernelSteps]:
    """Each kernel once: the steps of a kernel's passes do not depend on the renderer up to the renderer-specific
    passes, so without --renderer the first renderer (alphabetically: C before LLVM) stands for the kernel."""
    seen: set[Any] = set()
    out = []
    for k in found:
        if k.index in seen:
            continue
        seen.add(k.index)
        out.append(k)
    return out


def require_recorded(found: list[KernelSteps], case: str, where: str) -> None:
    if not found:
        raise StageError(f"no passes recorded for case {case!r} at {where} (extract with --stages on a tinygrad "
                         "that names its passes: 0.11 or later)")
    if not any(p.recorded for k in found for p in k.passes):
        raise StageError(f"no rewrite steps recorded for case {case!r} at {where} (extract with --rewrites N on "
                         "a tinygrad that traces them: 0.11 or later)")
