"""The porting queue: the tinygrad commits between Svod's pin and a later commit that changed what Svod mirrors.

For the named cases, consecutive stored commits (git first-parent order) are compared pass by pass, per kernel and
renderer and at schedule scope: a pass added, removed, or whose output changed. Within one kernel only the first
pass whose output changed is a cause; the passes after it that changed too are knock-on changes, counted under it.
Canonical documents are compared the same way. When the two stored commits are not adjacent in git, the change lies
somewhere in the commits between them: it is reported as a gap with the number of unstored commits, never blamed on
the later commit (`tgstore ingest --repo R --rev A..B --cases ...` or bisect fills it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from tgstore.history import resolve_commit
from tgstore.svod.parity import ParityError, stage_table


def _svod_stage_of() -> dict[tuple[str, str], str]:
    """(scope, tinygrad pass) -> the Svod stage label that mirrors it."""
    return {(s["scope"], s["pass"].removeprefix("input:")): s["label"] for s in stage_table()
            if s.get("pass") and not s["pass"].startswith("input:")}


def git_order(repo: Path, start: str, end: str) -> list[tuple[str, bool]]:
    """(sha, touches tinygrad/) for every first-parent commit in start..end, oldest first."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    shas = git("rev-list", "--first-parent", "--reverse", f"{start}..{end}").split()
    touching = set()
    for line in git("log", "--first-parent", "--format=%H", f"{start}..{end}", "--", "tinygrad/").split():
        touching.add(line)
    return [(sha, sha in touching) for sha in shas]


def _snapshots(conn: Connection, cases: list[str], lo: int, hi: int) -> dict[str, dict[tuple, Any]]:
    """sha -> {(case, scope, position, renderer): [(pass name, output hash)], (case, 'canonical', pos, stage): hash}"""
    out: dict[str, dict[tuple, Any]] = {}
    for case in cases:
        for sha, scope, position, renderer, name, norm in conn.execute(text("""
                SELECT p.sha, p.scope, p.position, p.renderer, p.pass_name, g.norm_hash
                FROM v_passes p LEFT JOIN graphs g ON g.id = p.graph_id
                WHERE p."case" = :case AND p.depth = 0 AND p.history_rank BETWEEN :lo AND :hi
                ORDER BY p.history_rank, p.scope, p.position, p.renderer, p.pass_position"""),
                {"case": case, "lo": lo, "hi": hi}):
            out.setdefault(sha, {}).setdefault((case, scope, position, renderer), []).append((name, norm))
        for sha, position, stage, doc_hash in conn.execute(text("""
                SELECT c.sha, cl.position, cl.stage, d.hash FROM canonical_links cl
                JOIN canonical_docs d ON d.id = cl.doc_id JOIN run_cases rc ON rc.case_result_id = cl.case_result_id
                JOIN cases k ON k.id = rc.case_id JOIN runs r ON r.id = rc.run_id
                JOIN v_commits c ON c.commit_id = r.commit_id
                WHERE k.name = :case AND c.history_rank BETWEEN :lo AND :hi"""), {"case": case, "lo": lo, "hi": hi}):
            if sha in out:
                out[sha][(case, "canonical", position, stage)] = doc_hash
    return out


def _changes(before: dict[tuple, Any], after: dict[tuple, Any]) -> list[dict[str, Any]]:
    stage_of = _svod_stage_of()
    changes = []
    for key in sorted(set(before) | set(after), key=lambda k: tuple(str(x) for x in k)):
        case, scope, position, extra = key
        kernel = None if position is None or position < 0 else position
        if scope == "canonical":
            if before.get(key) != after.get(key) and key in before and key in after:
                changes.append({"case": case, "kernel": kernel, "renderer": None, "pass": None,
                                "canonical": extra, "change": "changed", "svod_stage": extra, "knock_on": 0})
            continue
        old, new = dict(before.get(key, [])), dict(after.get(key, []))
        if not old or not new:
            continue  # the kernel itself appeared or went: its passes are not comparable one by one
        base = {"case": case, "kernel": kernel, "renderer": extra, "scope": scope}
        for name in new.keys() - old.keys():
            changes.append({**base, "pass": name, "change": "added", "knock_on": 0,
                            "svod_stage": stage_of.get((scope, name), "no Svod stage: new pass")})
        for name in old.keys() - new.keys():
            changes.append({**base, "pass": name, "change": "removed", "knock_on": 0,
                            "svod_stage": stage_of.get((scope, name), "no Svod stage")})
        changed = [name for name, _h in after[key] if name in old and old[name] != new[name]]
        if changed:
            changes.append({**base, "pass": changed[0], "change": "changed", "knock_on": len(changed) - 1,
                            "svod_stage": stage_of.get((scope, changed[0]), "no Svod stage")})
    return changes


def port_queue(conn: Connection, cases: list[str], ref_from: str, ref_to: str, repo: Path | None) -> dict[str, Any]:
    start, end = resolve_commit(conn, ref_from), resolve_commit(conn, ref_to)
    if (start.history_rank or 0) >= (end.history_rank or 0):
        raise ParityError(f"{ref_to} ({end.short}) is not after {ref_from} ({start.short}) in history order")
    snaps = _snapshots(conn, cases, start.history_rank or 0, end.history_rank or 0)
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
    commits, gaps = [], []
    for before, after in zip(order, order[1:], strict=False):
        changes = _changes(snaps[before], snaps[after])
        unstored = (position[after] - position[before] - 1) if position is not None else None
        if unstored == 0:
            if changes:
                info = resolve_commit(conn, after)
                commits.append({"sha": after, "subject": info.subject, "touches_tinygrad": touches.get(after),
                                "changes": changes})
        else:
            gaps.append({"after": before, "before": after, "unstored": unstored, "changes": changes,
                         "fill": f"tgstore ingest --repo REPO --rev {before[:12]}..{after[:12]}"})
    return {"cases": cases, "from": start.sha, "to": end.sha, "compared": len(order), "commits": commits,
            "gaps": gaps}
