"""What changed between two tinygrad commits: unified diffs of kernel ASTs and generated sources.

Two runs are compared, one per commit, of the same suite and backend. Within a case, schedule items are matched by
position; an item present on one side only is an added or removed kernel, a case present on one side only an added
or removed case. Artifacts are content-addressed, so equal hashes are skipped without reading any text.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tgstore.refs import CommitRow, resolve_commit

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

    @property
    def changed_cases(self) -> list[str]:
        changed = {d.case for d in self.diffs} | {k.case for k in self.added_kernels + self.removed_kernels}
        changed |= {case for case, _a, _b in self.status_changes}
        return sorted(changed)

    @property
    def has_changes(self) -> bool:
        return bool(self.added_cases or self.removed_cases or self.changed_cases)


def _rows(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(text(sql), params)]


def _runs_of(conn: Connection, commit: CommitRow) -> list[RunInfo]:
    return [RunInfo(r["id"], r["name"], r["hash"], r["backend"], r["status"]) for r in _rows(
        conn, "SELECT r.id, s.name, s.hash, r.backend, r.status FROM runs r JOIN suites s ON s.id = r.suite_id "
              "WHERE r.commit_id = :commit ORDER BY r.id", commit=commit.id)]


def _describe_runs(runs: list[RunInfo]) -> str:
    return ", ".join(f"run {r.run_id} ({r.suite}/{r.backend}, {r.status})" for r in runs) or "none"


def choose_runs(conn: Connection, a: CommitRow, b: CommitRow, *, suite: str | None = None,
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


def _cases(conn: Connection, run_id: int) -> dict[str, str]:
    return {r["case"]: r["status"] for r in _rows(conn, 'SELECT "case", status FROM v_run_cases WHERE run_id = :run',
                                                  run=run_id)}


def _items(conn: Connection, run_id: int, case: str | None) -> dict[tuple[str, int], dict[str, Any]]:
    rows = _rows(conn, 'SELECT "case", position, kernel_id, kernel_hash, kernel_name, root_op, node_count '
                       'FROM v_kernels WHERE run_id = :run AND (:case IS NULL OR "case" = :case)',
                 run=run_id, case=case)
    return {(r["case"], r["position"]): r for r in rows}


def _programs(conn: Connection, run_id: int, case: str | None) -> dict[tuple[str, int], dict[str, dict[str, Any]]]:
    rows = _rows(conn, 'SELECT "case", position, renderer, kernel_name, source_hash, error FROM v_sources '
                       'WHERE run_id = :run AND (:case IS NULL OR "case" = :case)', run=run_id, case=case)
    programs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        programs.setdefault((r["case"], r["position"]), {})[r["renderer"]] = r
    return programs


def _kernel_texts(conn: Connection, kernel_id: int) -> tuple[str | None, str | None]:
    row = conn.execute(text("SELECT pr.text, at.text FROM kernels k LEFT JOIN blobs pr ON pr.id = k.pyrender_blob_id "
                            "LEFT JOIN blobs at ON at.id = k.ast_text_blob_id WHERE k.id = :id"),
                       {"id": kernel_id}).one()
    return row[0], row[1]


def _blob_text(conn: Connection, hash_: str | None) -> str | None:
    if hash_ is None:
        return None
    return conn.execute(text("SELECT text FROM blobs WHERE hash = :hash"), {"hash": hash_}).scalar()


def _unified(old: str, new: str, from_label: str, to_label: str, context: int) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), from_label, to_label, n=context,
                                     lineterm=""))


def diff_commits(conn: Connection, ref_a: str, ref_b: str, *, case: str | None = None, renderer: str | None = None,
                 what: str = "all", suite: str | None = None, backend: str | None = None,
                 context: int = 3) -> CommitDiff:
    """Compare the runs of commits `ref_a` and `ref_b` (anything `resolve_commit` accepts)."""
    if what not in WHAT:
        raise DiffError(f"--what must be one of {', '.join(WHAT)}, not {what!r}")
    a, b = resolve_commit(conn, ref_a), resolve_commit(conn, ref_b)
    run_a, run_b, notes = choose_runs(conn, a, b, suite=suite, backend=backend)
    result = CommitDiff(a=a, b=b, run_a=run_a, run_b=run_b, what=what, notes=notes)
    cases_a, cases_b = _cases(conn, run_a.run_id), _cases(conn, run_b.run_id)
    if case is not None:
        if case not in cases_a and case not in cases_b:
            raise DiffError(f"neither run has a case {case!r}; cases: {', '.join(sorted(set(cases_a) | set(cases_b)))}")
        cases_a = {k: v for k, v in cases_a.items() if k == case}
        cases_b = {k: v for k, v in cases_b.items() if k == case}
    result.added_cases = sorted(set(cases_b) - set(cases_a))
    result.removed_cases = sorted(set(cases_a) - set(cases_b))
    result.compared_cases = sorted(set(cases_a) & set(cases_b))
    items_a, items_b = _items(conn, run_a.run_id, case), _items(conn, run_b.run_id, case)
    programs_a, programs_b = _programs(conn, run_a.run_id, case), _programs(conn, run_b.run_id, case)
    if renderer is not None:
        known = {r for progs in (*programs_a.values(), *programs_b.values()) for r in progs}
        if renderer not in known:
            raise DiffError(f"neither run has renderer {renderer!r}; renderers: {', '.join(sorted(known)) or 'none'}")
    label_a, label_b = a.short, b.short
    for name in result.compared_cases:
        if cases_a[name] != cases_b[name]:
            result.status_changes.append((name, cases_a[name], cases_b[name]))
        positions = sorted({p for c, p in items_a if c == name} | {p for c, p in items_b if c == name})
        for position in positions:
            ia, ib = items_a.get((name, position)), items_b.get((name, position))
            if ia is None or ib is None:
                item = ia or ib
                assert item is not None
                ref = KernelRef(name, position, item["kernel_name"], item["root_op"], item["node_count"])
                (result.removed_kernels if ib is None else result.added_kernels).append(ref)
                continue
            where = f"{name}[{position}]"
            if what in ("ast", "all") and ia["kernel_hash"] != ib["kernel_hash"]:
                pyrender_a, ast_a = _kernel_texts(conn, ia["kernel_id"])
                pyrender_b, ast_b = _kernel_texts(conn, ib["kernel_id"])
                kind, old, new = ("pyrender", pyrender_a, pyrender_b) if pyrender_a and pyrender_b else \
                    ("ast", ast_a or pyrender_a or "", ast_b or pyrender_b or "")
                names = ia["kernel_name"] if ia["kernel_name"] == ib["kernel_name"] else \
                    f"{ia['kernel_name']} -> {ib['kernel_name']}"
                title = (f"{where} {names or ia['root_op']}: AST changed "
                         f"({ia['node_count']} -> {ib['node_count']} nodes)")
                lines = _unified(old, new, f"{label_a} {where} {kind}", f"{label_b} {where} {kind}", context)
                result.diffs.append(TextDiff(name, position, "ast", None, title, lines))
            if what in ("source", "all"):
                progs_a, progs_b = programs_a.get((name, position), {}), programs_b.get((name, position), {})
                for rend in sorted(set(progs_a) | set(progs_b)):
                    if renderer is not None and rend != renderer:
                        continue
                    pa, pb = progs_a.get(rend), progs_b.get(rend)
                    if pa is None or pb is None:
                        side = label_a if pb is None else label_b
                        result.notes.append(f"{where}: renderer {rend} only at {side}")
                        continue
                    if pa["source_hash"] == pb["source_hash"] and pa["error"] == pb["error"]:
                        continue
                    old = _blob_text(conn, pa["source_hash"]) or f"/* no source: {pa['error'] or '?'} */"
                    new = _blob_text(conn, pb["source_hash"]) or f"/* no source: {pb['error'] or '?'} */"
                    title = f"{where} {pb['kernel_name'] or pa['kernel_name'] or ''}: {rend} source changed".replace(
                        "  ", " ")
                    lines = _unified(old, new, f"{label_a} {where} {rend}", f"{label_b} {where} {rend}", context)
                    result.diffs.append(TextDiff(name, position, "source", rend, title, lines))
    return result


def format_diff(diff: CommitDiff) -> list[tuple[str, str]]:
    """The report as (style, line) pairs: style is "" or one of header, add, remove, hunk, note."""
    out: list[tuple[str, str]] = [
        ("header", f"a: {diff.a.describe()}  (run {diff.run_a.run_id}, {diff.run_a.status})"),
        ("header", f"b: {diff.b.describe()}  (run {diff.run_b.run_id}, {diff.run_b.status})"),
        ("header", f"suite {diff.run_a.suite!r}, backend {diff.run_a.backend}, comparing {diff.what}"),
    ]
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
    for item in diff.diffs:
        out.append(("", ""))
        out.append(("header", f"== {item.title}"))
        for line in item.lines:
            if line.startswith(("---", "+++")):
                style = "header"
            elif line.startswith("@@"):
                style = "hunk"
            elif line.startswith("+"):
                style = "add"
            elif line.startswith("-"):
                style = "remove"
            else:
                style = ""
            out.append((style, line))
    unchanged = len(diff.compared_cases) - len(diff.changed_cases)
    out.append(("", ""))
    out.append(("header", f"{len(diff.compared_cases)} cases compared: {len(diff.changed_cases)} changed, "
                          f"{unchanged} unchanged; {len(diff.added_cases)} added, {len(diff.removed_cases)} removed; "
                          f"{sum(d.kind == 'ast' for d in diff.diffs)} AST diffs, "
                          f"{sum(d.kind == 'source' for d in diff.diffs)} source diffs"))
    return out


def render_text(diff: CommitDiff) -> str:
    return "\n".join(line for _style, line in format_diff(diff)) + "\n"
