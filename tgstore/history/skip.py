"""Skip by what ran: a commit whose tree gives the extraction the same bytes to read as its parent's stored run read
is not extracted; that run is copied to it (`store.runs.copy_run`, with `copied_from` and the reason).

Each extraction records its inputs (`extract/child/inputs.py`): the git blob id of every file under `tinygrad/` it
loaded or opened, the entries of every directory it listed or loaded a module from, the version files, and its
settings (suite, backend, renderers, stages, rewrite steps, debug level, Python, the extractor's own code). Those are
the only bytes of the commit an extraction sees (its checkout holds nothing else of the commit), and the rest of its
world is in the settings. So when a commit's tree has the same blob at each of those paths and the same entries in
each of those directories, an extraction of it reads exactly what the stored one read, and stores the same facts.
A file nothing loaded may change, appear or go where nothing looked; a changed loaded file, a file that appears in a
directory a module was loaded from or that was listed (an import or a glob would find it), a changed version file or
other settings each mean an extraction. What is not caught: a file tinygrad only stat()s (no audit event), outside
every directory it loaded from or listed.

The check reads git's trees only (`git ls-tree`), never a file's content, so it works in a blobless clone too.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from tgstore.extract import child
from tgstore.extract.child.inputs import listing_hash
from tgstore.git import Tree


def why_not_same(tree: Tree, inputs: dict[str, Any]) -> str | None:
    """None when an extraction of `tree` reads what the run that recorded `inputs` read; else the first difference,
    in words."""
    for path, blob in sorted({**inputs["files"], **inputs.get("versions", {})}.items()):
        if tree.blob(path) != blob:
            return f"{path} {'appeared' if blob is None else 'changed' if path in tree.entries else 'is gone'}"
    for directory, digest in sorted(inputs["dirs"].items()):
        if listing_hash(tree.listing(directory)) != digest:
            return f"the entries of {directory}/ changed"
    return None


def touches(before: Tree, after: Tree, inputs: dict[str, Any]) -> bool:
    """Whether going from `before` to `after` changes anything a run with `inputs` read: a guess at whether a commit
    had better wait for its parent's run (to be copied from it) or be extracted at once."""
    changed = {p for p in before.entries.keys() | after.entries.keys() if before.entries.get(p) != after.entries.get(p)}
    if changed & (inputs["files"].keys() | inputs.get("versions", {}).keys()):
        return True
    moved = {p for p in changed if (p in before.entries) != (p in after.entries)}
    dirs = {d for p in moved for d in ancestors(p)} & inputs["dirs"].keys()
    return any(before.listing(d) != after.listing(d) for d in dirs)


def ancestors(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def expected_settings(plan: Any) -> dict[str, Any]:
    """The settings an extraction for `plan` records (computed as child.main computes them)."""
    renderers = child.selected_renderers(",".join(plan.renderers) if plan.renderers else None,
                                         child.DEFAULT_RENDERERS)
    stages = [r for r in child.selected_renderers(plan.stages, child.DEFAULT_STAGE_RENDERERS) if r in renderers]
    return child.run_settings(suite_hash=plan.suite["hash"], backend=plan.backend, renderers=renderers, stages=stages,
                              rewrites=plan.rewrites, debug=plan.debug_level, python=platform.python_version())


STORED_INPUTS = """
SELECT c.sha, b.text FROM runs r
JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN suites s ON s.id = r.suite_id
JOIN blobs b ON b.id = r.inputs_blob_id
WHERE s.hash = ? AND r.backend = ? AND r.status = 'ok' AND r.is_current = 1 AND c.sha IN ({marks})
"""


def stored_inputs(conn: Connection, plan: Any, shas: list[str]) -> dict[str, dict[str, Any]]:
    """The inputs of those commits' current ok runs that were extracted with the plan's settings."""
    settings = expected_settings(plan)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(shas), 500):
        chunk = shas[start:start + 500]
        for sha, text in conn.exec_driver_sql(STORED_INPUTS.format(marks=",".join("?" * len(chunk))),
                                              (plan.suite["hash"], plan.backend, *chunk)).fetchall():
            inputs = json.loads(text)
            if inputs.get("settings") == settings:
                found[sha] = inputs
    return found


def nearest_directory(tree: Path, path: str) -> str:
    """The directory of `path` that a checkout without it (`tree`) still has: the one whose listing lacks it."""
    parts = path.split("/")[:-1]
    while parts and not (tree / "/".join(parts)).is_dir():
        parts.pop()
    return "/".join(parts)


def needed_missing(missing: list[list[str]], inputs: dict[str, Any] | None) -> list[str]:
    """Of the paths a partial clone lacked ([path, nearest_directory] each), those the extraction could have read: in a
    directory whose entries it loaded from or listed (an import or a glob there would have seen them), or all of them
    when it recorded nothing (it failed)."""
    if inputs is None:
        return [path for path, _directory in missing]
    return [path for path, directory in missing if path in inputs["files"] or directory in inputs["dirs"]]


def record_missing_paths(engine: Engine, run_id: int, missing: list[list[str]]) -> list[str]:
    """Note on the run the paths a partial clone lacked ([path, nearest directory] each); returns those the
    extraction could have read, in which case the run is failed as untestable (the next sweep tries it again)."""
    with engine.begin() as conn:
        row = conn.exec_driver_sql("SELECT b.text FROM runs r LEFT JOIN blobs b ON b.id = r.inputs_blob_id "
                                   "WHERE r.id = ?", (run_id,)).first()
        needed = needed_missing(missing, json.loads(row[0]) if row and row[0] else None)
        conn.exec_driver_sql("UPDATE runs SET missing_paths = ? WHERE id = ?",
                             (json.dumps([path for path, _directory in missing]), run_id))
        if needed:
            conn.exec_driver_sql(
                "UPDATE runs SET status = 'failed', error = ? WHERE id = ?",
                (f"untestable: it could have read {', '.join(needed[:3])}{' ...' if len(needed) > 3 else ''}, "
                 "which the clone lacks", run_id))
    return needed
