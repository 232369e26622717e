"""What changed between two tinygrad commits: unified diffs of kernel ASTs and generated sources.

Two runs are compared, one per commit, of the same suite and backend. Within a case, schedule items are matched by
position; an item present on one side only is an added or removed kernel, a case present on one side only an added
or removed case. Artifacts are content-addressed, so equal hashes are skipped without reading any text.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.graphs import structural_diff
from tgstore.compare.names import mask_names
from tgstore.compare.pyrender import canonical_pyrender
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import AnyConnection, rows, scalar
from tgstore.compare.stage_diff import stage_diffs
from tgstore.spelling.eras import spelling_hash
from tgstore.store.commit_names import CommitRow, resolve_commit

WHAT = ("source", "ast", "all")


class DiffError(Exception):
    """The commits cannot be compared as asked (no run, no common suite/backend, unknown case or renderer)."""


@dataclass(frozen=True)
class RunInfo:
    run_id: int
    suite: str
    suite_hash: str
    backend: str
    status: str


@dataclass
class KernelRef:
    case: str
    position: int
    kernel_name: str | None
    root_op: str
    node_count: int

    def label(self) -> str:
        return f"{self.case}[{self.position}] {self.kernel_name or self.root_op}"


@dataclass
class TextDiff:
    case: str
    position: int
    kind: str  # "ast" or "source"
    renderer: str | None
    title: str  # one line saying what changed
    lines: list[str]  # the unified diff, without line ends


@dataclass
class CommitDiff:
    a: CommitRow
    b: CommitRow
    run_a: RunInfo
    run_b: RunInfo
    what: str
    compared_cases: list[str] = field(default_factory=list)
    added_cases: list[str] = field(default_factory=list)
    removed_cases: list[str] = field(default_factory=list)
    status_changes: list[tuple[str, str, str]] = field(default_factory=list)  # case, status at a, status at b
    added_kernels: list[KernelRef] = field(default_factory=list)
    removed_kernels: list[KernelRef] = field(default_factory=list)
    diffs: list[TextDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped_renderers: dict[str, str] = field(default_factory=dict)  # renderer -> why (unavailable at a or b)
    ignore_names: bool = False
    stage_diffs: list = field(default_factory=list)  # tgstore.compare.stage_diff.StageDiff, with --stages
    ignore_spelling: bool = False  # ASTs and pass graphs compared in one spelling across tinygrad eras
    spelling_only: list[tuple[str, int]] = field(default_factory=list)  # kernels whose AST differs in spelling only

    @property
    def changed_cases(self) -> list[str]:
        changed = {d.case for d in self.diffs} | {k.case for k in self.added_kernels + self.removed_kernels}
        changed |= {case for case, _a, _b in self.status_changes}
        changed |= {d.case for d in self.stage_diffs}
        return sorted(changed)

    @property
    def changed_kernels(self) -> list[tuple[str, int]]:
        return sorted({(d.case, d.position) for d in self.diffs} | {(d.case, d.position) for d in self.stage_diffs
                                                                  if d.position >= 0})

    @property
    def changed_renderers(self) -> dict[str, int]:
        """renderer -> how many kernels' sources it changed."""
        counts: dict[str, int] = {}
        for d in self.diffs:
            if d.kind == "source" and d.renderer:
                counts[d.renderer] = counts.get(d.renderer, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def has_changes(self) -> bool:
        return bool(self.added_cases or self.removed_cases or self.changed_cases)


def _rows(conn: AnyConnection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return rows(conn, sql, **params)


def _runs_of(conn: AnyConnection, commit: CommitRow) -> list[RunInfo]:
    return [RunInfo(r["id"], r["name"], r["hash"], r["backend"], r["status"]) for r in _rows(
        conn, "SELECT r.id, s.name, s.hash, r.backend, r.status FROM runs r JOIN suites s ON s.id = r.suite_id "
              "WHERE r.commit_id = :commit ORDER BY r.id", commit=commit.id)]


def _describe_runs(runs: list[RunInfo]) -> str:
    return ", ".join(f"run {r.run_id} ({r.suite}/{r.backend}, {r.status})" for r in runs) or "none"


def choose_runs(conn: AnyConnection, a: CommitRow, b: CommitRow, *, suite: str | None = None,
                backend: str | None = None) -> tuple[RunInfo, RunInfo, list[str]]:
    """The pair of runs to compare: same suite and backend; the most recently ingested pair when several match."""
    notes = []
    runs = {}
    for side, commit in (("a", a), ("b", b)):
        found = _runs_of(conn, commit)
        if not found:
            raise DiffError(f"commit {commit.describe()} has no run; ingest it first (`tgstore ingest`)")
        selected = [r for r in found if (suite is None or suite in (r.suite, r.suite_hash)
                                         or (len(suite) >= 6 and r.suite_hash.startswith(suite)))
                    and (backend is None or r.backend.upper() == backend.upper())]
        if not selected:
            raise DiffError(f"commit {commit.describe()} has no run with"
                            f"{f' suite {suite!r}' if suite else ''}{f' backend {backend!r}' if backend else ''}; "
                            f"its runs: {_describe_runs(found)}")
        runs[side] = selected
    pairs = [(ra, rb) for ra in runs["a"] for rb in runs["b"]
             if ra.suite_hash == rb.suite_hash and ra.backend == rb.backend]
    if not pairs:
        raise DiffError(f"no runs of the two commits share a suite and backend: {a.short} has "
                        f"{_describe_runs(runs['a'])}; {b.short} has {_describe_runs(runs['b'])}")
    pairs.sort(key=lambda pair: max(pair[0].run_id, pair[1].run_id))
    ra, rb = pairs[-1]
    if len(pairs) > 1:
        others = ", ".join(f"{x.suite}/{x.backend}" for x, _ in pairs[:-1])
        notes.append(f"comparing suite {ra.suite!r} on {ra.backend}, the most recent of several; also possible: "
                     f"{others} (choose with --suite / --backend)")
    return ra, rb, notes


def _cases(conn: AnyConnection, run_id: int) -> dict[str, str]:
    return {r["case"]: r["status"] for r in _rows(conn, 'SELECT "case", status FROM v_run_cases WHERE run_id = :run',
                                                  run=run_id)}


def _items(conn: AnyConnection, run_id: int, case: str | None) -> dict[tuple[str, int], dict[str, Any]]:
    rows = _rows(conn, 'SELECT "case", position, kernel_id, kernel_hash, kernel_name, root_op, node_count '
                       'FROM v_kernels WHERE run_id = :run AND (:case IS NULL OR "case" = :case)',
                 run=run_id, case=case)
    return {(r["case"], r["position"]): r for r in rows}


def _programs(conn: AnyConnection, run_id: int, case: str | None) -> dict[tuple[str, int], dict[str, dict[str, Any]]]:
    rows = _rows(conn, 'SELECT "case", position, renderer, kernel_name, source_hash, error FROM v_sources '
                       'WHERE run_id = :run AND (:case IS NULL OR "case" = :case)', run=run_id, case=case)
    programs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        programs.setdefault((r["case"], r["position"]), {})[r["renderer"]] = r
    return programs


def _kernel_texts(conn: AnyConnection, kernel_id: int) -> tuple[str | None, str | None]:
    row = rows(conn, "SELECT pr.text AS pyrender, at.text AS ast FROM kernels k LEFT JOIN blobs pr "
                     "ON pr.id = k.pyrender_blob_id LEFT JOIN blobs at ON at.id = k.ast_text_blob_id WHERE k.id = :id",
               id=kernel_id)[0]
    return row["pyrender"], row["ast"]


def _blob_text(conn: AnyConnection, hash_: str | None) -> str | None:
    if hash_ is None:
        return None
    return scalar(conn, "SELECT text FROM blobs WHERE hash = :hash", hash=hash_)


def _unified(old: str, new: str, from_label: str, to_label: str, context: int) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), from_label, to_label, n=context,
                                     lineterm=""))


UNAVAILABLE = "renderer unavailable:"


def diff_commits(conn: AnyConnection, ref_a: str, ref_b: str, *, case: str | None = None, renderer: str | None = None,
                 what: str = "all", suite: str | None = None, backend: str | None = None,
                 context: int = 3, ignore_names: bool = False, stages: bool = False,
                 schedule_stages: bool = False, ignore_spelling: bool = False) -> CommitDiff:
    """Compare the runs of commits `ref_a` and `ref_b` (anything `resolve_commit` accepts). A renderer that could not
    be built at either commit is skipped (listed in `skipped_renderers`); with `ignore_names`, sources and ASTs are
    compared with the kernels' names masked. `stages`: each kernel's first differing codegen pass;
    `schedule_stages` also the case's scheduler passes (`tgstore diff --stages`). With `ignore_spelling`, kernel
    ASTs and pass graphs are compared (and their diffs printed) in one spelling across tinygrad eras
    (tgstore/spelling/eras.py): a kernel whose AST differs in spelling only is listed in `spelling_only`, not
    diffed; generated sources are compared as they are (they are the output)."""
    if what not in WHAT:
        raise DiffError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    a, b = resolve_commit(conn, ref_a), resolve_commit(conn, ref_b)
    run_a, run_b, notes = choose_runs(conn, a, b, suite=suite, backend=backend)
    result = CommitDiff(a=a, b=b, run_a=run_a, run_b=run_b, what=what, notes=notes, ignore_names=ignore_names,
                        ignore_spelling=ignore_spelling)
    if stages:
        result.stage_diffs = stage_diffs(conn, run_a.run_id, run_b.run_id, a.short, b.short, case=case,
                                         renderer=renderer, context=context, schedule=schedule_stages,
                                         ignore_spelling=ignore_spelling)
    sides = _Sides(conn, result, case, renderer, context)
    sides.match_cases()
    sides.skip_unavailable_renderers()
    for name in result.compared_cases:
        sides.compare_case(name)
    return result


class _Sides:
    """Both runs' cases, schedule items and programs (narrowed to one case and renderer if asked), compared into
    `result` step by step."""

    def __init__(self, conn: AnyConnection, result: CommitDiff, case: str | None, renderer: str | None,
                 context: int) -> None:
        self.conn, self.result, self.renderer, self.context = conn, result, renderer, context
        run_a, run_b = result.run_a.run_id, result.run_b.run_id
        self.cases_a, self.cases_b = _cases(conn, run_a), _cases(conn, run_b)
        if case is not None:
            if case not in self.cases_a and case not in self.cases_b:
                known = ", ".join(sorted(set(self.cases_a) | set(self.cases_b)))
                raise DiffError(f"neither run has a case {case!r}; cases: {known}")
            self.cases_a = {k: v for k, v in self.cases_a.items() if k == case}
            self.cases_b = {k: v for k, v in self.cases_b.items() if k == case}
        self.items_a, self.items_b = _items(conn, run_a, case), _items(conn, run_b, case)
        self.programs_a, self.programs_b = _programs(conn, run_a, case), _programs(conn, run_b, case)
        if renderer is not None:
            known = {r for progs in (*self.programs_a.values(), *self.programs_b.values()) for r in progs}
            if renderer not in known:
                listed = ", ".join(sorted(known)) or "none"
                raise DiffError(f"neither run has renderer {renderer!r}; renderers: {listed}")
        self.label_a, self.label_b = result.a.short, result.b.short

    def match_cases(self) -> None:
        a, b = set(self.cases_a), set(self.cases_b)
        self.result.added_cases, self.result.removed_cases = sorted(b - a), sorted(a - b)
        self.result.compared_cases = sorted(a & b)

    def skip_unavailable_renderers(self) -> None:
        """A renderer that could not be built on either side is listed with why, not diffed."""
        skipped = self.result.skipped_renderers
        for side, label, progs in (("a", self.label_a, self.programs_a), ("b", self.label_b, self.programs_b)):
            for per_item in progs.values():
                for rend, prog in per_item.items():
                    if (prog["error"] or "").startswith(UNAVAILABLE) and rend not in skipped:
                        reason = prog["error"][len(UNAVAILABLE):].strip().splitlines()[0][:160]
                        skipped[rend] = f"unavailable at {side} ({label}): {reason}"

    def compare_case(self, name: str) -> None:
        """The case's status, then its schedule items position by position: added or removed kernels, changed
        ASTs and sources."""
        if self.cases_a[name] != self.cases_b[name]:
            self.result.status_changes.append((name, self.cases_a[name], self.cases_b[name]))
        positions = sorted({p for c, p in self.items_a if c == name} | {p for c, p in self.items_b if c == name})
        for position in positions:
            ia, ib = self.items_a.get((name, position)), self.items_b.get((name, position))
            if ia is None or ib is None:
                item = ia or ib
                assert item is not None
                ref = KernelRef(name, position, item["kernel_name"], item["root_op"], item["node_count"])
                (self.result.removed_kernels if ib is None else self.result.added_kernels).append(ref)
                continue
            if self.result.what in ("ast", "all") and ia["kernel_hash"] != ib["kernel_hash"]:
                self.diff_ast(name, position, ia, ib)
            if self.result.what in ("source", "all"):
                self.diff_sources(name, position)

    def diff_ast(self, name: str, position: int, ia: dict[str, Any], ib: dict[str, Any]) -> None:
        where = f"{name}[{position}]"
        if self.result.ignore_spelling:
            self.diff_spelled_ast(name, position, ia, ib)
            return
        texts_a, texts_b = _kernel_texts(self.conn, ia["kernel_id"]), _kernel_texts(self.conn, ib["kernel_id"])
        if self.result.ignore_names:
            texts_a = tuple(mask_names(t, ia["kernel_name"]) for t in texts_a)
            texts_b = tuple(mask_names(t, ib["kernel_name"]) for t in texts_b)
        # pyrender reads best; the AST text where pyrender is missing or the same on both sides
        # (pyrender with its variables renumbered canonically: only real changes show)
        pyrender_a, pyrender_b = (canonical_pyrender(t) if t else t for t in (texts_a[0], texts_b[0]))
        kind, old, new = next(((k, x or "", y or "") for k, x, y in
                               (("pyrender", pyrender_a, pyrender_b), ("ast", texts_a[1], texts_b[1]))
                               if x and y and x != y), ("ast", texts_a[1] or "", texts_b[1] or ""))
        if self.result.ignore_names and old == new:
            return
        names = ia["kernel_name"] if ia["kernel_name"] == ib["kernel_name"] else \
            f"{ia['kernel_name']} -> {ib['kernel_name']}"
        title = f"{where} {names or ia['root_op']}: AST changed ({ia['node_count']} -> {ib['node_count']} nodes)"
        lines = _unified(old, new, f"{self.label_a} {where} {kind}", f"{self.label_b} {where} {kind}", self.context)
        self.result.diffs.append(TextDiff(name, position, "ast", None, title, lines))

    def diff_spelled_ast(self, name: str, position: int, ia: dict[str, Any], ib: dict[str, Any]) -> None:
        """The two ASTs in one spelling across eras: nothing when equal there, else their structural diff."""
        speller = Speller(self.conn, True)
        old, new = speller.ast(ia["kernel_hash"]) or [], speller.ast(ib["kernel_hash"]) or []
        if self.result.ignore_names:  # the kernels' names masked where the AST writes them (KernelInfo)
            old = [[op, dtype, mask_names(str(arg), ia["kernel_name"]), src] for op, dtype, arg, src in old]
            new = [[op, dtype, mask_names(str(arg), ib["kernel_name"]), src] for op, dtype, arg, src in new]
            same = spelling_hash(old) == spelling_hash(new)
        else:
            same = speller.ast_key(ia["kernel_hash"]) == speller.ast_key(ib["kernel_hash"])
        if same:
            self.result.spelling_only.append((name, position))
            return
        where = f"{name}[{position}]"
        names = ia["kernel_name"] if ia["kernel_name"] == ib["kernel_name"] else \
            f"{ia['kernel_name']} -> {ib['kernel_name']}"
        title = (f"{where} {names or ia['root_op']}: AST changed ({ia['node_count']} -> {ib['node_count']} nodes; "
                 "compared in one spelling across eras)")
        lines = structural_diff(old, new, f"{self.label_a} {where} ast (one spelling)",
                                f"{self.label_b} {where} ast (one spelling)", self.context)
        self.result.diffs.append(TextDiff(name, position, "ast", None, title, lines))

    def diff_sources(self, name: str, position: int) -> None:
        where = f"{name}[{position}]"
        progs_a, progs_b = self.programs_a.get((name, position), {}), self.programs_b.get((name, position), {})
        for rend in sorted(set(progs_a) | set(progs_b)):
            if (self.renderer is not None and rend != self.renderer) or rend in self.result.skipped_renderers:
                continue
            pa, pb = progs_a.get(rend), progs_b.get(rend)
            if pa is None or pb is None:
                side = self.label_a if pb is None else self.label_b
                self.result.notes.append(f"{where}: renderer {rend} only at {side}")
                continue
            if pa["source_hash"] == pb["source_hash"] and pa["error"] == pb["error"]:
                continue
            old = _blob_text(self.conn, pa["source_hash"]) or f"/* no source: {pa['error'] or '?'} */"
            new = _blob_text(self.conn, pb["source_hash"]) or f"/* no source: {pb['error'] or '?'} */"
            if self.result.ignore_names:
                old, new = mask_names(old, pa["kernel_name"]), mask_names(new, pb["kernel_name"])
                if old == new:
                    continue
            title = f"{where} {pb['kernel_name'] or pa['kernel_name'] or ''}: {rend} source changed".replace("  ", " ")
            lines = _unified(old, new, f"{self.label_a} {where} {rend}", f"{self.label_b} {where} {rend}",
                             self.context)
            self.result.diffs.append(TextDiff(name, position, "source", rend, title, lines))


def summary_line(diff: CommitDiff) -> str:
    unchanged = len(diff.compared_cases) - len(diff.changed_cases)
    renderers = ", ".join(f"{r} ({n})" for r, n in diff.changed_renderers.items()) or "none"
    compared = len(diff.compared_cases)
    return (f"{compared} case{'' if compared == 1 else 's'} compared: {len(diff.changed_cases)} changed, "
            f"{unchanged} unchanged; {len(diff.added_cases)} added, {len(diff.removed_cases)} removed; kernels: "
            f"{len(diff.changed_kernels)} changed, {len(diff.added_kernels)} added, {len(diff.removed_kernels)} "
            f"removed; sources changed by renderer: {renderers}"
            + ("; kernel names ignored" if diff.ignore_names else "")
            + (f"; spelling ignored ({len(diff.spelling_only)} kernel AST{'' if len(diff.spelling_only) == 1 else 's'}"
               " differ in spelling only)" if diff.ignore_spelling else ""))


def format_diff(diff: CommitDiff) -> list[tuple[str, str]]:
    """The report as (style, line) pairs, summary first: style is "" or one of header, add, remove, hunk, note."""
    out: list[tuple[str, str]] = [
        ("header", f"a: {diff.a.describe()}  (run {diff.run_a.run_id}, {diff.run_a.status})"),
        ("header", f"b: {diff.b.describe()}  (run {diff.run_b.run_id}, {diff.run_b.status})"),
        ("header", f"suite {diff.run_a.suite!r}, backend {diff.run_a.backend}, comparing {diff.what}"),
        ("header", summary_line(diff)),
    ]
    out += [("note", f"skipped renderer {r}: {why}") for r, why in diff.skipped_renderers.items()]
    out += [("note", f"note: {n}") for n in diff.notes]
    if diff.added_cases:
        out.append(("add", f"added cases: {', '.join(diff.added_cases)}"))
    if diff.removed_cases:
        out.append(("remove", f"removed cases: {', '.join(diff.removed_cases)}"))
    for case, status_a, status_b in diff.status_changes:
        out.append(("note", f"{case}: status {status_a} -> {status_b}"))
    for ref in diff.removed_kernels:
        out.append(("remove", f"removed kernel {ref.label()} ({ref.node_count} nodes)"))
    for ref in diff.added_kernels:
        out.append(("add", f"added kernel {ref.label()} ({ref.node_count} nodes)"))
    for stage in diff.stage_diffs:
        out.append(("", ""))
        out.append(("header", f"== {stage.title}"))
        out += [(_line_style(line), line) for line in stage.lines]
    for item in diff.diffs:
        out.append(("", ""))
        out.append(("header", f"== {item.title}"))
        out += [(_line_style(line), line) for line in item.lines]
    return out


def _line_style(line: str) -> str:
    if line.startswith(("---", "+++")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "remove"
    return ""


def diff_to_json(diff: CommitDiff) -> dict[str, Any]:
    """The diff for scripts: `tgstore diff --json`."""

    def commit(c: CommitRow, run: RunInfo) -> dict[str, Any]:
        return {"sha": c.sha, "version": c.version, "committed_at": c.committed_at, "subject": c.subject,
                "run_id": run.run_id, "status": run.status}

    def kernel(k: KernelRef) -> dict[str, Any]:
        return {"case": k.case, "position": k.position, "kernel_name": k.kernel_name, "root_op": k.root_op,
                "node_count": k.node_count}

    return {
        "a": commit(diff.a, diff.run_a), "b": commit(diff.b, diff.run_b), "suite": diff.run_a.suite,
        "backend": diff.run_a.backend, "what": diff.what, "ignore_names": diff.ignore_names,
        "ignore_spelling": diff.ignore_spelling,
        "spelling_only": [{"case": c, "position": p} for c, p in diff.spelling_only], "changed": diff.has_changes,
        "summary": {"cases_compared": len(diff.compared_cases), "cases_changed": diff.changed_cases,
                    "cases_added": diff.added_cases, "cases_removed": diff.removed_cases,
                    "kernels_changed": [{"case": c, "position": p} for c, p in diff.changed_kernels],
                    "renderers_changed": diff.changed_renderers},
        "skipped_renderers": diff.skipped_renderers,
        "status_changes": [{"case": c, "a": x, "b": y} for c, x, y in diff.status_changes],
        "added_kernels": [kernel(k) for k in diff.added_kernels],
        "removed_kernels": [kernel(k) for k in diff.removed_kernels],
        "diffs": [{"case": d.case, "position": d.position, "kind": d.kind, "renderer": d.renderer, "title": d.title,
                   "diff": "\n".join(d.lines)} for d in diff.diffs],
        "stages": [s.to_json() for s in diff.stage_diffs],
        "notes": diff.notes,
    }


def render_text(diff: CommitDiff) -> str:
    return "\n".join(line for _style, line in format_diff(diff)) + "\n"
