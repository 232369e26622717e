"""The porting queue: the tinygrad commits between Svod's pin and a later commit that changed what Svod mirrors.

For the named cases, consecutive stored commits (git first-parent order) are compared pass by pass, per kernel and
renderer and at schedule scope: a pass added, removed, moved, or whose output changed. Within one kernel only the first
pass whose output changed is a cause; the passes after it that changed too are knock-on changes, counted under it.
Canonical documents are compared the same way. When the two stored commits are not adjacent in git, the change lies
somewhere in the commits between them: it is reported as a gap with the number of unstored commits, never blamed on
the later commit (`tgstore port-queue CASES --from A --to B --repo R --fill`, printed with the gap, fills it).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from tgstore.store.commit_names import resolve_commit
from tgstore.svod.parity import ParityError, stage_table


def _svod_stage_of() -> dict[tuple[str, str], str]:
    """(scope, tinygrad pass) -> the Svod stage label that mirrors it."""
    found = {(s["scope"], s["pass"].removeprefix("input:")): s["label"] for s in stage_table()
             if s.get("pass") and not s["pass"].startswith("input:")}
    found.update({(s["scope"], name): s["label"] for s in stage_table() for name in s.get("also", [])})
    return found


def git_order(repo: Path, start: str, end: str) -> list[tuple[str, bool]]:
    """(sha, touches tinygrad/) for every first-parent commit in start..end, oldest first."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    shas = git("rev-list", "--first-parent", "--reverse", f"{start}..{end}").split()
    touching = set()
    for line in git("log", "--first-parent", "--format=%H", f"{start}..{end}", "--", "tinygrad/").split():
        touching.add(line)
    return [(sha, sha in touching) for sha in shas]


Recording = tuple[str, str, str]  # (suite hash, backend, renderers): what a run recorded; compared only alike


def _snapshots(conn: Connection, cases: list[str], lo: int, hi: int, renderers: set[str] | None
               ) -> tuple[dict[str, dict[Recording, dict[tuple, Any]]], dict[tuple[str, Recording], int]]:
    """sha -> recording -> {(case, scope, position, renderer): [(pass name, output hash, depth)],
    (case, 'canonical', pos, stage): hash}: per recording (suite, backend, renderers), the newest run of each; and
    (sha, recording) -> that run's id."""
    out: dict[str, dict[Recording, dict[tuple, Any]]] = {}
    recordings: dict[int, Recording] = {}
    run_ids: dict[tuple[str, Recording], int] = {}
    for case in cases:
        for sha, run_id, suite, backend, run_renderers, scope, position, renderer, name, norm, depth in conn.execute(
                text("""
                WITH newest AS (SELECT p.sha, max(p.run_id) AS run_id FROM v_passes p JOIN runs r ON r.id = p.run_id
                                WHERE p."case" = :case AND p.history_rank BETWEEN :lo AND :hi
                                GROUP BY p.sha, r.suite_id, r.backend, coalesce(r.renderers, ''))
                SELECT p.sha, p.run_id, su.hash, r.backend, coalesce(r.renderers, ''), p.scope, p.position,
                       p.renderer, p.pass_name, g.norm_hash, p.depth
                FROM v_passes p JOIN newest n ON n.run_id = p.run_id JOIN runs r ON r.id = p.run_id
                JOIN suites su ON su.id = r.suite_id LEFT JOIN graphs g ON g.id = p.graph_id
                WHERE p."case" = :case
                ORDER BY p.history_rank, p.scope, p.position, p.renderer, p.pass_position"""),
                {"case": case, "lo": lo, "hi": hi}):
            if renderers is not None and renderer is not None and renderer.upper() not in renderers:
                continue
            recording = (suite, backend, run_renderers)
            recordings[run_id] = recording
            run_ids[(sha, recording)] = run_id
            out.setdefault(sha, {}).setdefault(recording, {}).setdefault((case, scope, position, renderer), []) \
                .append((name, norm, depth))
        for sha, run_id, position, stage, doc_hash in conn.execute(text("""
                SELECT c.sha, r.id, cl.position, cl.stage, d.hash FROM canonical_links cl
                JOIN canonical_docs d ON d.id = cl.doc_id JOIN run_cases rc ON rc.case_result_id = cl.case_result_id
                JOIN cases k ON k.id = rc.case_id JOIN runs r ON r.id = rc.run_id
                JOIN v_commits c ON c.commit_id = r.commit_id
                WHERE k.name = :case AND c.history_rank BETWEEN :lo AND :hi"""), {"case": case, "lo": lo, "hi": hi}):
            if run_id in recordings and recordings[run_id] in out.get(sha, {}):
                out[sha][recordings[run_id]][(case, "canonical", position, stage)] = doc_hash
    return out, run_ids


def suite_name(conn: Connection, suite_hash: str) -> str:
    found = conn.execute(text("SELECT name FROM suites WHERE hash = :h"), {"h": suite_hash}).scalar()
    return found or suite_hash[:12]


def _alike(before: dict[Recording, dict], after: dict[Recording, dict]) -> Recording | None:
    """The recording both commits have (the one with most renderers when several): only such runs are compared."""
    common = [r for r in before if r in after]
    return max(common, key=lambda r: (len(r[2].split(",")), r)) if common else None


def _changes(before: dict[tuple, Any], after: dict[tuple, Any]) -> list[dict[str, Any]]:
    stage_of = _svod_stage_of()
    changes = []
    # (case, scope, renderer) each side recorded passes for: a kernel missing on one side where its renderer was
    # recorded there appeared or went; where the renderer was not recorded at all, nothing is known of it
    recorded = [{(k[0], k[1], k[3]) for k, v in side.items() if k[1] != "canonical" and v} for side in (before, after)]
    for key in sorted(set(before) | set(after), key=lambda k: tuple(str(x) for x in k)):
        case, scope, position, extra = key
        kernel = None if position is None or position < 0 else position
        if scope == "canonical":
            if before.get(key) != after.get(key) and key in before and key in after:
                changes.append({"case": case, "kernel": kernel, "renderer": None, "pass": None,
                                "canonical": extra, "change": "changed", "svod_stage": extra, "knock_on": 0})
            continue
        every_old = {name for name, _h, _d in before.get(key, [])}  # passes at any depth (nested ones too)
        every_new = {name for name, _h, _d in after.get(key, [])}
        top_before = [(name, h) for name, h, depth in before.get(key, []) if depth == 0]
        top_after = [(name, h) for name, h, depth in after.get(key, []) if depth == 0]
        old, new = dict(top_before), dict(top_after)
        base = {"case": case, "kernel": kernel, "renderer": extra, "scope": scope}
        if not old or not new:  # the kernel itself appeared or went: its passes are not comparable one by one
            if old != new and all((case, scope, extra) in seen for seen in recorded):
                changes.append({**base, "pass": None, "change": "kernel added" if new else "kernel removed",
                                "knock_on": 0, "svod_stage": stage_of.get((scope, "kernel"), "no Svod stage: the "
                                "kernel itself")})
            continue
        for name in sorted(every_new - every_old, key=str):
            changes.append({**base, "pass": name, "change": "added", "knock_on": 0,
                            "svod_stage": stage_of.get((scope, name), "no Svod stage: new pass")})
        for name in sorted(every_old - every_new, key=str):
            changes.append({**base, "pass": name, "change": "removed", "knock_on": 0,
                            "svod_stage": stage_of.get((scope, name), "no Svod stage")})
        order_old = [name for name, _h in top_before if name in new]
        order_new = [name for name, _h in top_after if name in old]
        if order_old != order_new:  # passes run at another point of the pipeline: those off the longest common order
            blocks = difflib.SequenceMatcher(a=order_old, b=order_new, autojunk=False).get_matching_blocks()
            kept = {i for block in blocks for i in range(block.b, block.b + block.size)}
            for moved in (name for i, name in enumerate(order_new) if i not in kept):
                changes.append({**base, "pass": moved, "change": "moved", "knock_on": 0,
                                "svod_stage": stage_of.get((scope, moved), "no Svod stage")})
        changed = [name for name, _h in top_after if name in old and old[name] != new[name]]
        if changed:
            changes.append({**base, "pass": changed[0], "change": "changed", "knock_on": len(changed) - 1,
                            "svod_stage": stage_of.get((scope, changed[0]), "no Svod stage")})
    return changes


def _rule_counts(conn: Connection, run_id: int, change: dict[str, Any]) -> tuple[dict, bool] | None:
    """(file, UPat) -> (label, steps) of the rules that matched in the change's pass in one run, and whether the
    recorded steps are all the pass made; None where the pass's steps were not recorded (`--rewrites 0`)."""
    from tgstore.compare.rewrite_steps import case_steps

    found = case_steps(conn, run_id, change["case"], kernel=change["kernel"], pass_name=change["pass"],
                       renderer=change.get("renderer"), schedule=change.get("scope") == "schedule")
    passes = [p for k in found for p in k.passes]
    if not passes:
        return {}, True
    if not all(p.recorded for p in passes):
        return None
    counts: dict[tuple, tuple[str, int]] = {}
    for step in (step for p in passes for step in p.steps):
        where = f"{(step.file or '?').removeprefix('tinygrad/')}:{step.line if step.line is not None else '?'}"
        key = (step.file, step.upat if step.upat else step.line)
        label, seen = counts.get(key, (where, 0))
        counts[key] = (label, seen + 1)
    return counts, all(p.total is None or p.limit is None or p.total <= p.limit for p in passes)


def _rules(conn: Connection, change: dict[str, Any], run_before: int, run_after: int) -> list[str] | None:
    """The rules of a pass added, removed, moved or changed whose matches differ between the two runs, from the
    rewrite steps both recorded: '+file:line' matched more after, '-file:line' matched more before (the later
    commit's line where it has the rule); None where either run recorded no steps for the pass."""
    if not change.get("pass") or change.get("canonical"):
        return None
    sides = [_rule_counts(conn, run, change) for run in (run_before, run_after)]
    if sides[0] is None or sides[1] is None:
        return None
    (old, old_all), (new, new_all) = sides
    out = []
    for key in dict.fromkeys([*new, *old]):
        before, after = old.get(key, ("", 0)), new.get(key, ("", 0))
        if before[1] != after[1]:
            out.append(("+" if after[1] > before[1] else "-") + (after[0] or before[0]))
    if not (old_all and new_all):
        out.append("(steps past the recorded limit not seen)")
    return out


def _show_command(change: dict[str, Any], before: str, after: str, recording: Recording) -> str:
    """The command that shows the change, runnable as printed (in bash): a kernel pass's, `tgstore diff --stages`
    (the first differing pass); a canonical document's or a scheduler pass's, the two documents or pass lists
    compared with diff (`tgstore diff` compares neither, so it would print no change)."""
    if change.get("canonical") or change.get("scope") == "schedule":
        kernel = f" --kernel {change['kernel']}" if change.get("kernel") is not None else ""
        what = f"canonical {change['case']} --stage {change['canonical']}{kernel}" if change.get("canonical") \
            else f"stages {change['case']} --schedule"
        one = [f"tgstore {what} --commit {sha[:12]}" for sha in (before, after)]
        return f"diff <({one[0]}) <({one[1]})"
    return (f"tgstore diff {before[:12]} {after[:12]} --case {change['case']} --stages --suite {recording[0]} "
            f"--backend {recording[1]}" + (f" --renderer {change['renderer']}" if change.get("renderer") else ""))


def port_queue(conn: Connection, cases: list[str], ref_from: str, ref_to: str, repo: Path | None,
               renderers: list[str] | None = None, rules: bool = True) -> dict[str, Any]:
    """Changes between consecutive stored commits, compared only between runs that recorded the same thing (suite,
    backend, renderers); `renderers` narrows the kernel passes compared (schedule passes are always compared);
    `rules`: name the rules involved in each change (from the rewrite steps recorded)."""
    start, end = resolve_commit(conn, ref_from), resolve_commit(conn, ref_to)
    if (start.history_rank or 0) >= (end.history_rank or 0):
        raise ParityError(f"{ref_to} ({end.short}) is not after {ref_from} ({start.short}) in history order")
    wanted = {r.upper() for r in renderers} if renderers else None
    snaps, run_ids = _snapshots(conn, cases, start.history_rank or 0, end.history_rank or 0, wanted)
    if start.sha not in snaps:
        raise ParityError(f"no stored passes of {', '.join(cases)} at {start.short}; ingest it with stages first")
    order = [start.sha]
    touches: dict[str, bool] = {}
    if repo is not None:
        for sha, touching in git_order(repo, start.sha, end.sha):
            touches[sha] = touching
            if sha in snaps:
                order.append(sha)
        position = {sha: i for i, sha in enumerate([start.sha, *touches])}
    else:
        order += [sha for sha in snaps if sha != start.sha]
        position = None
    commits, gaps, unexplained = [], [], []

    def fill_command(a: str, b: str) -> str:
        """What fills the gap a..b like for like, runnable as printed (without --repo: with TGSTORE_REPO set)."""
        where = f" --repo {shlex.quote(str(repo))}" if repo is not None else ""
        return f"tgstore port-queue {' '.join(cases)} --from {a[:12]} --to {b[:12]}{where} --fill"
    for before, after in zip(order, order[1:], strict=False):
        unstored = (position[after] - position[before] - 1) if position is not None else None
        recording = _alike(snaps[before], snaps[after])
        if recording is None:  # nothing recorded alike: not comparable, never a change blamed on a commit
            seen = {sha: sorted(f"{suite_name(conn, r[0])}/{r[1]}/{r[2] or '-'}" for r in snaps[sha])
                    for sha in (before, after)}
            gaps.append({"after": before, "before": after, "unstored": unstored, "changes": [],
                         "fill": fill_command(before, after),
                         "reason": f"no runs alike (suite/backend/renderers): {before[:12]} has "
                                   f"{', '.join(seen[before])}; {after[:12]} has {', '.join(seen[after])}"})
            continue
        changes = _changes(snaps[before][recording], snaps[after][recording])
        suite = suite_name(conn, recording[0])
        for change in changes:  # the rules involved; the command that shows the change, runnable as printed
            involved = _rules(conn, change, run_ids[(before, recording)], run_ids[(after, recording)]) \
                if rules else None
            if involved is not None:
                change["rules"] = involved
            change["diff"] = _show_command(change, before, after, recording)
            change["suite"] = suite
        if unstored == 0:
            if changes and touches.get(after) is False:  # outside tinygrad/: not a change to port
                unexplained.append({"sha": after, "changes": changes, "why": "the commit does not touch tinygrad/; "
                                    "the difference comes from the extraction, not from tinygrad"})
            elif changes:
                info = resolve_commit(conn, after)
                commits.append({"sha": after, "subject": info.subject, "touches_tinygrad": touches.get(after),
                                "changes": changes})
        else:
            gaps.append({"after": before, "before": after, "unstored": unstored, "changes": changes,
                         "fill": fill_command(before, after)})
    return {"cases": cases, "from": start.sha, "to": end.sha, "compared": len(order), "commits": commits,
            "gaps": gaps, "unexplained": unexplained, "renderers": sorted(wanted) if wanted else None}


def endpoint_renderers(conn: Connection, cases: list[str], ref_from: str, ref_to: str) -> list[str]:
    """Every renderer whose passes the two endpoints recorded for the cases: what --fill extracts."""
    found: set[str] = set()
    for ref in (ref_from, ref_to):
        sha = resolve_commit(conn, ref).sha
        for case in cases:
            found |= {r for (r,) in conn.execute(text(
                'SELECT DISTINCT renderer FROM v_passes WHERE sha = :sha AND "case" = :case AND renderer IS NOT NULL'),
                {"sha": sha, "case": case})}
    return sorted(found)


def endpoint_recording(conn: Connection, cases: list[str], ref_from: str, ref_to: str) -> Recording | None:
    """What the two endpoints both recorded passes of the cases with (suite hash, backend, renderers), the one with
    most renderers when several: what --fill extracts, so the commits it adds compare like for like."""
    found = []
    for ref in (ref_from, ref_to):
        sha = resolve_commit(conn, ref).sha
        found.append({(suite, backend, renderers) for suite, backend, renderers in conn.execute(text(
            """SELECT DISTINCT su.hash, r.backend, coalesce(r.renderers, '') FROM v_passes p
               JOIN runs r ON r.id = p.run_id JOIN suites su ON su.id = r.suite_id
               WHERE p.sha = :sha AND p."case" IN (SELECT value FROM json_each(:cases))"""),
            {"sha": sha, "cases": json.dumps(cases)})})
    common = found[0] & found[1]
    return max(common, key=lambda r: (len(r[2].split(",")), r)) if common else None


def endpoint_rewrites(conn: Connection, cases: list[str], ref_from: str, ref_to: str) -> int:
    """The most rewrite steps per pass the endpoints' runs recorded for the cases (`--rewrites`; 0: none), so that
    the commits --fill adds name the rules of their changes as the endpoints do."""
    limit = 0
    for ref in (ref_from, ref_to):
        sha = resolve_commit(conn, ref).sha
        for (trace,) in conn.execute(text(
                """SELECT b.text FROM runs r JOIN v_commits c ON c.commit_id = r.commit_id
                   JOIN run_cases rc ON rc.run_id = r.id JOIN cases k ON k.id = rc.case_id
                   JOIN schedule_items si ON si.case_result_id = rc.case_result_id
                   JOIN programs pr ON pr.schedule_item_id = si.id
                   JOIN pass_entries pe ON pe.pass_list_id = pr.pass_list_id JOIN blobs b ON b.id = pe.rewrites_blob_id
                   WHERE c.sha = :sha AND r.is_current = 1 AND k.name IN (SELECT value FROM json_each(:cases))
                   LIMIT 1"""),
                {"sha": sha, "cases": json.dumps(cases)}):
            limit = max(limit, int(json.loads(trace).get("limit") or 0))
    return limit


def case_file_for(names: list[str], sources: list[Path]) -> Path:
    """A case file holding only the named cases (and the module-level imports and assignments they may use), so a
    fill extracts nothing else; its content, hence its suite identity, is the same on every call."""
    keep: list[str] = []
    found: set[str] = set()
    for source in sources:
        text_ = source.read_text()
        for node in ast.parse(text_).body:
            if isinstance(node, ast.FunctionDef):
                if node.name.removeprefix("case_") in names:
                    keep.append(ast.get_source_segment(text_, node) or "")
                    found.add(node.name.removeprefix("case_"))
            elif isinstance(node, ast.Import | ast.ImportFrom | ast.Assign):
                # `case_x.context = {...}` belongs to its case: kept only with it
                owners = {t.value.id for t in getattr(node, "targets", []) if isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name)}
                if all(owner.removeprefix("case_") in found for owner in owners):
                    keep.append(ast.get_source_segment(text_, node) or "")
    missing = [n for n in names if n not in found]
    if missing:
        raise ParityError(f"no case {', '.join(missing)} in {', '.join(str(s) for s in sources)}")
    body = "\n\n\n".join(keep) + "\n"
    path = Path(tempfile.gettempdir()) / f"tgstore-port-queue-{hashlib.sha256(body.encode()).hexdigest()[:16]}.py"
    if not path.exists():
        path.write_text(body)
    return path
