"""Suites and the CI gate: `tgstore suites`, `tgstore check --against REV`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import (
    BackendOption,
    CasesOption,
    CommandArgument,
    DebugOption,
    JsonOption,
    RenderersOption,
    SuiteOption,
    TimeoutOption,
    TinygradOption,
    command,
    db_path,
    fail,
    make_plan,
    open_db,
    resolve_root,
)
from tgstore.cli.output import emit, note, print_table, safe
from tgstore.units import format_ns


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
    cases: CasesOption = None,
    suite: SuiteOption = None,
    backend: BackendOption = "CPU",
    renderers: RenderersOption = None,
    allow_names: Annotated[bool, typer.Option("--allow-names", help="Accept kernels whose only change is their "
                                              "name.")] = False,
    show_diff: Annotated[bool, typer.Option("--diff", help="Also print the unified diffs.")] = False,
    debug: DebugOption = 4,
    timeout: TimeoutOption = 900.0,
    limit: Annotated[int, typer.Option("--limit", min=1, help="List at most this many kernels per kind of change, "
                                       "then a count of the rest (like process_replay's cap).")] = 20,
    time: Annotated[bool, typer.Option("--time", help="Also time the working tree's kernels and REV's (REV unpacked "
                                       "from the working tree's git repository) on this machine, interleaved, and "
                                       "list the kernels slower or faster beyond the noise.")] = False,
    rounds: Annotated[int, typer.Option("--rounds", min=2, help="--time: timed extractions of each side; each is one "
                                        "draw, so the exact test over rounds needs 5 for --confidence 0.99 (4 for "
                                        "0.95).")] = 5,
    confidence: Annotated[float, typer.Option("--confidence", min=0.5, max=0.9999, help="--time: how sure a "
                                              "slower or faster kernel must be (1 - p over rounds).")] = 0.99,
    time_threshold: Annotated[str, typer.Option("--time-threshold", help="--time: how much slower or faster "
                                                "counts (beyond the noise), a percentage or fraction.")] = "5%",
    fail_on: Annotated[str, typer.Option("--fail-on", help="What exits 1: changed (a kernel's output), slower (a "
                                         "kernel's speed, with --time), any (either), never.")] = "changed",
    report: Annotated[str | None, typer.Option("--report", help="md: print a short Markdown summary to paste into "
                                               "a pull request instead of the listing.", show_default=False)] = None,
    as_json: JsonOption = False,
    command_args: CommandArgument = None,
) -> None:
    """A CI gate like process_replay: extract a tinygrad working tree (--tinygrad, e.g. a PR checkout with local
    changes) over the suite, or capture a command's run with it (`-- python -m pytest test/...`, compared with
    REV's stored capture of the same command), and compare every kernel's AST and generated source with the stored
    run of --against. Lists kernels whose AST changed, kernels whose generated source changed (AST the same), and
    kernels added or removed, each up to --limit; exits 1 if any changed, 0 if none did, 2 if it could not compare.
    The database is left as it was. Renderers default to those of the stored run. With --time, also times both
    trees' kernels on this machine, interleaved, and lists those slower or faster beyond the noise (--fail-on slower
    exits 1 on a slower one); --report md prints a Markdown summary for a pull request."""
    db = db_path()
    from tgstore.compare.diff import diff_to_json, format_diff
    from tgstore.gate.tree import CheckError, check_tree

    if fail_on not in ("changed", "slower", "any", "never"):
        raise fail(f"--fail-on must be changed, slower, any or never, not {fail_on!r}", 2)
    if fail_on in ("slower", "any") and not time:
        raise fail(f"--fail-on {fail_on} judges speed: it needs --time", 2)
    if report not in (None, "md"):
        raise fail(f"--report must be md, not {report!r}", 2)
    plan = make_plan(cases, backend, renderers, debug, timeout, suite=suite,
                     capture=list(command_args) if command_args else None,
                     capture_cwd=Path.cwd() if command_args else None)
    root = resolve_root(tinygrad)
    engine = open_db(db)
    try:
        result = check_tree(engine, root, against, plan, allow_names=allow_names)
    except CheckError as exc:
        raise fail(str(exc), 2) from None
    diff = result.diff
    speed = time_both(root, result.against.sha, plan, rounds, time_threshold, confidence) if time else None
    if as_json:
        typer.echo(json.dumps({"against": result.against.sha, "candidate": result.candidate,
                               **diff_to_json(diff), **({"speed": speed.to_json()} if speed else {})},
                              ensure_ascii=False, indent=1))
    elif report == "md":
        from tgstore.gate.speed import markdown

        emit(markdown(speed, changes_by_kind(diff), str(root)) if speed else
             f"### tgstore check against `{result.against.sha[:12]}`\n\n**Output:** "
             + ("; ".join(f"{t}: {len(e)}" for t, e in changes_by_kind(diff).items() if e) or "no kernel changed"))
    else:
        emit(f"check {safe(str(root))} against {result.against.describe()}: "
             + ("CHANGED" if diff.has_changes else "no kernel changed"))
        emit(f"  {diff.run_a.suite!r} on {diff.run_a.backend}; "
             + " ".join(line for style, line in format_diff(diff)[3:4]))
        for title, entries in changes_by_kind(diff).items():
            if not entries:
                continue
            emit(f"  {title}: {len(entries)}")
            for line in entries[:limit]:
                emit(f"    {safe(line)}")
            if len(entries) > limit:
                emit(f"    ... and {len(entries) - limit} more (--limit)")
        for reason in diff.skipped_renderers.values():
            note(f"  skipped: {reason}")
        if show_diff:
            for _style, line in format_diff(diff)[4:]:
                emit(safe(line))
        if speed is not None:
            print_speed(speed)
    slower = bool(speed and speed.slower)
    if {"changed": diff.has_changes, "slower": slower, "any": diff.has_changes or slower, "never": False}[fail_on]:
        raise typer.Exit(1)


def time_both(root, against: str, plan, rounds: int, threshold: str, confidence: float):
    """check --time: the working tree and REV timed on this machine, interleaved (tgstore.gate.speed)."""
    from tgstore.gate.speed import SpeedCheckError, check_speed, rounds_needed
    from tgstore.git import GitError, package_checkout, verify_rev
    from tgstore.history.bisect import BisectError
    from tgstore.history.bisect_time import parse_threshold

    if against.startswith("tree:"):
        raise fail(f"--time unpacks REV from the working tree's git repository; {against[:17]} is an installed "
                   "release without git", 2)
    try:
        fraction = parse_threshold(threshold)
        verify_rev(root, against)
        if rounds < rounds_needed(confidence):
            note(f"--time: {rounds} rounds a side cannot reach confidence {confidence} (each round is one draw; "
                 f"that needs {rounds_needed(confidence)}): a kernel slower in every round is listed as unsure")
        with package_checkout(root, against) as base:
            return check_speed(root, base, against, plan, rounds=rounds, threshold=fraction, confidence=confidence,
                               log=note)
    except (BisectError, GitError, SpeedCheckError) as exc:
        raise fail(f"--time: {exc}", 2) from None


def print_speed(speed) -> None:
    judged = [k for k in speed.kernels if k.verdict != "too short"]
    emit(f"  speed: {len(judged)} kernels timed {speed.rounds}x each side, interleaved: {len(speed.slower)} slower, "
         f"{len(speed.faster)} faster beyond {speed.threshold:.0%} at confidence {speed.confidence} over rounds"
         + (f", {len(speed.unsure)} unsure" if speed.unsure else ""))
    for k in speed.slower + speed.faster + speed.unsure:
        emit(f"    {k.verdict} {k.case}[{k.position}] {safe(k.kernel or '')}: {format_ns(min(k.base_ns))} -> "
             f"{format_ns(min(k.ns))} ({k.ratio:.2f}x, p {k.p:.2g} over {speed.rounds} rounds)")
    if speed.unsure:
        note(f"  unsure: every round agrees, but {speed.rounds} rounds a side cannot give p below "
             f"{1 - speed.confidence:.2g}; --rounds {speed.needed} can")


def changes_by_kind(diff) -> dict[str, list[str]]:
    """Changed kernels by kind of change: AST changed; generated source changed with the AST the same (what
    process_replay reports); added; removed; and cases whose status changed."""
    ast = {(d.case, d.position) for d in diff.diffs if d.kind == "ast"}
    out: dict[str, list[str]] = {"AST changed": [], "source changed (same AST)": [], "kernels added": [],
                                 "kernels removed": [], "cases added or removed": [], "status changed": []}
    for d in diff.diffs:
        if d.kind == "ast":
            out["AST changed"].append(d.title)
        elif (d.case, d.position) not in ast:
            out["source changed (same AST)"].append(d.title)
    out["kernels added"] = [f"{r.case}[{r.position}] {r.kernel_name or r.root_op}" for r in diff.added_kernels]
    out["kernels removed"] = [f"{r.case}[{r.position}] {r.kernel_name or r.root_op}" for r in diff.removed_kernels]
    out["cases added or removed"] = [f"{c} added" for c in diff.added_cases] + [f"{c} removed"
                                                                               for c in diff.removed_cases]
    out["status changed"] = [f"{case}: {old} -> {new}" for case, old, new in diff.status_changes]
    return out


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
