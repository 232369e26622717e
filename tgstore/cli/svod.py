"""Svod commands: ingest what Svod prints, and compare it with tinygrad stage by stage."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tgstore.cli.app import app
from tgstore.cli.common import JsonOption, command, db_path, fail, open_db, open_reader, print_json
from tgstore.cli.output import emit, err, note, safe


@command(app, "ingest-svod")
def ingest_svod(
    paths: Annotated[list[Path], typer.Argument(
        help="What Svod printed: a test log (`RUST_LOG=svod_schedule::optimizer=trace cargo test NAME -- "
        "--nocapture 2>&1`, with SVOD_PER_STAGE_UOPS / SVOD_DUMP_STAGE / SVOD_DUMP_CANONICAL_STAGE if you like), "
        "an extract-ir.sh output file, a canonical capture file, or a SVOD_DUMP_LINEAR / SVOD_DUMP_LLVM_IR / "
        "SVOD_DUMP_NVPTX_IR / SVOD_DUMP_AMD_IR directory. The paths of one call go together: each libtest test in "
        "the logs is one Svod run (one run when they hold no test), and the dump files go with the run whose "
        "kernels they name.", show_default=False)],
    case: Annotated[str | None, typer.Option("--case", help="The tinygrad case every run corresponds to (e.g. "
                                             "sum_rows); parity compares the two by this name.",
                                             show_default=False)] = None,
    case_from_test: Annotated[bool, typer.Option("--case-from-test", help="Map each test to a case by its name: "
                                                 "the path segment before its backend variant (clang, llvm, amd, "
                                                 "metal, cuda; else the last segment), `test_` removed: "
                                                 "`ops::sum_rows::llvm` -> sum_rows.")] = False,
    test: Annotated[str | None, typer.Option("--test", help="Keep only the tests whose name contains PATTERN (as "
                                             "cargo test filters).", metavar="PATTERN")] = None,
    svod_commit: Annotated[str | None, typer.Option("--svod-commit", help="The Svod commit the output comes from.")]
    = None,
    svod_threads: Annotated[int | None, typer.Option(
        "--svod-threads", min=1, metavar="N", help="The SVOD_THREADS the run had. With 1 (one optimizing thread) "
        "kernels printed one after another are filed in that order; the log cannot show it (Svod's pool also prints "
        "them one after another, in any order), so without it only names or thread ids prove a block's kernel.",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per line for each run: svod_run, "
                                          "case, test, outcome, panic, kernels with their stages, problems.")]
    = False,
) -> None:
    """Store what Svod printed, one run per test: its outcome (ok, FAILED, skipped GPU variant), a panic's place and
    message with the kernel and last stage it reached, kernels (named from their code or documents), stages (trees
    in tinygrad's spelling, node counts, canonical documents), tracing events, and the whole text.

    Problems (a malformed JSON line, an unterminated dump, a tree that does not parse, stages of kernels optimized in
    parallel that nothing ties to one kernel) are printed as FILE:LINE: MESSAGE and stored with the text kept.
    Re-ingesting the same files does nothing. Exits 1 if they could not be stored at all (nothing is stored then),
    e.g. a file in which Svod printed nothing. Tests run in libtest's threads whose output cannot be told apart are
    stored, each with its outcome, their stages unattributed in a run with no test."""
    db = db_path()
    from tgstore.svod.log_paths import SvodLogError, precheck

    if (case is None) == (not case_from_test):
        raise fail("give --case CASE (one case for every run) or --case-from-test (a case per test name)", 2)
    try:
        precheck(paths)  # a bad path is refused before the database (and SQLAlchemy) is opened
        from tgstore.svod.store import ingest_svod_runs

        engine = open_db(db)
        reports = ingest_svod_runs(engine, list(paths), case, svod_commit, tests=test, case_from=case_from_test,
                                   svod_threads=svod_threads)
    except SvodLogError as exc:
        raise fail(str(exc), 2) from None
    where = ", ".join(str(p) for p in paths)
    stored = [r for r in reports if not r.skipped]
    note(f"{where}: {len(stored)} Svod runs stored, {len(reports) - len(stored)} already stored")
    if reports and reports[0].parity_left:
        note(f"{where}: parity decided against the newest tinygrad commits; {reports[0].parity_left} older pairs are "
             "left: run `tgstore parity-refresh`")
    for report in reports:
        if as_json:
            sys.stdout.write(json.dumps(report.summary(), ensure_ascii=False) + "\n")
        test_name = f" test {report.log.test}" if report.log and report.log.test else ""
        if report.skipped:
            extra = f"; Svod commit set to {report.svod_commit}" if report.commit_filled else ""
            note(f"{where}: already stored for case {report.case!r} (svod run {report.run_id}){extra}")
            continue
        log = report.log
        colour = "yellow" if report.problems else "green"
        tied, loose = log.pattern_matches
        matched = f"{tied + loose} pattern matches ({loose} not tied to a pass), " if tied + loose else ""
        outcome = f" [{log.outcome or 'no result'}]" if log.test else ""
        if log.captured and not log.kernels:
            kernels = "output captured by the test runner (kernels unknown; rerun with --nocapture)"
        else:
            kernels = f"{len(log.kernels)} kernels ({', '.join(k.name or '?' for k in log.kernels)})"
        extra = (f"{log.schedules} schedules, " if log.schedules > 1 else "") + \
            (f"{len(log.unattributed)} stages unattributed, " if log.unattributed else "") + \
            (f"{log.beam_candidates} BEAM candidates set aside, " if log.beam_candidates else "")
        parity = f", parity decided against {report.parity_pairs} tinygrad runs" if report.parity_pairs else ""
        line = Text(safe(f"{where}: svod run {report.run_id} for case {report.case!r}{test_name}{outcome}"
                         f"{' (read again)' if report.reparsed else ''}: {kernels}, {log.stage_count} stages, "
                         f"{len(log.events)} events, {extra}{matched}{report.new_trees} new trees{parity}, "))
        line.append(f"{len(report.problems)} problems", style=colour)
        err.print(line)
        files = [name for name, _kind, _text in log.files]
        for problem in report.problems:
            where_one = files[problem.file] if problem.file < len(files) else where
            note(f"{where_one}:{problem.line}: {problem.message}")


@command(app)
def parity(
    case: Annotated[str, typer.Argument(help="The case (as given to ingest-svod --case).", show_default=False)],
    svod: Annotated[int | None, typer.Option("--svod", help="The Svod run (from ingest-svod). Default: the newest "
                                             "for the case.")] = None,
    commit: Annotated[str | None, typer.Option("--commit", help="The tinygrad commit (sha, prefix or version). "
                                               "Default: the newest with the case.")] = None,
    renderer: Annotated[str | None, typer.Option("--renderer", help="tinygrad's renderer to compare with (C, "
                                                 "LLVM). Default: the Svod kernel's backend (clang -> C, llvm -> "
                                                 "LLVM), else C.")] = None,
    rules: Annotated[bool, typer.Option("--rules", help="Compare rule activity instead: per kernel and pass, "
                                        "Svod's `pattern matched` events (RUST_LOG=svod_ir::pattern::simplified="
                                        "trace) beside tinygrad's rewrite steps (extracted with --rewrites N), by "
                                        "the op of the node rewritten, naming the ops matched on one side only.")]
    = False,
    as_json: JsonOption = False,
) -> None:
    """Svod against tinygrad, kernel by kernel and stage by stage: equal, differs, or missing (on which side), the
    first diverging stage, and an aligned node diff there. Trees are compared in tinygrad's spelling with ids
    ignored; canonical documents exactly (hash of sorted-key JSON, `reg`/`register` one spelling, schema_version
    checked). Every stage in Svod's pipeline order with the tinygrad pass it maps to: equal, differs, not in this log
    (with the Svod setting that prints it), no tinygrad counterpart, not comparable; the headline is the first
    observed divergence and how many stages before it the log does not hold. Exits 1 exactly when a stage
    differs.

    With --rules: Svod names no rule in its events, only the op of the node rewritten, so each pass's matches are
    counted by that op on both sides, with tinygrad's rules (function, file:line) listed; ops matched on one side
    only are named, and the exit status is 1 when there are any. Where the log lacks the events, one line says
    which RUST_LOG setting to rerun with."""
    db = db_path()
    from tgstore.answers.parity import parity as parity_answer
    from tgstore.svod.parity import format_parity
    from tgstore.svod.rules import format_rules

    answer = parity_answer(open_reader(db), case, commit=commit, svod_run=svod, renderer=renderer, rules=rules)
    if as_json:
        print_json(answer, indent=1)
    else:
        for line in (format_rules if rules else format_parity)(answer.report):
            emit(line)
    if answer.failing:
        raise typer.Exit(1)


@command(app, "parity-refresh")
def parity_refresh(
    case: Annotated[str | None, typer.Argument(help="The case (default: every case with a Svod run).",
                                               show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Decide every pair again, not only the new ones.")] = False,
) -> None:
    """Decide and store Svod parity for every pair of a Svod run and a current tinygrad run holding its case that has
    none yet (a tinygrad commit ingested after the Svod log), or was decided by an older tgstore: what the
    parity_matrix query and the parity page read. `ingest-svod` decides its own runs; this is for the rest."""
    db = db_path()
    from tgstore.svod.parity_store import refresh

    engine = open_db(db)
    with engine.begin() as conn:
        report = refresh(conn, case, force=force)
    note(f"parity: {report.decided} pairs decided, {report.kept} already decided"
         f"{f', {len(report.failed)} not decidable' if report.failed else ''}")
    for line in report.failed or []:
        note(f"  {line}")


@command(app, "parity-drift")
def parity_drift(
    case: Annotated[str, typer.Argument(help="The case.", show_default=False)],
    from_: Annotated[str, typer.Option("--from", help="The tinygrad commit Svod's parity is pinned to.",
                                       show_default=False)],
    to: Annotated[str, typer.Option("--to", help="A later tinygrad commit.", show_default=False)],
    repo: Annotated[Path | None, typer.Option("--repo", envvar="TGSTORE_REPO", help="The tinygrad git repository "
                                              "(git order, unstored commits between stored ones).")] = None,
    as_json: JsonOption = False,
) -> None:
    """`port-queue` for one case (kept for scripts that call it): the commits that changed what Svod mirrors, and
    the gaps of unstored commits where a change lies somewhere between two stored commits."""
    port_queue(cases=[case], from_=from_, to=to, repo=repo, fill_gaps=False, as_json=as_json)


@command(app, "port-queue")
def port_queue(
    cases: Annotated[list[str], typer.Argument(help="The cases (built-in names such as softmax, matmul).",
                                               show_default=False)],
    from_: Annotated[str, typer.Option("--from", help="The tinygrad commit Svod's parity is pinned to.",
                                       show_default=False)],
    to: Annotated[str, typer.Option("--to", help="A later tinygrad commit.", show_default=False)],
    repo: Annotated[Path | None, typer.Option("--repo", envvar="TGSTORE_REPO", help="The tinygrad git repository: "
                                              "gives git order, the unstored commits between stored ones, and "
                                              "which commits touch tinygrad/.")] = None,
    fill_gaps: Annotated[bool, typer.Option("--fill", help="Extract (the named cases only, with the passes of every "
                                            "renderer the two endpoints recorded, or --renderers) the commits that "
                                            "make every change exact, splitting each gap whose ends differ at its "
                                            "middle commit until the change sits between adjacent commits; needs "
                                            "--repo.")] = False,
    renderers: Annotated[str | None, typer.Option("--renderers", help="Comma-separated renderers to compare (C, "
                                                  "LLVM, ...). Default: every renderer the runs recorded.")] = None,
    report: Annotated[str | None, typer.Option("--report", help="Print the porter's report instead: md or html.",
                                               metavar="md|html")] = None,
    as_json: JsonOption = False,
) -> None:
    """In git order, every stored tinygrad commit after --from up to --to that changed what Svod mirrors for the
    cases: a pass added, removed, or whose output changed first (later passes that changed with it counted as
    knock-on), a schedule pass, a canonical document; each with the Svod stage it maps to (or "no Svod stage: new
    pass"). Where stored commits are not adjacent in git, the change is reported as a gap with the number of unstored
    commits, never blamed on the later commit; fill the gap (`--fill`, or the command printed with it) and ask
    again. Without --repo, gaps cannot be counted and every pair of stored commits is a gap."""
    db = db_path()
    from tgstore.port_fill import fill
    from tgstore.store.commit_names import CommitNotFound
    from tgstore.svod.parity import ParityError
    from tgstore.svod.portqueue import (
        case_file_for,
        endpoint_recording,
        endpoint_renderers,
        endpoint_rewrites,
    )
    from tgstore.svod.portqueue import port_queue as build
    from tgstore.svod.portreport import RENDER, rules_text

    if report is not None and report not in RENDER:
        raise fail(f"--report {report}: give md or html")
    wanted = [r.strip().upper() for r in renderers.split(",") if r.strip()] if renderers else None
    if fill_gaps:
        from tgstore.cases import suite_file
        from tgstore.pipeline import ExtractionPlan, default_workers

        if repo is None:
            raise fail("--fill extracts commits of a git repository: give --repo (or set TGSTORE_REPO)")
        try:
            with open_db(db, migrate=False, writer=False).connect() as conn:
                held = wanted or endpoint_renderers(conn, cases, from_, to) or ["C"]
                recorded = endpoint_recording(conn, cases, from_, to)
                rewrites = endpoint_rewrites(conn, cases, from_, to)
            # the renderers and backend the endpoints' runs recorded, so that the commits filled compare with them
            every = [r for r in recorded[2].split(",") if r] if recorded else []
            plan = ExtractionPlan(case_files=[case_file_for(cases, [suite_file("builtin")])],
                                  renderers=every or held, stages=",".join(held),
                                  backend=recorded[1] if recorded else "CPU", rewrites=rewrites,
                                  workers=default_workers())
            note(f"--fill: extracting {', '.join(held)} passes (what the endpoints recorded)")
            count = fill(open_db(db), repo, cases, from_, to, plan, note, wanted)
        except (ParityError, CommitNotFound) as exc:
            raise fail(str(exc)) from None
        note(f"--fill: {count} commits extracted")
        if count:
            from tgstore.svod.parity_store import refresh

            with open_db(db).begin() as conn:  # the Svod runs of the cases against the commits filled
                decided = sum(refresh(conn, case).decided for case in cases)
            note(f"--fill: Svod parity decided for {decided} new pairs")
    engine = open_db(db, migrate=False, writer=False)
    try:
        with engine.connect() as conn:
            found = build(conn, cases, from_, to, repo, wanted)
    except (ParityError, CommitNotFound) as exc:
        raise fail(str(exc)) from None
    if report is not None:
        typer.echo(RENDER[report](found), nl=False)
        return
    if as_json:
        typer.echo(json.dumps(found, ensure_ascii=False, indent=1))
        return

    def change_line(c: dict) -> str:
        renderer = f" {c['renderer']}" if c.get("renderer") else ""
        where = "schedule" if c.get("kernel") is None else f"kernel {c['kernel']}{renderer}"
        what = (f"canonical {c['canonical']}" if c.get("canonical") else "the kernel" if c.get("pass") is None
                else f"pass {c['pass']!r}")
        knock = f" (+{c['knock_on']} later passes changed with it)" if c.get("knock_on") else ""
        stage = c["svod_stage"] if c["svod_stage"].startswith("no Svod stage") else f"Svod {c['svod_stage']}"
        change = c["change"].removeprefix("kernel ")
        rules = c.get("rules") or []
        involved = f"; rules {rules_text(rules, 6, ' ')}" if rules else ""
        return f"    {c['case']} {where}: {what} {change} -> {stage}{knock}{involved}"

    emit(f"{len(found['commits'])} commits to port, {len(found['gaps'])} gaps ({found['compared']} stored commits "
         f"compared, {found['from'][:12]}..{found['to'][:12]})")
    for entry in found["commits"]:
        emit(f"{entry['sha'][:12]} {entry['subject'] or ''}")
        for change in entry["changes"]:
            emit(change_line(change))
        shown = dict.fromkeys(c["diff"] for c in entry["changes"])
        for command_line in shown:
            emit(f"    show: {command_line}")
    for odd in found["unexplained"]:
        emit(f"not to port: {odd['sha'][:12]}: {len(odd['changes'])} changes, but {odd['why']}")
    quiet = [g for g in found["gaps"] if not g["changes"] and not g.get("reason")]
    if quiet:
        unstored = sum(g["unstored"] or 0 for g in quiet)
        emit(f"{len(quiet)} gaps whose ends are equal ({unstored} unstored commits; a change undone inside one is "
             "not looked for)")
    for gap in (g for g in found["gaps"] if g.get("reason")):
        emit(f"gap {gap['after'][:12]}..{gap['before'][:12]}: not compared: {gap['reason']}")
    for gap in (g for g in found["gaps"] if g["changes"]):
        count = "an unknown number of" if gap["unstored"] is None else str(gap["unstored"])
        emit(f"gap {gap['after'][:12]}..{gap['before'][:12]}: {count} unstored commits between; "
             f"{len(gap['changes'])} changes somewhere in them (fill: {gap['fill']})")
        for change in gap["changes"]:
            emit(change_line(change))
