"""Svod against tinygrad, stage by stage.

Kernels are paired by name (Svod's from its generated code, tinygrad's from its renderer), the rest by order. For
each stage of maps.toml's [[stages]] (pipeline order) that either side has:
* a tree: Svod's tree and the tinygrad graph after (or before) the mapped pass, both in tinygrad's spelling with ids
  gone (tgstore.spelling.svod), equal when the graphs are; the diff is of the two graphs printed as trees;
* only a node count (a `[per-stage]` line): equal when the counts are;
* a canonical document: equal when the documents' hashes (sorted-key JSON) are; the diff aligns the nodes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tgstore.compare.canonical import aligned_diff, document_hash
from tgstore.compare.sql import rows as _rows
from tgstore.spelling.svod import maps, normalize_tinygrad, same_spelling, tinygrad_document
from tgstore.store.commit_names import CommitRow
from tgstore.svod.emission import switch_for
from tgstore.svod.parity_svod import SvodRunSide, SvodSide, svod_run_side
from tgstore.svod.treediff import tree_diff


class ParityError(LookupError):
    """Nothing to compare (no Svod run, no tinygrad run with the case, ...); a one-line message."""


VERDICTS = ("equal", "differs", "not in this log", "no tinygrad counterpart", "not comparable", "not reached")


@dataclass
class StageVerdict:
    stage: str
    verdict: str  # one of VERDICTS
    basis: str  # tree | node_count | canonical
    svod_nodes: int | None = None
    tinygrad_nodes: int | None = None
    diff: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # spellings the maps do not know (reported, not guessed)
    tinygrad_pass: str | None = None  # the tinygrad pass the stage maps to (`input:` its input)
    why: str | None = None  # for `not in this log`: the Svod setting that prints it; else why not comparable

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "verdict": self.verdict, "basis": self.basis, "tinygrad_pass": self.tinygrad_pass,
                "svod_nodes": self.svod_nodes, "tinygrad_nodes": self.tinygrad_nodes, "why": self.why,
                "diff": "\n".join(self.diff), "unknown": self.unknown}


@dataclass
class KernelParity:
    index: int | None  # Svod kernel index (None: the schedule)
    svod_name: str | None
    tinygrad_position: int | None
    tinygrad_name: str | None
    renderer: str | None
    stages: list[StageVerdict] = field(default_factory=list)
    paired_by: str | None = None  # name | structure | order

    @property
    def first_divergence(self) -> str | None:
        return next((s.stage for s in self.stages if s.verdict == "differs"), None)

    @property
    def unobserved_before(self) -> int:
        """Stages before the first observed divergence (all stages when none) the log does not hold."""
        count = 0
        for s in self.stages:
            if s.verdict == "differs":
                break
            count += s.verdict == "not in this log"
        return count

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "svod_name": self.svod_name, "tinygrad_name": self.tinygrad_name,
                "tinygrad_position": self.tinygrad_position, "renderer": self.renderer, "paired_by": self.paired_by,
                "first_observed_divergence": self.first_divergence, "first_divergence": self.first_divergence,
                "unobserved_before": self.unobserved_before, "stages": [s.to_json() for s in self.stages]}


@dataclass
class ParityReport:
    case: str
    commit: CommitRow
    tinygrad_run: int
    svod_run: int
    kernels: list[KernelParity]
    schedule: KernelParity | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return any(k.first_divergence for k in [*self.kernels, *([self.schedule] if self.schedule else [])])

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "tinygrad_commit": self.commit.sha, "tinygrad_run": self.tinygrad_run,
                "svod_run": self.svod_run, "differs": self.differs, "kernels": [k.to_json() for k in self.kernels],
                "schedule": self.schedule.to_json() if self.schedule else None, "notes": self.notes}


def stage_table() -> list[dict[str, Any]]:
    return list(maps()["stages"])


def choose_svod_run(conn: Connection, case: str, run: int | None) -> int:
    if run is not None:
        found = _rows(conn, 'SELECT r.id, c.name FROM svod_runs r JOIN cases c ON c.id = r.case_id WHERE r.id = :r',
                      r=run)
        if not found:
            raise ParityError(f"no Svod run {run}; `tgstore query svod_runs` lists them")
        if found[0]["name"] != case:
            raise ParityError(f"Svod run {run} is for case {found[0]['name']!r}, not {case!r}")
        return run
    found = _rows(conn, "SELECT r.id FROM svod_runs r JOIN cases c ON c.id = r.case_id WHERE c.name = :case "
                        "ORDER BY r.ingested_at DESC, r.id DESC LIMIT 1", case=case)
    if not found:
        raise ParityError(f"no Svod run for case {case!r}; store one with `tgstore ingest-svod PATH --case {case}`")
    return found[0]["id"]


def tinygrad_run(conn: Connection, case: str, commit: str | None, run: int | None = None) -> tuple[CommitRow, int]:
    """The commit and its current run holding the case: `run` itself when given, else as `run_with_case` chooses."""
    from tgstore.compare.stage_diff import StageError, run_with_case
    from tgstore.store.commit_names import resolve_commit

    if run is not None:
        found = _rows(conn, 'SELECT sha FROM v_run_cases WHERE run_id = :run AND "case" = :case', run=run, case=case)
        if not found:
            raise ParityError(f"tinygrad run {run} is not a current run holding case {case!r}")
        return resolve_commit(conn, found[0]["sha"]), run
    try:
        return run_with_case(conn, case, commit)
    except StageError as exc:
        raise ParityError(str(exc)) from None


class TinygradSide:
    """The tinygrad run's kernels, their pass graphs and canonical documents, loaded on demand."""

    def __init__(self, conn: Connection, run_id: int, case: str) -> None:
        self.conn, self.run_id, self.case = conn, run_id, case
        self.kernels = _rows(conn, 'SELECT position, kernel_name, kernel_id, node_count FROM v_kernels '
                                   'WHERE run_id = :run AND "case" = :case AND root_op = \'SINK\' ORDER BY position',
                             run=run_id, case=case)
        self._passes: dict[tuple, list[dict]] = {}

    def passes(self, scope: str, position: int | None, renderer: str | None) -> list[dict]:
        key = (scope, position, renderer)
        if key not in self._passes:
            self._passes[key] = _rows(self.conn, """
                SELECT pass_position, pass_name, depth, node_count, graph_id FROM v_passes
                WHERE run_id = :run AND "case" = :case AND scope = :scope AND position IS :position
                  AND renderer IS :renderer ORDER BY pass_position""", run=self.run_id, case=self.case,
                scope=scope, position=position, renderer=renderer)
        return self._passes[key]

    def graph(self, graph_id: int) -> list:
        nodes = self.conn.execute(text("SELECT nodes FROM graphs WHERE id = :g"), {"g": graph_id}).scalar()
        return json.loads(nodes)

    def kernel_ast(self, kernel_id: int) -> list:
        nodes = self.conn.execute(text("SELECT idx, op, dtype, arg FROM uop_nodes WHERE kernel_id = :k ORDER BY idx"),
                                  {"k": kernel_id}).all()
        srcs: dict[int, list[int]] = {}
        for parent, _pos, child in self.conn.execute(text(
                "SELECT parent_idx, src_pos, child_idx FROM uop_edges WHERE kernel_id = :k ORDER BY parent_idx, "
                "src_pos"), {"k": kernel_id}):
            srcs.setdefault(parent, []).append(child)
        return [[op, dtype, arg, srcs.get(idx, [])] for idx, op, dtype, arg in nodes]

    def stage_graph(self, stage: dict, position: int | None, renderer: str | None, kernel_id: int | None
                    ) -> list | None:
        """The tinygrad graph the Svod stage corresponds to: the mapped pass's output, or its input (the previous
        top-level pass's output, or the kernel AST before the first pass)."""
        name = stage.get("pass")
        if not name:
            return None
        scope = stage["scope"]
        passes = self.passes(scope, position, renderer if scope == "lower" else None)
        wanted = name.removeprefix("input:")
        at = next((i for i, p in enumerate(passes) if p["pass_name"] == wanted), None)
        if at is None:
            return None
        if not name.startswith("input:"):
            return self.graph(passes[at]["graph_id"]) if passes[at]["graph_id"] else None
        before = [p for p in passes[:at] if p["depth"] == 0 and p["graph_id"]]
        if before:
            return self.graph(before[-1]["graph_id"])
        return self.kernel_ast(kernel_id) if kernel_id is not None and scope == "lower" else None

    def canonical(self, position: int, stage: str) -> dict[str, Any] | None:
        found = _rows(self.conn, """
            SELECT d.document, d.hash, d.unsupported, d.reason FROM canonical_links cl
            JOIN canonical_docs d ON d.id = cl.doc_id JOIN run_cases rc ON rc.case_result_id = cl.case_result_id
            JOIN cases k ON k.id = rc.case_id
            WHERE rc.run_id = :run AND k.name = :case AND cl.position = :position AND cl.stage = :stage""",
                      run=self.run_id, case=self.case, position=position, stage=stage)
        return found[0] if found else None


def compare_trees(label: str, svod: SvodSide | None, graph: list | None, tinygrad_pass: str | None,
                  paired: bool = True) -> StageVerdict:
    observed = svod is not None and (svod.graph is not None or svod.node_count is not None)
    if not observed:
        why = switch_for(label, tree=True)
        if svod is not None and svod.document is None:
            why = "the log holds the stage but neither a tree that parses nor a node count (see ingest-svod's problems)"
        return StageVerdict(label, "not in this log", "tree", tinygrad_nodes=len(graph) if graph else None,
                            tinygrad_pass=tinygrad_pass, why=why)
    if graph is None:
        why = ("no tinygrad kernel paired with this Svod kernel" if not paired else
               "Svod's stage maps to no tinygrad pass" if not tinygrad_pass else
               f"tinygrad's run has no pass {tinygrad_pass.removeprefix('input:')!r} for this kernel")
        return StageVerdict(label, "no tinygrad counterpart", "tree", svod_nodes=svod.node_count,
                            tinygrad_pass=tinygrad_pass, why=why)
    tg_graph, unknown = normalize_tinygrad(graph)
    unknown = svod.unknown + [u for u in unknown if u not in svod.unknown]
    if svod.graph is None:
        verdict = "equal" if svod.node_count == len(tg_graph) else "differs"
        return StageVerdict(label, verdict, "node_count", svod.node_count, len(tg_graph), unknown=unknown,
                            tinygrad_pass=tinygrad_pass)
    if svod.graph == tg_graph:
        return StageVerdict(label, "equal", "tree", len(svod.graph), len(tg_graph), unknown=unknown,
                            tinygrad_pass=tinygrad_pass)
    diff = tree_diff(svod.graph, tg_graph, f"svod {label}", f"tinygrad {label}")
    if not diff:  # same printed structure, different node order: equal as graphs
        return StageVerdict(label, "equal", "tree", len(svod.graph), len(tg_graph), unknown=unknown,
                            tinygrad_pass=tinygrad_pass)
    return StageVerdict(label, "differs", "tree", len(svod.graph), len(tg_graph), diff, unknown,
                        tinygrad_pass=tinygrad_pass)


def compare_canonical(label: str, svod: SvodSide | None, found: dict[str, Any] | None, paired: bool = True,
                      absent: str | None = None) -> StageVerdict:
    if svod is None or svod.document is None:
        tg_nodes = found["node_count"] if found and found.get("node_count") is not None else None
        return StageVerdict(label, "not in this log", "canonical", tinygrad_nodes=tg_nodes, why=switch_for(label))
    sv_nodes = len(svod.document.get("nodes") or [])
    if found is None or found["document"] is None:
        why = absent or ("no tinygrad kernel paired with this Svod kernel" if not paired else
                         f"tinygrad's run stores no canonical {label} document"
                         + (f" ({found['unsupported']}: {found['reason']})" if found else ""))
        return StageVerdict(label, "no tinygrad counterpart", "canonical", sv_nodes, why=why)
    tg = json.loads(found["document"])
    tg_nodes = len(tg.get("nodes") or [])
    versions = (svod.document.get("schema_version"), tg.get("schema_version"))
    if versions[0] != versions[1]:
        return StageVerdict(label, "not comparable", "canonical", sv_nodes, tg_nodes,
                            why=f"schema_version {versions[0]} in Svod's document, {versions[1]} in tinygrad's")
    mine, theirs = same_spelling(svod.document), same_spelling(tg)
    if document_hash(mine) == document_hash(theirs):
        return StageVerdict(label, "equal", "canonical", sv_nodes, tg_nodes)
    diff = aligned_diff(mine, theirs) if "nodes" in mine and "nodes" in theirs else []
    return StageVerdict(label, "differs", "canonical", sv_nodes, tg_nodes, diff)


def pair_kernels(svod_kernels: list[dict], tg_kernels: list[dict], same_structure: Any = None
                 ) -> list[tuple[dict | None, dict | None, str | None]]:
    """By name where a name is on both sides once, then by structure (`same_structure(svod, tinygrad)`: equal kernel
    AST after normalization, one candidate only), then the rest in order; each pair says which was used."""
    pairs: list[tuple[dict | None, dict | None, str | None]] = []
    tg_by_name: dict[str, list[dict]] = {}
    for k in tg_kernels:
        tg_by_name.setdefault(k["kernel_name"] or "", []).append(k)
    used: set[int] = set()
    unpaired = []
    for sk in svod_kernels:
        same = tg_by_name.get(sk["name"] or "\0", [])
        if sk["name"] and len(same) == 1 and same[0]["position"] not in used:
            pairs.append((sk, same[0], "name"))
            used.add(same[0]["position"])
        else:
            unpaired.append(sk)
    unpaired = _pair_by_bare_name(unpaired, tg_kernels, used, pairs)
    if same_structure is not None:
        rest = []
        for sk in unpaired:
            matches = [k for k in tg_kernels if k["position"] not in used and same_structure(sk, k)]
            if len(matches) == 1:
                pairs.append((sk, matches[0], "structure"))
                used.add(matches[0]["position"])
            else:
                rest.append(sk)
        unpaired = rest
    remaining = [k for k in tg_kernels if k["position"] not in used]
    for i in range(max(len(unpaired), len(remaining))):
        sk = unpaired[i] if i < len(unpaired) else None
        tk = remaining[i] if i < len(remaining) else None
        pairs.append((sk, tk, "order" if sk and tk else None))
    return sorted(pairs, key=lambda p: (p[0]["kernel_index"] if p[0] else 10**9, p[1]["position"] if p[1] else 0))


def _pair_by_bare_name(unpaired: list[dict], tg_kernels: list[dict], used: set[int],
                       pairs: list[tuple[dict | None, dict | None, str | None]]) -> list[dict]:
    """Names minus the process-wide counter's suffix (`r_8_16_4n3` in a later test of one `cargo test` process is
    `r_8_16_4` in the program alone), paired in each program's own order when both sides have as many."""
    from tgstore.svod.readers.model import bare_name

    svod_by: dict[str, list[dict]] = {}
    for sk in unpaired:
        if sk["name"]:
            svod_by.setdefault(bare_name(sk["name"]), []).append(sk)
    tg_by: dict[str, list[dict]] = {}
    for tk in tg_kernels:
        if tk["position"] not in used and tk["kernel_name"]:
            tg_by.setdefault(bare_name(tk["kernel_name"]), []).append(tk)
    paired: set[int] = set()
    for bare, svod_side in svod_by.items():
        tg_side = tg_by.get(bare, [])
        if len(tg_side) == len(svod_side):
            for sk, tk in zip(sorted(svod_side, key=lambda k: k["kernel_index"]),
                              sorted(tg_side, key=lambda k: k["position"]), strict=True):
                pairs.append((sk, tk, "name (counter suffix)"))
                used.add(tk["position"])
                paired.add(sk["kernel_index"])
    return [sk for sk in unpaired if sk["kernel_index"] not in paired]


def renderer_for(svod_kernel: dict | None, explicit: str | None) -> str:
    """`--renderer`, else the renderer stored with the Svod kernel (`spelling.kernel_renderer`), else C."""
    if explicit:
        return explicit.upper()
    return (svod_kernel or {}).get("renderer") or "C"


# canonical documents Svod dumps per kernel beside the stages of maps.toml that carry one
EXTRA_CANONICAL = {"00-initial": ["postrange"], "20-final_rewrite": ["final_rewrite"]}
SCHEDULE_CANONICAL_ROWS = [("tensor", None), ("rangeified", "rangeified"), ("kernel_ast", "kernel_ast")]
KERNEL_GRAPH_ABSENT = ("Svod's kernel_ast is the whole kernel graph after fix_assign; this tinygrad run has no "
                       "kernel_graph document (extracted before tgstore stored it, or no get_kernel_graph)")


def parity_report(conn: Connection, case: str, *, svod_run: int | None = None, commit: str | None = None,
                  renderer: str | None = None, tinygrad_run_id: int | None = None,
                  svod_side: SvodRunSide | None = None) -> ParityReport:
    """The one place parity is decided: `tgstore parity` prints it, `parity_store` stores it (renderer None) for the
    `parity_matrix` query and the parity page. `svod_side`: `svod_run`'s, already read."""
    run_id = choose_svod_run(conn, case, svod_run)
    row, tg_run = tinygrad_run(conn, case, commit, tinygrad_run_id)
    side = svod_side or svod_run_side(conn, run_id)
    svod, svod_kernels, failure = side.stages, side.kernels, side.failure
    tg = TinygradSide(conn, tg_run, case)
    report = ParityReport(case, row, tg_run, run_id, [])
    stages = stage_table()

    def same_structure(sk: dict, tk: dict) -> bool:
        side = svod.get(sk["kernel_index"], {}).get("kernel-initial")
        if side is None or side.graph is None or tk["kernel_id"] is None:
            return False
        return normalize_tinygrad(tg.kernel_ast(tk["kernel_id"]))[0] == side.graph

    for sk, tk, how in pair_kernels(svod_kernels, tg.kernels, same_structure):
        ren = renderer_for(sk, renderer)
        kp = KernelParity(sk["kernel_index"] if sk else None, sk["name"] if sk else None,
                          tk["position"] if tk else None, tk["kernel_name"] if tk else None, ren, paired_by=how)
        sides = svod.get(sk["kernel_index"], {}) if sk else {}
        for stage in (s for s in stages if s["scope"] == "lower"):
            label = stage["label"]
            if stage.get("pass") or label[:2].isdigit() or label.startswith(("pre-", "kernel-")):
                graph = tg.stage_graph(stage, tk["position"], ren, tk["kernel_id"]) if tk else None
                kp.stages.append(compare_trees(label, sides.get(label), graph, stage.get("pass"), tk is not None))
            for canonical in [stage.get("canonical"), *EXTRA_CANONICAL.get(label, [])]:
                if canonical:
                    found = tg.canonical(tk["position"], canonical) if tk else None
                    kp.stages.append(compare_canonical(canonical, sides.get(canonical), found, tk is not None))
        if sk is not None and failure and failure["failed_kernel"] == sk["kernel_index"]:
            _not_reached(kp, failure, report)
        report.kernels.append(kp)
        if sk is None:
            report.notes.append(f"tinygrad kernel [{kp.tinygrad_position}] {kp.tinygrad_name} has no Svod kernel "
                                "in the log")
    sched = KernelParity(None, None, None, None, None)
    schedule_sides = svod.get(None, {})
    for stage in (s for s in stages if s["scope"] == "schedule"):
        sched.stages.append(compare_trees(stage["label"], schedule_sides.get(stage["label"]),
                                          tg.stage_graph(stage, None, None, None), stage.get("pass")))
    for canonical, _ in SCHEDULE_CANONICAL_ROWS:
        # Svod's kernel_ast is the whole kernel graph: tinygrad's side is the case-level `kernel_graph` document
        found = tg.canonical(-1, tinygrad_document(canonical))
        sched.stages.append(compare_canonical(canonical, schedule_sides.get(canonical), found,
                                              absent=KERNEL_GRAPH_ABSENT if canonical == "kernel_ast" else None))
    report.schedule = sched
    if not svod_kernels:
        report.notes.append("the Svod run has no kernels")
    return report


def _not_reached(kp: KernelParity, failure: dict, report: ParityReport) -> None:
    """The kernel Svod panicked in: its stages after the last one it reached are `not reached`, and a note says
    where it died, beside the tinygrad pass of the stage it was in."""
    labels = [s.stage for s in kp.stages]
    last = failure["last_stage"]
    after = labels.index(last) + 1 if last in labels else 0
    for verdict in kp.stages[after:]:
        if verdict.verdict == "not in this log":
            verdict.verdict, verdict.why = "not reached", f"Svod panicked after {last}"
    dying = next((s for s in kp.stages[after:] if s.tinygrad_pass), None)
    message = (failure["panic_message"] or "").splitlines()
    report.notes.append(f"Svod {failure['outcome'] or 'stopped'}: kernel {kp.index} ({kp.svod_name or '-'}) "
                        f"panicked at {failure['panic_location'] or '?'} after {last or 'no stage'}"
                        f"{f', in {dying.stage} (tinygrad pass {dying.tinygrad_pass!r})' if dying else ''}"
                        f"{': ' + message[0] if message else ''}")


def _verdict_line(s: StageVerdict) -> str:
    counts = f"{s.svod_nodes if s.svod_nodes is not None else '-'} / " \
             f"{s.tinygrad_nodes if s.tinygrad_nodes is not None else '-'}"
    where = f"[{s.tinygrad_pass}]" if s.tinygrad_pass else ("[canonical]" if s.basis == "canonical" else "[-]")
    line = f"  {s.stage:<26} {where:<36} {s.verdict:<24} nodes {counts}"
    if s.why:
        line += f"  ({'set ' if s.verdict == 'not in this log' else ''}{s.why})"
    if s.unknown:
        line += f"  unknown: {'; '.join(s.unknown)}"
    return line


def _headline(kp: KernelParity) -> str:
    observed = sum(s.verdict in ("equal", "differs") for s in kp.stages)
    if kp.first_divergence:
        return (f"first observed divergence at {kp.first_divergence} ({kp.unobserved_before} stages before it not "
                "in this log)")
    if observed == 0:
        return "nothing compared (no stage of this log has a tinygrad counterpart)"
    return f"no divergence in the {observed} stages compared ({kp.unobserved_before} not in this log)"


def format_parity(report: ParityReport) -> list[str]:
    lines = [f"case {report.case!r}: Svod run {report.svod_run} against tinygrad {report.commit.describe()} "
             f"(run {report.tinygrad_run}); stages in Svod's pipeline order, [the tinygrad pass each maps to]"]
    groups = [*report.kernels, *([report.schedule] if report.schedule else [])]
    for kp in groups:
        lines.append("")
        if kp.index is None and kp.renderer is None and kp is report.schedule:
            lines.append(f"schedule: {_headline(kp)}")
        else:
            lines.append(f"kernel {kp.index if kp.index is not None else '-'}: svod {kp.svod_name or '-'} / tinygrad "
                         f"[{kp.tinygrad_position}] {kp.tinygrad_name or '-'} ({kp.renderer}"
                         f"{f', paired by {kp.paired_by}' if kp.paired_by else ''}): {_headline(kp)}")
        lines += [_verdict_line(s) for s in kp.stages]
        first = next((s for s in kp.stages if s.verdict == "differs"), None)
        if first is not None and first.diff:
            lines.append(f"  diff at {first.stage}:")
            lines += [f"    {line}" for line in first.diff]
    lines += [f"note: {n}" for n in report.notes]
    differing = [f"{'schedule' if kp is report.schedule else f'kernel {kp.index}'} at {kp.first_divergence}"
                 for kp in groups if kp.first_divergence]
    lines.append("")
    lines.append(f"result: differs ({'; '.join(differing)}); exit status 1" if differing else
                 "result: no stage differs; exit status 0")
    return lines
