"""The pass-by-pass diff (/-/passdiff?case=&kernel=&a=&b=&renderer=[&row=][&spelling=raw]), as Compiler Explorer's
opt-pipeline view: one kernel's passes at two commits aligned by name and occurrence (tgstore.compare.pass_align),
node counts side by side; the first pass present at both commits whose output differs (in one spelling across
tinygrad eras unless `spelling=raw`) marked, passes only one commit ran listed apart; the selected row's output as a
text diff between the two commits, and each row opening both commits' graphs side by side. The kernel at a is the
one matched with b's by AST or name (tgstore.compare.kernel_match). Without a or b: b is the newest commit holding
the case, a the one before it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.answers.blame import why_changed
from tgstore.compare.graphs import structural_diff
from tgstore.compare.kernel_match import counterpart
from tgstore.compare.pass_align import AlignedPass, added, align, counts, first_difference, removed
from tgstore.compare.spelled import Speller
from tgstore.git import GitError, open_repo
from tgstore.web import urls
from tgstore.web.base import ignore_spelling, int_arg, not_found, read, render, str_arg
from tgstore.web.charts import passes_overlaid
from tgstore.web.sidebyside import bounded_table
from tgstore.web.workbench import Where, WorkbenchError, case_commits, commit_run, load

QUIET_KINDS = ("same", "spelling")  # rows hidden unless asked for (&all=1): nothing to look at there


def read_sides(conn: sqlite3.Connection, case: str, kernel: int | None, a: str | None, b: str | None,
               renderer: str | None, spelling: bool) -> dict[str, Any]:
    commits = case_commits(conn, case)
    if not commits:
        raise WorkbenchError(f"no run holds case {case!r}")
    if not b:
        b = commits[-1][1] or commits[-1][0]
    side_b = load(conn, Where(case, kernel, b, renderer), details=False)
    if not a:
        if side_b.older is None:
            raise WorkbenchError(f"{case!r} is stored at one commit only: nothing to compare with")
        a = side_b.older.label
    commit_a, run_a = commit_run(conn, Where(case, None, a), commits)
    match = counterpart(conn, case, side_b.run_id, side_b.where.kernel, run_a)
    if match is None:
        raise WorkbenchError(f"kernel {side_b.where.kernel} ({side_b.kernel_name}) of {case!r} at "
                             f"{side_b.commit_label} has no counterpart at {commit_a.version or commit_a.short} (no "
                             "kernel there has its AST or its name): nothing to compare it with")
    try:
        side_a = load(conn, Where(case, match.position, a, side_b.renderer), details=False)
    except WorkbenchError:  # a renderer a lacks: its first
        side_a = load(conn, Where(case, match.position, a, None), details=False)
    speller = Speller(conn, spelling)
    aligned = align(side_a.passes, side_b.passes, speller.graph_key if spelling else None)
    return {"side_a": side_a, "side_b": side_b, "aligned": aligned, "first": first_difference(aligned),
            "matched_by": match.how,
            "renderers": [r for r in side_b.renderers if r in side_a.renderers]}


def row_diff(speller: Speller, aligned: list[AlignedPass], index: int, label_a: str, label_b: str) -> list[str]:
    """The row's output at a against its output at b, printed as trees (ids ignored; in one spelling across eras
    when spelling is ignored). A pass only one side ran is compared with the other side's nearest earlier output."""
    row = aligned[index]
    earlier = list(reversed(aligned[:index]))
    pa = row.a or next((p.a for p in earlier if p.a), None)
    pb = row.b or next((p.b for p in earlier if p.b), None)
    ga, gb = speller.graph(pa.graph_hash if pa else None), speller.graph(pb.graph_hash if pb else None)
    name_a = f"#{pa.position} {pa.name}" if pa else "(nothing)"
    name_b = f"#{pb.position} {pb.name}" if pb else "(nothing)"
    return structural_diff(ga or [], gb or [], f"{label_a} {name_a}", f"{label_b} {name_b}")


def pages_repo() -> Path | None:
    """The tinygrad repository the pages read diffs from, as sweeps find it (TGSTORE_REPO, else
    submodules/tinygrad); None where there is none (the rules are shown without hunks)."""
    try:
        return open_repo(Path(os.environ.get("TGSTORE_REPO") or "submodules/tinygrad"))
    except GitError:
        return None


def row_rules(conn: sqlite3.Connection, case: str, kernel: int, aligned: list[AlignedPass], row: int, sha_a: str,
              sha_b: str, renderer: str, spelling: bool) -> dict[str, Any] | None:
    """The selected row's rule attribution (answers/blame.why_changed), None for a row that did not change."""
    r = aligned[row]
    if r.kind not in ("changed", "added", "removed"):
        return None
    occurrence = sum(1 for p in aligned[:row + 1] if p.name == r.name)
    try:
        return why_changed(conn, case, kernel, r.name, sha_a, sha_b, renderer, pages_repo(),
                           "ignore" if spelling else "raw", occurrence).to_json()
    except LookupError as exc:
        return {"rules": [], "files_read": [], "changed_files": [], "notes": [str(exc)]}


def row_json(row: AlignedPass) -> dict[str, Any]:
    def side(p: Any) -> dict[str, Any] | None:
        return None if p is None else {"position": p.position, "name": p.name, "node_count": p.node_count,
                                       "graph_hash": p.graph_hash}
    return {"kind": row.kind, "a": side(row.a), "b": side(row.b)}


async def passdiff(datasette: Any, request: Any) -> Response:
    case = str_arg(request, "case")
    if not case:
        return await not_found(datasette, request, "the pass-by-pass diff needs a case (and kernel, a, b): follow a "
                               "link from a kernel's workbench or a diff")
    kernel = int_arg(request, "kernel")  # None: the case's first lowered kernel
    a, b, renderer = str_arg(request, "a"), str_arg(request, "b"), str_arg(request, "renderer")
    spelling = ignore_spelling(request)
    try:
        found = await read(datasette, lambda conn: read_sides(conn, case, kernel, a, b, renderer, spelling))
    except WorkbenchError as exc:
        return await not_found(datasette, request, str(exc))
    side_a, side_b = found["side_a"], found["side_b"]
    kernel = side_b.where.kernel
    label_a, label_b = side_a.commit_label, side_b.commit_label
    aligned: list[AlignedPass] = found["aligned"]
    first = found["first"]
    raw = None if spelling else "raw"
    row = int_arg(request, "row")
    wanted = str_arg(request, "pass")
    if wanted is not None:  # a pass by name (the workbench's history strip links so): its k-th occurrence
        numbered = [i for i, r in enumerate(aligned) if r.name == wanted]
        k = (int_arg(request, "occurrence") or 1) - 1
        row = numbered[k] if 0 <= k < len(numbered) else None
    if row is None or not 0 <= row < len(aligned):
        row = aligned.index(first) if first is not None else None
    rules = await read(datasette, lambda conn: row_rules(conn, case, kernel, aligned, row, side_a.commit.sha,
                                                         side_b.commit.sha, side_b.renderer, spelling)) \
        if row is not None else None
    lines = await read(datasette, lambda conn: row_diff(Speller(conn, spelling), aligned, row, label_a, label_b)) \
        if row is not None else []

    def here(**change: Any) -> str:
        params = {"case": case, "kernel": kernel, "a": label_a, "b": label_b, "renderer": side_b.renderer,
                  "spelling": raw, "all": 1 if show_all else None, **change}
        return datasette.urls.path(urls.passdiff(**params))

    def sides_url(r: AlignedPass) -> str | None:
        if r.a is None or r.b is None or not r.a.graph_hash or not r.b.graph_hash:
            return None
        return datasette.urls.path(urls.graph(r.b.graph_hash, vs=r.a.graph_hash, spelling=raw, side_by_side=True,
                                              title=f"{case}[{kernel}] {side_b.renderer} after {r.name!r}: "
                                                    f"{label_a} → {label_b}"))

    chart = passes_overlaid(f"Nodes after each pass: {case}[{kernel}] {side_b.renderer}",
                            [p.name for p in aligned], {
                                label_a: [p.a.node_count if p.a else None for p in aligned],
                                label_b: [p.b.node_count if p.b else None for p in aligned]}) if aligned else None
    tally = counts(aligned)
    show_all = request.args.get("all") == "1"  # default: unchanged and spelling-only passes folded away
    quiet = sum(r.kind in QUIET_KINDS and r is not first and i != row for i, r in enumerate(aligned))
    title = f"{case} · kernel {kernel} {side_b.kernel_name or ''} · {side_b.renderer} · passes {label_a} → {label_b}"
    only_a, only_b = added(aligned), removed(aligned)

    def data() -> dict[str, Any]:
        return {"case": case, "kernel": kernel, "kernel_at_a": side_a.where.kernel, "matched_by": found["matched_by"],
                "a": label_a, "b": label_b, "renderer": side_b.renderer, "ignore_spelling": spelling,
                "first_difference": row_json(first) if first else None, "added": only_a, "removed": only_b,
                "counts": tally, "rows": [row_json(r) for r in aligned], "selected_row": row,
                "diff": "\n".join(lines), "why": rules}
    return await render(datasette, request, "tgstore_passdiff.html", {
        **found, "chart": Markup(chart) if chart else None, "case": case, "kernel": kernel, "label_a": label_a,
        "label_b": label_b, "here": here, "sides_url": sides_url, "tally": tally, "added": only_a,
        "removed": only_b, "selected_row": row, "ignore_spelling": spelling, "show_all": show_all,
        "quiet_kinds": QUIET_KINDS, "quiet": quiet, "why": rules,
        "switch_url": here(spelling=None if raw else "raw", row=row),
        "diff_table": bounded_table(lines, None) if lines else None,
        "bench_a": lambda p: datasette.urls.path(side_a.where.url(commit=label_a, renderer=side_a.renderer,
                                                                  pass_position=p.position)),
        "bench_b": lambda p: datasette.urls.path(side_b.where.url(commit=label_b, renderer=side_b.renderer,
                                                                  pass_position=p.position)),
        "title": title}, data=data)
