"""`tgstore stages` and `tgstore canonical`: a kernel's passes and canonical documents at a commit."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tgstore.cli.app import app
from tgstore.cli.browse import JsonLinesOption
from tgstore.cli.common import (
    CaseArgument,
    JsonOption,
    command,
    db_path,
    fail,
    open_db,
    open_reader,
    print_json,
    print_json_lines,
)
from tgstore.cli.output import emit, note, plural, print_table

CommitOption = Annotated[str | None, typer.Option("--commit", help="A sha, sha prefix or version. Default: the newest "
                                                  "commit (in history order) that has the case.")]
KernelOption = Annotated[int | None, typer.Option("--kernel", min=0, max=2**63 - 1,
                                                  help="The kernel's position in the schedule.")]


@command(app)
def stages(
    case: CaseArgument,
    commit: CommitOption = None,
    kernel: KernelOption = None,
    renderer: Annotated[str | None, typer.Option("--renderer", help="Only this renderer (C, LLVM, ...).")] = None,
    schedule: Annotated[bool, typer.Option("--schedule", help="The case's scheduler passes instead of the "
                                           "kernels' codegen passes.")] = False,
    as_json: JsonOption = False,
    as_jsonl: JsonLinesOption = False,
) -> None:
    """The passes each kernel of CASE went through, in order: name, node count after the pass, whether it changed
    the graph, and the graph's hash. Nested passes (run inside another pass's rewrite) are indented. --json prints
    {"case", "commit", "version", "schedule", "kernels": [one per kernel and renderer]}, --jsonl one kernel per
    line."""
    db = db_path()
    from tgstore.answers.stages import stages as stages_answer

    answer = stages_answer(open_reader(db), case, commit, kernel, renderer, schedule)
    if as_json:
        return print_json(answer)
    found = answer.kernels
    if not found:
        raise fail(f"no passes recorded for case {case!r} at {answer.commit.describe()}"
                   + (f" kernel {kernel}" if kernel is not None else "")
                   + (f" renderer {renderer}" if renderer else "")
                   + " (extract with --stages on a tinygrad that names its passes: 0.11 or later)")
    if as_jsonl:
        return print_json_lines(found)
    tables = same_passes(found)
    for kp, renderers in tables:
        names = ", ".join(r.renderer for r in renderers if r.renderer)
        what = "scheduler passes" if schedule else f"kernel {kp.kernel_index} {kp.kernel_name or ''} ({names})"
        emit(f"{case}: {what} at {answer.commit.describe()}")
        graphs = [(p.graph_hash or "")[:12] for p in kp.passes]
        if kp.passes and len({r.passes[-1].graph_hash for r in renderers}) > 1:  # the program: each renderer's
            graphs[-1] = ", ".join(f"{r.renderer} {(r.passes[-1].graph_hash or '')[:8]}" for r in renderers)
        print_table(["#", "pass", "nodes", "changed", "graph"],
                    [[p.position, "  " * p.depth + p.name, "" if p.node_count is None else p.node_count,
                      "*" if p.changed else "", graph] for p, graph in zip(kp.passes, graphs, strict=True)])
    shared = sum(len(r) > 1 for _, r in tables)
    note(f"{plural(sum(len(k.passes) for k, _ in tables), 'pass', 'passes')} in {plural(len(tables), 'table')}"
         + (f"; {shared} shown once for renderers with identical passes" if shared else ""))


def same_passes(found: list) -> list[tuple]:
    """Per kernel, renderers whose pass lists are identical (names, depths, node counts, graphs) grouped: one
    (passes, [KernelPasses, ...]) each, in first-seen order. The last pass's graph is left out of the comparison:
    it is the PROGRAM, whose SOURCE is each renderer's own text."""
    groups: dict[tuple, tuple] = {}
    for kp in found:
        rows = [(p.name, p.depth, p.node_count, p.changed, p.graph_hash) for p in kp.passes]
        key = (kp.kernel_index, tuple(rows[:-1]), tuple(rows[-1][:4]) if rows else ())
        if key in groups:
            groups[key][1].append(kp)
        else:
            groups[key] = (kp, [kp])
    return list(groups.values())


@command(app)
def canonical(
    case: CaseArgument,
    stage: Annotated[str, typer.Option("--stage", help="tensor, rangeified (the case's), or kernel_ast, optimized, "
                                       "postrange, expanded, coalesced, gated, program, linearized (a kernel's).",
                                       show_default=False)],
    kernel: KernelOption = None,
    commit: CommitOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored row as JSON: hash, node_count, "
                                          "unsupported, reason and the document (parsed; null when unsupported).")]
    = False,
) -> None:
    """Print the stored Svod canonical JSON (schema v7) document of CASE at STAGE. A stage the schema cannot
    represent at that commit prints its typed reason and exits 1."""
    db = db_path()
    from tgstore.compare.stage_diff import StageError, canonical_document, pretty_document, run_with_case

    engine = open_db(db, migrate=False, writer=False)
    try:
        with engine.connect() as conn:
            _row, run_id = run_with_case(conn, case, commit)
            doc = canonical_document(conn, run_id, case, stage, kernel)
    except (StageError, LookupError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        import json

        document = doc["document"]
        sys.stdout.write(json.dumps({"case": case, "stage": stage, "kernel": kernel, "hash": doc["hash"],
                                     "node_count": doc["node_count"], "unsupported": doc["unsupported"],
                                     "reason": doc["reason"],
                                     "document": json.loads(document) if isinstance(document, str) else document},
                                    ensure_ascii=False) + "\n")
        return
    if doc["document"] is None:
        raise fail(f"stage {stage!r} of case {case!r} has no canonical document: {doc['unsupported']}: "
                   f"{doc['reason']}")
    sys.stdout.write(pretty_document(doc["document"]))
    note(f"sha256 {doc['hash']}, {doc['node_count']} nodes")
