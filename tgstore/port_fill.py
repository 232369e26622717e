"""`port-queue --fill`: extracting the commits that make each change of the port queue exact. It stands above both
wings it joins: the Svod wing's port queue (svod/portqueue.py) says where a change lies, the history wing's bisect
(history/bisect.py) extracts and stores a commit; neither imports the other (tests/import_graph.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from tgstore.git import line_of, single
from tgstore.history.bisect import extract_and_store
from tgstore.store.commit_names import resolve_commit
from tgstore.svod.portqueue import port_queue


def fill(engine: Engine, repo: Path, cases: list[str], ref_from: str, ref_to: str, plan: Any,
         log: Callable[[str], None] = lambda _m: None, renderers: list[str] | None = None) -> int:
    """Extract, for the named cases only, the commits that make every change exact: each gap whose ends differ is
    split at its middle commit (like `tgstore bisect`) until the change sits between adjacent commits. Returns the
    number of commits extracted. A change that is undone inside a gap whose ends are equal is not looked for."""
    extracted = 0

    def extract(sha: str, why: str) -> None:
        """Extract and store one commit (a commit the clone cannot give whole is logged as untestable, as bisect
        does, and stays unstored)."""
        nonlocal extracted
        commit = single(repo, sha)
        log(f"extracting {commit.sha[:10]} {commit.subject} ({why})")
        extract_and_store(engine, repo, commit, plan, log)
        extracted += 1

    # the endpoints must hold what the fill extracts (suite, backend, renderers), else nothing it adds compares with
    # them: an endpoint recorded otherwise (the whole suite, other renderers) is extracted again the fill's way
    recording = (plan.suite["hash"], plan.backend, ",".join(plan.effective_renderers))
    for ref in (ref_from, ref_to):
        with engine.connect() as conn:
            sha = resolve_commit(conn, ref).sha
            held = conn.execute(text(
                """SELECT 1 FROM runs r JOIN suites su ON su.id = r.suite_id
                   JOIN v_commits c ON c.commit_id = r.commit_id
                   WHERE c.sha = :sha AND su.hash = :suite AND r.backend = :backend AND r.is_current = 1
                   AND coalesce(r.renderers, '') = :renderers"""),
                {"sha": sha, "suite": recording[0], "backend": recording[1], "renderers": recording[2]}).first()
        if held is None:
            extract(sha, f"an endpoint, again with the named cases only and renderers {recording[2]}, to compare "
                         "like for like")
    tried: set[str] = set()
    while True:
        with engine.connect() as conn:
            queue = port_queue(conn, cases, ref_from, ref_to, repo, renderers, rules=False)
        open_gaps = [g for g in queue["gaps"] if g["changes"] and g["unstored"]]
        if not open_gaps:
            return extracted
        progressed = False
        for gap in open_gaps:
            line = line_of(repo, gap["after"], gap["before"])[:-1]  # the unstored commits between
            line = [c for c in line if c.sha not in tried]
            if not line:
                continue
            middle = line[len(line) // 2].sha
            tried.add(middle)
            extract(middle, f"{gap['unstored']} unstored in the gap")
            progressed = True
        if not progressed:
            return extracted
