"""`tgstore blame` (the commits where a pass's output changed for a kernel), `tgstore why` (the rules and hunks that
changed it), and bisect by pass (`tgstore bisect CASE --what pass:NAME`, which cli/extract.py hands here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tgstore.cli.app import app
from tgstore.cli.common import (
    DEFAULT_REWRITES,
    CaseArgument,
    JsonOption,
    RepoOption,
    command,
    db_path,
    fail,
    open_db,
    open_reader,
)
from tgstore.cli.output import emit, note, plural

KernelRequired = Annotated[int, typer.Option("--kernel", min=0, help="The kernel's schedule position (at the newest "
                                             "stored commit, or at --commit).", show_default=False)]
RendererOption = Annotated[str, typer.Option("--renderer", help="Whose passes (C, LLVM, ...).")]
SpellingOption = Annotated[str, typer.Option("--spelling", help="ignore: compare graphs in one spelling across "
                                             "tinygrad eras; raw: as stored.")]
DIFF_LINES = 40  # of each change's text diff on a terminal (--json has all of it)


def check_spelling(value: str) -> None:
    """A bad --spelling is refused before the database is opened."""
    from tgstore.answers.blame import SPELLINGS

    if value not in SPELLINGS:
        raise fail(f"--spelling must be {' or '.join(SPELLINGS)}, not {value!r}", 2)


def print_why(why: dict[str, Any], limit: int = 3) -> None:
    """A WhyAnswer's JSON as lines: the ranked rules with their hunks, else the files the run read."""
    for rule in why["rules"][:limit]:
        a, b = rule["a"] or {}, rule["b"] or {}
        at_a = f"{a.get('file')}:{a.get('line')}" if a else "-"
        at_b = f"{b.get('file')}:{b.get('line')}" if b else "-"
        emit(f"    rule {rule['status']}: {at_a} -> {at_b}  {(rule['upat'] or '')[:110]}")
        emit(f"      why: {rule['why']}")
        for hunk in rule["hunks"][:2]:
            for line in hunk["text"].splitlines()[:8]:
                emit(f"      | {line}")
    if len(why["rules"]) > limit:
        emit(f"    ... {plural(len(why['rules']) - limit, 'more rule')} whose matches differ (--json lists them)")
    if why["files_read"]:
        emit(f"    no rule explains it; changed files the run read: {', '.join(why['files_read'])}")
    for line in why["notes"]:
        emit(f"    note: {line}")


@command(app)
def blame(
    case: CaseArgument,
    kernel: KernelRequired,
    pass_name: Annotated[str | None, typer.Option("--pass", help="The pass (e.g. expander). Default: every pass.",
                                                  show_default=False)] = None,
    renderer: RendererOption = "C",
    spelling: SpellingOption = "ignore",
    commit: Annotated[str | None, typer.Option("--commit", help="Follow the kernel back from this commit (default: "
                                               "the newest stored).", show_default=False)] = None,
    why: Annotated[bool, typer.Option("--why", help="Explain each change: the rules whose matches differ and the "
                                      "hunks that touch them (needs the tinygrad repository).")] = False,
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """In git order over the stored commits, each commit where a pass's output changed for CASE's kernel
    (spelling-blind by default), with the node counts before and after and a text diff; commits the history
    lacks between two stored ones are said, with the bisect that would find the change inside them. --json prints
    {"case", "kernel", "pass_name", "commits", "changes": [{"pass", "before", "after", "nodes_before",
    "nodes_after", "gap", "bisect", "diff", "why"?}], "gaps"}."""
    db = db_path()
    from tgstore.answers.base import Unanswerable
    from tgstore.answers.blame import blame as blame_answer

    check_spelling(spelling)
    try:
        answer = blame_answer(open_reader(db), case, kernel, pass_name, renderer, spelling, commit, why, repo)
    except Unanswerable as exc:
        raise fail(str(exc), 2) from None
    data = answer.to_json()
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
        return
    what = f"pass {pass_name!r}" if pass_name else "every pass"
    span = f"{data['first']['short']}..{data['last']['short']}" if data["first"] else "-"
    note(f"{case} kernel {kernel} {answer.kernel_name or ''} ({answer.renderer}), {what}, spelling "
         f"{answer.spelling}: {plural(answer.commits, 'stored commit')} {span}, "
         f"{plural(len(answer.changes), 'change')}")
    if data["kernel_starts"] and data["first"] and data["kernel_starts"]["sha"] != data["first"]["sha"]:
        note(f"the kernel has no counterpart before {data['kernel_starts']['short']}: its stored history starts there")
    for change in data["changes"]:
        after, before = change["after"], change["before"]
        emit(f"{after['short']} {change['pass']}{'' if change['occurrence'] == 1 else ' #' + str(change['occurrence'])}"
             f" {change['kind']}: {change['nodes_before']} -> {change['nodes_after']} nodes (since {before['short']})"
             f"  {after['subject'] or ''}")
        if change["gap"]:
            emit(f"  {plural(change['gap'], 'commit')} between {before['short']} and {after['short']} are not stored: "
                 f"{change['bisect'].replace('CASE', case)}")
        for line in change["diff"].splitlines()[:DIFF_LINES]:
            emit(f"  {line}")
        if change.get("why"):
            print_why(change["why"])
    for gap in data["gaps"]:
        if not any(c["gap"] and c["after"]["sha"] == gap["after"]["sha"] for c in data["changes"]):
            note(f"{plural(gap['missing'], 'commit')} between {gap['before']['short']} and {gap['after']['short']} "
                 "are not stored (no change between them)")


@command(app)
def why(
    case: CaseArgument,
    kernel: KernelRequired,
    pass_name: Annotated[str, typer.Option("--pass", help="The pass that changed (e.g. expander).",
                                           show_default=False)],
    commit: Annotated[str, typer.Option("--commit", help="The commit where it changed (sha, prefix, version; a git "
                                        "revision with the repository).", show_default=False)],
    parent: Annotated[str | None, typer.Option("--parent", help="The commit it changed since (default: the stored "
                                               "commit before --commit).", show_default=False)] = None,
    occurrence: Annotated[int, typer.Option("--occurrence", min=1, help="Which pass of that name (1: the first).")
                          ] = 1,
    renderer: RendererOption = "C",
    spelling: SpellingOption = "ignore",
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """Why a pass's output changed for CASE's kernel between two stored commits: the rules whose matches in that
    pass differ (appeared, disappeared, count changed, matched differently), each with its UPat and file:line at
    both commits and the hunks of `git diff PARENT COMMIT` touching its lines, its helpers, its function or its
    matcher, ranked most likely cause first; where no rule explains it, the changed files the run read. --json
    prints {"before", "after", "changed", "rules": [{"status", "a", "b", "why", "hunks"}], "files_read", "notes"}."""
    db = db_path()
    from tgstore.answers.base import Unanswerable
    from tgstore.answers.blame import why as why_answer

    check_spelling(spelling)
    try:
        answer = why_answer(open_reader(db), case, kernel, pass_name, commit, parent, renderer, spelling, occurrence,
                            repo)
    except Unanswerable as exc:
        raise fail(str(exc), 2) from None
    data = answer.to_json()
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
        return
    before, after = data["before"], data["after"]
    emit(f"{case} kernel {kernel} pass {pass_name!r} ({answer.renderer}) {before['short']} -> {after['short']}: "
         f"{'changed' if data['changed'] else 'unchanged'}; {plural(len(data['rules']), 'rule')} whose matches "
         f"differ  {after['subject'] or ''}")
    print_why(data, limit=5)


def bisect_by_pass(case: str, good: str, bad: str, repo: Path, db: Path, plan, pass_name: str, renderer: str) -> None:
    """`tgstore bisect CASE --what pass:NAME`: the first commit where the pass changed (history/bisect_pass)."""
    from tgstore.git import GitError, open_repo
    from tgstore.history.bisect import BisectError
    from tgstore.history.bisect_pass import bisect_pass
    from tgstore.history.sweep import SweepError
    from tgstore.pipeline import CaseFileError, read_case_names

    if not pass_name:
        raise fail("--what pass:NAME needs the pass's name (e.g. pass:expander)", 2)
    try:
        root = open_repo(repo)
        if case not in read_case_names(plan.case_files):
            raise fail(f"unknown case {case!r}; the suite's cases are: {', '.join(read_case_names(plan.case_files))}",
                       2)
        from tgstore.git import verify_rev

        verify_rev(root, good), verify_rev(root, bad)
    except (GitError, CaseFileError) as exc:
        raise fail(str(exc), 2) from None
    plan.rewrites = plan.rewrites or DEFAULT_REWRITES  # the found commit's rules can then be attributed
    engine = open_db(db)
    try:
        result = bisect_pass(engine, root, case, good, bad, plan, pass_name, renderer=renderer, log=note)
    except (BisectError, SweepError, GitError) as exc:
        raise fail(str(exc)) from None
    first = result.first
    emit(f"{first.sha} {first.date} {first.subject}")
    note(f"first commit where case {case!r}'s pass {pass_name!r} ({result.renderer}) differs from {good}; "
         f"{result.commits} commits in range, {len(result.looked_at)} looked at, "
         f"{plural(result.extractions, 'extraction')} of {case} alone")
    if result.untestable_before:
        note(f"warning: {len(result.untestable_before)} commits just before it could not be extracted; the change "
             f"may be in one of them: {' '.join(c.sha[:10] for c in result.untestable_before)}")


@command(app)
def repro(
    case: CaseArgument,
    kernel: KernelRequired,
    commit: Annotated[str | None, typer.Option("--commit", help="A sha, sha prefix or version (default: the newest "
                                               "stored).", show_default=False)] = None,
    pass_name: Annotated[str | None, typer.Option("--pass", help="Also print the graph after this pass.",
                                                  show_default=False)] = None,
    occurrence: Annotated[int, typer.Option("--occurrence", min=1, help="Which pass of that name.")] = 1,
    renderer: Annotated[str, typer.Option("--renderer", help="C, LLVM or X86 (rendered on the CPU).")] = "C",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the script here (default: stdout).",
                                             show_default=False)] = None,
    as_json: JsonOption = False,
) -> None:
    """Write a standalone Python script that, run with tinygrad at COMMIT (installed, or PYTHONPATH=a checkout),
    rebuilds CASE's kernel from its stored pyrender, runs tinygrad's own lowering, and prints the graph after
    --pass and the generated source (`--source`: the source alone, byte for byte what is stored)."""
    db = db_path()
    from tgstore.answers.base import Unanswerable
    from tgstore.answers.repro import repro as make

    if out is not None and out.exists() and out.is_dir():
        raise fail(f"{out} is a directory; -o names the script's file", 2)
    try:
        answer = make(open_reader(db), case, kernel, commit, pass_name, renderer, occurrence,
                      out.name if out is not None else "repro.py")
    except Unanswerable as exc:
        raise fail(str(exc), 2) from None
    if as_json:
        sys.stdout.write(json.dumps(answer.to_json(), indent=1) + "\n")
    elif out is None:
        sys.stdout.write(answer.script)
    if out is not None:
        out.write_text(answer.script)
        note(f"wrote {out}: run it with tinygrad at {answer.commit[:10]}"
             f"{' (' + answer.version + ')' if answer.version else ''}")
