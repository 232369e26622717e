"""Rule-level parity: Svod's pattern matches beside tinygrad's rule matches, per kernel and pass.

Svod prints one `pattern matched` TRACE event per rewrite (ir/src/pattern/simplified.rs:252, target
`svod_ir::pattern::simplified`) naming only the OpKey of the node rewritten (`Binary(Add)`, `Load`): no rule, no
pass. The reader ties each match to the pass whose event Svod prints next (tgstore.svod.readers.segment: a pass's
event follows its graph_rewrite, schedule/src/optimizer/mod.rs), so a stretch of matches covers the passes after
the previous event up to that stage (all of them where the log skips a pass's event). tinygrad's side is the rewrite
steps tgstore records inside each named pass (`--rewrites N`: the rule's file and line, the node rewritten), per
kernel and renderer. The two are set side by side by the op of the node rewritten; a Svod op key is never guessed
to be one tinygrad rule, and one the maps cannot spell is shown as unmapped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tgstore.compare.rewrite_steps import PASSES_SQL
from tgstore.spelling.svod import Speller, maps
from tgstore.store.commit_names import CommitRow
from tgstore.svod.parity import choose_svod_run, pair_kernels, renderer_for, tinygrad_run
from tgstore.svod.parity_svod import svod_kernel_rows
from tgstore.svod.readers.model import has_events


def _rows(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(r._mapping) for r in conn.execute(text(sql), params)]


def op_of_key(op_key: str) -> str | None:
    """tinygrad's op for a Svod OpKey (its Debug): `Binary(Add)` -> ADD, `Load` -> LOAD, `GetTuple` -> GETTUPLE;
    None when the maps do not know it (the op key is then shown unmapped)."""
    table = maps()
    inner = op_key.split("(", 1)[1].rstrip(")") if "(" in op_key else None
    if inner is not None:
        if op_key.split("(", 1)[0] not in ("Binary", "Unary", "Ternary") or not isinstance(table["ops"].get(inner),
                                                                                           str):
            return None
        return table["ops"][inner]
    spelled = table["rules"]["op_keys"].get(op_key)
    if spelled is None:
        known = [k for k, v in table["ops"].items() if isinstance(v, str)] + table["ops"]["same"]["names"] + \
            table["ops"]["svod_only"]["names"]
        spelled = next((k for k in known if k.replace("_", "").upper() == op_key.upper()), None)
    if spelled is None:
        return None
    speller = Speller()
    op = speller.svod_op(spelled)
    return None if speller.unknown and not speller.unknown[0].startswith("Svod-only") else op


@dataclass
class OpRow:
    op: str | None  # tinygrad's op (None: a Svod op key the maps cannot spell)
    svod: int = 0
    tinygrad: int = 0
    op_keys: dict[str, int] = field(default_factory=dict)
    rules: list[dict[str, Any]] = field(default_factory=list)  # tinygrad's rules that matched at this op

    @property
    def side(self) -> str:
        if self.op is None:
            return "unmapped"
        return "both" if self.svod and self.tinygrad else "svod only" if self.svod else "tinygrad only"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "side": self.side, "svod": self.svod, "tinygrad": self.tinygrad,
                "svod_op_keys": self.op_keys, "tinygrad_rules": self.rules}


@dataclass
class PassRules:
    label: str  # the Svod stage the matches precede (`codegen`: before the kernel's generated code)
    since: str | None
    passes: list[str] | None  # tinygrad passes the stretch maps to (None: no mapping)
    svod: int = 0
    tinygrad: int = 0
    partial: str | None = None  # tinygrad recorded only the first steps of some pass
    ops: list[OpRow] = field(default_factory=list)
    recorded: bool = True  # tinygrad's run recorded rewrite steps for the kernel

    @property
    def one_sided(self) -> list[OpRow]:
        """Ops matched on one side only, where that can be told: passes mapped and steps recorded; an op only Svod
        matched is not named where tinygrad recorded only a pass's first steps."""
        if not self.passes or not self.recorded:
            return []
        return [o for o in self.ops if o.side == "tinygrad only" or (o.side == "svod only" and not self.partial)]

    def to_json(self) -> dict[str, Any]:
        return {"svod_stage": self.label, "since": self.since, "tinygrad_passes": self.passes, "svod": self.svod,
                "tinygrad": self.tinygrad, "tinygrad_partial": self.partial, "tinygrad_recorded": self.recorded,
                "ops": [o.to_json() for o in self.ops],
                "one_side_only": [{"op": o.op, "side": o.side} for o in self.one_sided]}


@dataclass
class KernelRules:
    index: int | None
    svod_name: str | None
    tinygrad_position: int | None
    tinygrad_name: str | None
    renderer: str | None
    passes: list[PassRules] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "svod_name": self.svod_name, "tinygrad_position": self.tinygrad_position,
                "tinygrad_name": self.tinygrad_name, "renderer": self.renderer,
                "passes": [p.to_json() for p in self.passes]}


@dataclass
class RulesReport:
    case: str
    commit: CommitRow
    tinygrad_run: int
    svod_run: int
    kernels: list[KernelRules] = field(default_factory=list)
    loose: dict[str, int] = field(default_factory=dict)  # matches no pass event ties to a kernel and pass
    hint: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def one_sided(self) -> int:
        return sum(len(p.one_sided) for k in self.kernels for p in k.passes)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "tinygrad_commit": self.commit.sha, "tinygrad_run": self.tinygrad_run,
                "svod_run": self.svod_run, "kernels": [k.to_json() for k in self.kernels], "loose": self.loose,
                "one_side_only": self.one_sided, "hint": self.hint, "notes": self.notes}


def _order(scope: str) -> tuple[list[str], dict[str, list[str]]]:
    """Svod's labels of a scope in emission order, and the tinygrad passes each one's rewrites are."""
    table = maps()
    order, passes = [], {}
    for stage in table["stages"]:
        if stage["scope"] != scope:
            continue
        order.append(stage["label"])
        name = stage.get("pass")
        passes[stage["label"]] = ([name] if name and not name.startswith("input:") else []) + stage.get("also", [])
        if stage.get("canonical") and stage["canonical"] != stage["label"]:  # a canonical dump printed there
            order.append(stage["canonical"])
            passes[stage["canonical"]] = []
    if scope == "schedule":
        for entry in table["rules"]["kernel_split"]:
            order.append(entry["message"])
            passes[entry["message"]] = list(entry["passes"])
    return order, passes


def span_passes(scope: str, since: str | None, label: str) -> list[str] | None:
    """The tinygrad passes whose rewrites a stretch of Svod matches covers: those of the stages after `since` up to
    `label` in Svod's emission order; None when either label is not in the order (nothing mapped)."""
    order, passes = _order(scope)
    if label not in order or (since is not None and since not in order):
        return None
    start = order.index(since) + 1 if since is not None else 0
    if label == "kernel-initial":  # before the kernel's first pass: the schedule's or the previous kernel's
        return None
    return [p for stage in order[start:order.index(label) + 1] for p in passes[stage]]


class TinygradSteps:
    """tinygrad's recorded rewrite steps per pass name, for one kernel and renderer (or the schedule)."""

    def __init__(self, conn: Connection, run_id: int, case: str, kernel: int | None, renderer: str | None) -> None:
        rows = _rows(conn, PASSES_SQL, run=run_id, case=case, want=None, schedule=kernel is None, kernel=kernel,
                     renderer=renderer)
        self.order: list[str] = []
        self.steps: dict[str, Counter] = {}
        self.total: dict[str, int] = {}
        self.recorded: dict[str, int] = {}
        self.traced = any(r["has_trace"] for r in rows)
        for r in rows:
            self.order.append(r["name"])
            counts = self.steps.setdefault(r["name"], Counter())
            if not r["trace"]:
                continue
            trace = json.loads(r["trace"])
            self.total[r["name"]] = self.total.get(r["name"], 0) + int(trace.get("total") or 0)
            self.recorded[r["name"]] = self.recorded.get(r["name"], 0) + len(trace.get("steps") or [])
            nodes = trace.get("nodes") or []
            for step in trace.get("steps") or []:
                before = step.get("before") or {}
                drawing = before.get("graph") or []
                op = nodes[drawing[-1]][0] if drawing and drawing[-1] < len(nodes) else None
                counts[(op, step.get("file"), step.get("line"))] += 1

    def after_last(self, main: set[str], mapped: set[str]) -> list[str]:
        """A kernel's code generation (after Svod's last stage): the passes after the last one a Svod stage is
        (`main`), less those a stage also covers (`mapped`)."""
        last = max((i for i, n in enumerate(self.order) if n in main), default=None)
        return [] if last is None else [n for n in dict.fromkeys(self.order[last + 1:]) if n not in mapped]


def _rule_names(conn: Connection, run_id: int) -> dict[tuple[str, int], dict[str, Any]]:
    """(file, line) -> the rule's function name(s) and matcher, from the run's pattern set."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for r in _rows(conn, "SELECT p.file, p.line, p.function_name, p.matcher FROM runs r JOIN pattern_set_members m "
                         "ON m.pattern_set_id = r.pattern_set_id JOIN patterns p ON p.id = m.pattern_id "
                         "WHERE r.id = :run ORDER BY p.id", run=run_id):
        entry = out.setdefault((r["file"], r["line"]), {"function": [], "matcher": []})
        for key, value in (("function", r["function_name"]), ("matcher", r["matcher"])):
            if value and value not in entry[key]:
                entry[key].append(value)
    return out


def compare_pass(label: str, since: str | None, svod: dict[str, int], passes: list[str] | None,
                 steps: TinygradSteps | None, names: dict[tuple[str, int], dict[str, Any]]) -> PassRules:
    result = PassRules(label, since, passes, svod=sum(svod.values()), recorded=steps is not None and steps.traced)
    rows: dict[str | None, OpRow] = {}
    unmapped: list[OpRow] = []
    for op_key, count in sorted(svod.items()):
        op = op_of_key(op_key)
        row = rows.setdefault(op, OpRow(op)) if op is not None else OpRow(None)
        if op is None:
            unmapped.append(row)
        row.svod += count
        row.op_keys[op_key] = count
    partial = []
    for name in dict.fromkeys(passes or []):
        counts = steps.steps.get(name, Counter()) if steps else Counter()
        for (op, file, line), count in counts.items():
            row = rows.setdefault(op, OpRow(op))
            row.tinygrad += count
            named = names.get((file, line), {})
            row.rules.append({"pass": name, "file": file, "line": line, "count": count,
                              "function": "/".join(named.get("function", [])) or None,
                              "matcher": "/".join(named.get("matcher", [])) or None})
        if steps and steps.total.get(name, 0) > steps.recorded.get(name, 0):
            partial.append(f"{name}: first {steps.recorded[name]} of {steps.total[name]}")
    result.tinygrad = sum(r.tinygrad for r in rows.values())
    result.partial = "; ".join(partial) or None
    result.ops = sorted(rows.values(), key=lambda r: (r.op is None, r.op or "")) + unmapped
    return result


def _svod_fires(conn: Connection, run_id: int) -> list[dict[str, Any]]:
    return _rows(conn, """
        SELECT kernel_index, stage_seq, label, since, unattributed, op_key, sum(count) AS count
        FROM svod_rule_fires WHERE run_id = :run
        GROUP BY kernel_index, stage_seq, label, since, unattributed, op_key ORDER BY min(seq)""", run=run_id)


def _stretches(conn: Connection, run_id: int, fires: list[dict[str, Any]], traced: bool
               ) -> dict[int | None, list[tuple[str, str | None, dict[str, int]]]]:
    """Per kernel (None: the schedule), each stage's stretch of matches in order: (label, the stage before it,
    op_key -> count); with `traced` (the log has pattern events) stages with no match too, and `codegen` for a
    kernel with generated code."""
    by_seq: dict[int | None, dict[str, int]] = {}
    codegen: dict[int, dict[str, int]] = {}
    for f in fires:
        if f["unattributed"] or f["label"] is None:
            continue
        target = codegen.setdefault(f["kernel_index"], {}) if f["label"] == "codegen" else \
            by_seq.setdefault(f["stage_seq"], {})
        target[f["op_key"]] = target.get(f["op_key"], 0) + f["count"]
    out: dict[int | None, list[tuple[str, str | None, dict[str, int]]]] = {}
    previous: dict[int | None, str] = {}
    for st in _rows(conn, "SELECT seq, kernel_index, label FROM svod_stages WHERE run_id = :run AND NOT unattributed "
                          "ORDER BY seq", run=run_id):
        since = previous.get(st["kernel_index"])
        previous[st["kernel_index"]] = st["label"]
        if st["seq"] in by_seq or (traced and since != st["label"]):
            out.setdefault(st["kernel_index"], []).append((st["label"], since, by_seq.get(st["seq"], {})))
    coded = {r["kernel_index"] for r in _rows(conn, "SELECT kernel_index FROM svod_kernels WHERE run_id = :run AND "
                                                    "code_kind IS NOT NULL", run=run_id)}
    for kernel in sorted(set(codegen) | (coded if traced else set())):
        out.setdefault(kernel, []).append(("codegen", "codegen", codegen.get(kernel, {})))
    return out


def _hint(conn: Connection, run_id: int, fires: list[dict[str, Any]]) -> str | None:
    """One line saying which RUST_LOG setting would give rule parity, after checking the log's own switches."""
    switches = [(r["target"], r["level"]) for r in _rows(
        conn, "SELECT DISTINCT target, level FROM svod_events WHERE run_id = :run", run=run_id)]
    rules = maps()["rules"]
    if not fires and not has_events(switches, rules["target"]):
        return (f"the log has no `pattern matched` events ({rules['target']} is not traced): rerun with "
                f"{rules['hint'].removeprefix('RUST_LOG=')} added to RUST_LOG")
    if fires and all(f["unattributed"] for f in fires) and not has_events(switches, "svod_schedule::optimizer"):
        return ("the log's `pattern matched` events have no pass events around them: add "
                "svod_schedule::optimizer=debug to RUST_LOG")
    return None


def rules_report(conn: Connection, case: str, *, svod_run: int | None = None, commit: str | None = None,
                 renderer: str | None = None) -> RulesReport:
    from tgstore.svod.parity import TinygradSide

    run_id = choose_svod_run(conn, case, svod_run)
    row, tg_run = tinygrad_run(conn, case, commit)
    fires = _svod_fires(conn, run_id)
    report = RulesReport(case, row, tg_run, run_id, hint=_hint(conn, run_id, fires))
    names = _rule_names(conn, tg_run)
    tg = TinygradSide(conn, tg_run, case)
    svod_kernels = svod_kernel_rows(conn, run_id)
    for f in fires:
        if f["unattributed"] or f["label"] is None:
            report.loose[f["op_key"]] = report.loose.get(f["op_key"], 0) + f["count"]
    traced = report.hint is None and bool(fires)
    stretches = _stretches(conn, run_id, fires, traced)
    order, passes_of = _order("lower")
    main = {s["pass"] for s in maps()["stages"] if s["scope"] == "lower" and s.get("pass")}
    mapped = {p for label in order for p in passes_of[label]}
    for sk, tk, _how in pair_kernels(svod_kernels, tg.kernels):
        if sk is None:
            continue
        ren = renderer_for(sk, renderer)
        kr = KernelRules(sk["kernel_index"], sk["name"], tk["position"] if tk else None,
                         tk["kernel_name"] if tk else None, ren)
        steps = TinygradSteps(conn, tg_run, case, tk["position"], ren) if tk else None
        for label, since, svod in stretches.get(sk["kernel_index"], []):
            passes = (steps.after_last(main, mapped) if steps else None) if label == "codegen" else \
                span_passes("lower", since, label)
            if svod or passes:
                kr.passes.append(compare_pass(label, since, svod, passes, steps, names))
        report.kernels.append(kr)
        if steps is not None and not steps.traced:
            report.notes.append(f"tinygrad's run {tg_run} recorded no rewrite steps for kernel {tk['position']}: "
                                "extract again with --rewrites N")
    if None in stretches:
        steps = TinygradSteps(conn, tg_run, case, None, None)
        schedule = KernelRules(None, None, None, None, None)
        for label, since, svod in stretches[None]:
            passes = span_passes("schedule", since, label)
            if svod or passes:
                schedule.passes.append(compare_pass(label, since, svod, passes, steps, names))
        report.kernels.append(schedule)
    return report


def format_rules(report: RulesReport) -> list[str]:
    lines = [f"case {report.case!r}: Svod run {report.svod_run}'s pattern matches against tinygrad "
             f"{report.commit.describe()} (run {report.tinygrad_run}), per kernel and pass. Svod's event names only "
             "the op of the node a rule rewrote (op_key), so its matches stand beside tinygrad's rules by that op"]
    if report.hint:
        lines.append(f"hint: {report.hint}")
    for kr in report.kernels:
        lines.append("")
        lines.append("schedule:" if kr.index is None else
                     f"kernel {kr.index}: svod {kr.svod_name or '-'} / tinygrad [{kr.tinygrad_position}] "
                     f"{kr.tinygrad_name or '-'} ({kr.renderer})")
        for p in kr.passes:
            if not p.svod and not p.tinygrad:
                continue
            mapped = "no tinygrad pass mapped" if not p.passes else ", ".join(p.passes)
            span = f" (since {p.since})" if p.since and p.since != "codegen" else ""
            lines.append(f"  {p.label}{span} [{mapped}]: svod {p.svod}, tinygrad {p.tinygrad}"
                         f"{f' (tinygrad recorded {p.partial})' if p.partial else ''}")
            for o in p.ops:
                keys = ", ".join(f"{k} {n}" for k, n in o.op_keys.items())
                rules = "; ".join(f"{r['function'] or '?'} {r['file']}:{r['line']} x{r['count']}" for r in o.rules)
                side = o.side if p.passes and p.recorded else "svod" if o.svod else "tinygrad"
                lines.append(f"    {o.op or '(unmapped)':<10} {side:<13} svod {o.svod:<3} tinygrad {o.tinygrad:<3}"
                             f"{f' [{keys}]' if keys else ''}{f' {rules}' if rules else ''}")
    if report.loose:
        lines.append("")
        lines.append(f"not tied to a kernel and pass: {sum(report.loose.values())} matches ("
                     + ", ".join(f"{k} {n}" for k, n in sorted(report.loose.items())) + ")")
    lines += [f"note: {n}" for n in report.notes]
    lines.append("")
    one = [f"{'schedule' if k.index is None else f'kernel {k.index}'} {p.label} {o.op} ({o.side})"
           for k in report.kernels for p in k.passes for o in p.one_sided]
    lines.append(f"result: {len(one)} ops matched on one side only: {'; '.join(one)}; exit status 1" if one else
                 "result: no op matched on one side only; exit status 0")
    return lines

