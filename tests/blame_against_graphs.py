"""Blame checked against a plain comparison of the stored graphs: `python tests/blame_against_graphs.py DB` (and
tests/test_blame.py on a small history). The plain side shares no code with blame: its own SQL over runs, pass
entries and graphs, kernels paired by schedule position where a case has as many kernels at both commits, passes
by name and occurrence, graphs by their hash in one spelling across eras (spelling.eras, what "spelling-blind"
means). Blame must list exactly the (case, commit, kernel, pass) changes the plain comparison finds, over the
commits blame followed each kernel through."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from tgstore.spelling.eras import spelling_hash

RUNS = """SELECT c.sha, r.id FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id
          WHERE r.is_current AND r.status IN ('ok', 'partial') ORDER BY c.history_rank, r.id"""
CASES_OF_RUN = """SELECT k.name FROM run_cases rc JOIN cases k ON k.id = rc.case_id WHERE rc.run_id = ?"""
KERNELS = """SELECT si.position FROM run_cases rc JOIN cases k ON k.id = rc.case_id
             JOIN schedule_items si ON si.case_result_id = rc.case_result_id WHERE rc.run_id = ? AND k.name = ?"""
PASSES = """SELECT pe.name, g.nodes FROM run_cases rc JOIN cases k ON k.id = rc.case_id
            JOIN schedule_items si ON si.case_result_id = rc.case_result_id
            JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
            LEFT JOIN graphs g ON g.id = pe.graph_id
            WHERE rc.run_id = ? AND k.name = ? AND si.position = ? AND p.renderer = ? ORDER BY pe.position"""


def _passes(db: sqlite3.Connection, run: int, case: str, position: int, renderer: str) -> dict[tuple[str, int], str]:
    seen: dict[str, int] = {}
    out = {}
    for name, nodes in db.execute(PASSES, (run, case, position, renderer)):
        seen[name] = seen.get(name, 0) + 1
        out[(name, seen[name])] = spelling_hash(json.loads(nodes)) if nodes else None
    return out


def plain_changes(path: Path, renderer: str = "C") -> set[tuple[str, str, int, str, int]]:
    """(case, newer commit, kernel position there, pass, occurrence) for every pass output that differs between
    adjacent stored commits of a case, kernels paired by position where the counts agree."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    runs: dict[str, int] = {}
    for sha, run in db.execute(RUNS):
        runs.setdefault(sha, run)
    order = list(runs.items())
    found = set()
    cases = {c for _sha, run in order for (c,) in db.execute(CASES_OF_RUN, (run,))}
    for case in sorted(cases):
        having = [(sha, run) for sha, run in order if db.execute(KERNELS, (run, case)).fetchone() is not None]
        for (_sa, ra), (sb, rb) in zip(having, having[1:], strict=False):
            ka = sorted(p for (p,) in db.execute(KERNELS, (ra, case)))
            kb = sorted(p for (p,) in db.execute(KERNELS, (rb, case)))
            if len(ka) != len(kb):
                continue
            for position in kb:
                pa, pb = _passes(db, ra, case, position, renderer), _passes(db, rb, case, position, renderer)
                if not pa or not pb:
                    continue
                for key in pa.keys() | pb.keys():
                    if pa.get(key, "-") != pb.get(key, "-"):
                        found.add((case, sb, position, key[0], key[1]))
    return found


def blamed(path: Path, renderer: str = "C") -> tuple[set, set]:
    """Blame's changes over every kernel of every case at its newest commit, and the (case, commit, kernel) it
    covered: each followed commit after the first, with the kernel's position there."""
    from tgstore.compare.kernel_match import case_kernels
    from tgstore.db import open_engine
    from tgstore.history.blame import blame, stored_commits

    engine = open_engine(path)
    changes, covered = set(), set()
    with engine.connect() as conn:
        cases = [r[0] for r in conn.exec_driver_sql('SELECT DISTINCT "case" FROM v_run_cases').fetchall()]
        for case in cases:
            commits = stored_commits(conn, case)
            for k in case_kernels(conn, commits[-1].run_id, case):
                found = blame(conn, case, k.position, renderer=renderer)
                for c in found.changes:
                    changes.add((case, c.after.sha, c.kernel_after, c.pass_name, c.occurrence))
                covered |= {(case, c.sha, p) for c, p in zip(found.commits[1:], found.positions[1:], strict=True)}
    engine.dispose()
    return changes, covered


def check(path: Path, renderer: str = "C") -> tuple[set, set, int]:
    """(changes only the plain comparison found, changes only blame found, changes both found), over the kernels
    blame followed whose commit pairs the plain comparison could pair (as many kernels at both)."""
    plain = plain_changes(path, renderer)
    changes, covered = blamed(path, renderer)
    plain_in = {c for c in plain if c[:3] in covered}
    paired = plain_pairs(path)
    blame_in = {c for c in changes if (c[0], c[1]) in paired}
    return plain_in - blame_in, blame_in - plain_in, len(plain_in & blame_in)


def plain_pairs(path: Path) -> set[tuple[str, str]]:
    """(case, newer commit) pairs whose kernel counts agree with the stored commit before (what plain compares)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    runs: dict[str, int] = {}
    for sha, run in db.execute(RUNS):
        runs.setdefault(sha, run)
    order = list(runs.items())
    pairs = set()
    cases = {c for _sha, run in order for (c,) in db.execute(CASES_OF_RUN, (run,))}
    for case in cases:
        having = [(sha, run) for sha, run in order if db.execute(KERNELS, (run, case)).fetchone() is not None]
        for (_sa, ra), (sb, rb) in zip(having, having[1:], strict=False):
            if len(db.execute(KERNELS, (ra, case)).fetchall()) == len(db.execute(KERNELS, (rb, case)).fetchall()):
                pairs.add((case, sb))
    return pairs


if __name__ == "__main__":
    only_plain, only_blame, both = check(Path(sys.argv[1]))
    print(f"both: {both}; only in the plain comparison: {len(only_plain)}; only in blame: {len(only_blame)}")
    for row in sorted(only_plain)[:20]:
        print("plain only", row)
    for row in sorted(only_blame)[:20]:
        print("blame only", row)
    sys.exit(1 if only_plain or only_blame else 0)
