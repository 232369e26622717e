"""Suites and the CI gate: `tgstore suites`, `tgstore check --against REV`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli import app
from tgstore.cli.common import (
    BackendOption,
    CasesOption,
    DbOption,
    DebugOption,
    JsonOption,
    RenderersOption,
    SuiteOption,
    TimeoutOption,
    TinygradOption,
    command,
    fail,
    make_plan,
    open_db,
    resolve_root,
)
from tgstore.cli.output import emit, note, print_table, safe


@command(app)
def suites(as_json: JsonOption = False) -> None:
    """The built-in case suites (for --suite NAME), with their case counts."""
    from tgstore.cases import suites as builtin_suites

    found = builtin_suites()
    if as_json:
        typer.echo(json.dumps([{"name": s.name, "cases": len(s.cases), "description": s.description,
                                "file": str(s.path), "case_names": s.cases} for s in found], indent=1))
        return
    print_table(["suite", "cases", "description"], [(s.name, len(s.cases), s.description) for s in found])


@command(app)
def check(
    against: Annotated[str, typer.Option("--against", help="The stored commit to compare with: sha, sha prefix or "
                                         "version.", show_default=False)],
    tinygrad: TinygradOption = None,
    db: DbOption = Path("tgstore.db"),
    cases: CasesOption = None,
    suite: SuiteOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    allow_names: Annotated[bool, typer.Option("--allow-names", help="Accept kernels whose only change is their "
                                              "name.")] = False,
    show_diff: Annotated[bool, typer.Option("--diff", help="Also print the unified diffs.")] = False,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
    as_json: JsonOption = False,
) -> None:
    """A CI gate like process_replay: extract a tinygrad working tree (--tinygrad, e.g. a PR checkout with local
    changes) over the suite and compare every kernel's AST and generated source with the stored run of --against.
    Prints the changed kernels and exits 1 if any changed, 0 if none did (2 if it could not compare). The database
    is left as it was. Renderers default to those of the stored run."""
    from tgstore.check import CheckError, check_tree
    from tgstore.diff import diff_to_json, format_diff

    plan = make_plan(cases, backend, renderers, debug, timeout, suite=suite)
    root = resolve_root(tinygrad)
    engine = open_db(db)
    try:
        result = check_tree(engine, root, against, plan, allow_names=allow_names)
    except CheckError as exc:
        raise fail(str(exc), 2) from None
    diff = result.diff
    if as_json:
        typer.echo(json.dumps({"against": result.against.sha, "candidate": result.candidate,
                               **diff_to_json(diff)}, ensure_ascii=False, indent=1))
    else:
        emit(f"check {safe(str(root))} against {result.against.describe()}: "
             + ("CHANGED" if diff.has_changes else "no kernel changed"))
        emit(f"  {diff.run_a.suite!r} on {diff.run_a.backend}; "
             + " ".join(line for style, line in format_diff(diff)[3:4]))
        for case, position, what in changed_kernels(diff):
            emit(f"  changed {safe(case)}[{position}] {safe(what)}")
        for case in diff.added_cases + diff.removed_cases:
            emit(f"  case {safe(case)} {'added' if case in diff.added_cases else 'removed'}")
        for reason in diff.skipped_renderers.values():
            note(f"  skipped: {reason}")
        if show_diff:
            for _style, line in format_diff(diff)[4:]:
                emit(safe(line))
    if diff.has_changes:
        raise typer.Exit(1)


def changed_kernels(diff) -> list[tuple[str, int, str]]:
    """(case, position, "kernel name: what changed") per changed, added or removed kernel, in case order."""
    found: dict[tuple[str, int], list[str]] = {}
    names: dict[tuple[str, int], str] = {}
    for d in diff.diffs:
        key = (d.case, d.position)
        found.setdefault(key, []).append("AST" if d.kind == "ast" else f"{d.renderer} source")
        names.setdefault(key, d.title.split(": ")[0].split(" ", 1)[-1] if " " in d.title.split(": ")[0] else "")
    for ref in diff.added_kernels + diff.removed_kernels:
        key = (ref.case, ref.position)
        found.setdefault(key, []).append("added" if ref in diff.added_kernels else "removed")
        names.setdefault(key, ref.kernel_name or ref.root_op)
    for case, old, new in diff.status_changes:
        found.setdefault((case, -1), []).append(f"status {old} -> {new}")
        names.setdefault((case, -1), "")
    return [(case, pos, f"{names[(case, pos)]}: {', '.join(what)}".strip()) for (case, pos), what in sorted(
        found.items())]
