"""`tgstore rewrites`: the rewrite steps inside a case's passes at a commit, as tinygrad's VIZ lists them."""

from __future__ import annotations

from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.common import JsonOption, command, db_path, fail, open_reader, print_json
from tgstore.cli.output import emit, note, plural, print_table
from tgstore.cli.stages import CaseArgument, CommitOption, KernelOption


@command(app)
def rewrites(
    case: CaseArgument,
    kernel: KernelOption = None,
    pass_name: Annotated[str | None, typer.Option("--pass", help="Only passes with this name (e.g. 'expander').")
                         ] = None,
    commit: CommitOption = None,
    renderer: Annotated[str | None, typer.Option("--renderer", help="The renderer whose passes to show (C, LLVM, "
                                                 "...). Default: one renderer per kernel.")] = None,
    schedule: Annotated[bool, typer.Option("--schedule", help="The case's scheduler passes instead of the "
                                           "kernels' codegen passes.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Each rewrite step recorded inside the passes of CASE (extracted with --rewrites N), in order: the pass, the
    rule that matched (file:line and the UPat's source), and the node before and after (op, dtype, arg, and the
    hash of its subgraph). --json prints {"case", "commit": {"sha", "version", ...}, "missing", "kernels":
    [{"index", "passes": [{"name", "steps": [{"index", "pattern": {"file", "line", "upat"}, "before",
    "after"}]}]}]}."""
    db = db_path()
    from tgstore.answers.rewrites import rewrites as rewrites_answer

    answer = rewrites_answer(open_reader(db), case, commit, kernel, pass_name, renderer, schedule)
    if as_json:
        return print_json(answer, indent=1)
    if answer.missing:
        raise fail(answer.missing)
    found = answer.kernels
    steps = 0
    for k in found:
        what = "scheduler passes" if k.index is None else f"kernel {k.index} {k.name or ''} ({k.renderer})"
        emit(f"{case}: {what} at {answer.commit.describe()}")
        rows = []
        for p in k.passes:
            if not p.steps:
                continue
            for s in p.steps:
                before, after = s.before or {}, s.after or {}
                rows.append([p.name, s.index, f"{s.file}:{s.line}", s.upat or "",
                             f"{before.get('op', '')} {before.get('arg', '')}".strip(),
                             f"{after.get('op', '')} {after.get('arg', '')}".strip(),
                             (before.get("hash") or "")[:8] + " -> " + (after.get("hash") or "")[:8]])
            if p.total is not None and p.total > len(p.steps):
                rows.append([p.name, "…", f"{p.total - len(p.steps)} more (recorded up to {p.limit})", "", "", "",
                             ""])
            steps += len(p.steps)
        print_table(["pass", "#", "rule", "upat", "before", "after", "subgraph"], rows)
    note(f"{plural(steps, 'step')} in {plural(sum(1 for k in found for p in k.passes if p.steps), 'pass', 'passes')}")
