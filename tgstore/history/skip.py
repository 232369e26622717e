"""Skip by what ran: a commit whose tree gives the extraction the same bytes to read as its parent's stored run read,
on a machine that identifies as that run's did, is not extracted; that run is copied to it (`store.runs.copy_run`,
with `copied_from` and the reason).

Each extraction records its inputs (`extract/child/inputs.py`): the git blob id of every file under `tinygrad/` it
loaded, opened or stat()ed, the entries of every directory it listed or loaded a module from, every package path it
looked for and did not find (an open, a stat, an import's probe), the version files, its settings (the table in
`extract/child/settings.py`) and what it used of the machine (`extract/child/toolchain.py`: Python, the CPU, the
programs it started such as clang, the libraries it loaded such as libLLVM, files and directories outside the
package). Those are the only bytes of the commit an extraction sees (its checkout holds nothing else of the commit).
So when a commit's tree has the same blob at each of those paths, the same entries in each of those directories and
still nothing at each absent path, and the machine that would extract it identifies each machine key alike, an
extraction of it reads exactly what the stored one read, and stores the same facts. Anything else means an
extraction: a changed file it read, a file that appears where it looked or where an import or a glob would find it,
a changed version file, other settings, another clang or libLLVM.

What is not proven, and why a run says so: what a program the run started reads (clang's headers and libraries,
git's repository) is outside the audit hook's sight; the run lists those programs (`subprocesses`) and their
identity (path, bytes, `--version`) is compared, not what they read. docs/design.md, "What a skip cannot prove".

The check reads git's trees only (`git ls-tree`), never a file's content, so it works in a blobless clone too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from tgstore.extract.child.inputs import listing_hash
from tgstore.git import Tree
from tgstore.store.runs import StoredRun


def why_not_same(tree: Tree, inputs: dict[str, Any]) -> str | None:
    """None when an extraction of `tree` reads what the run that recorded `inputs` read; else the first difference,
    in words."""
    for path, blob in sorted({**inputs["files"], **inputs.get("versions", {})}.items()):
        if tree.blob(path) != blob:
            return f"{path} {'appeared' if blob is None else 'changed' if path in tree.entries else 'is gone'}"
    for directory, digest in sorted(inputs["dirs"].items()):
        if listing_hash(tree.listing(directory)) != digest:
            return f"the entries of {directory}/ changed"
    for path in inputs.get("absent", []):
        if exists(tree, path):
            return f"{path}, which its run looked for and did not find, appeared"
    for directory in inputs.get("present", []):
        if not tree.listing(directory):
            return f"{directory}/ is gone"
    return None


def exists(tree: Tree, path: str) -> bool:
    """Whether a checkout of `tree` has a file or a directory at `path`."""
    return path in tree.entries or bool(tree.listing(path))


def touches(before: Tree, after: Tree, inputs: dict[str, Any]) -> bool:
    """Whether going from `before` to `after` changes anything a run with `inputs` read: a guess at whether a commit
    had better wait for its parent's run (to be copied from it) or be extracted at once."""
    changed = {p for p in before.entries.keys() | after.entries.keys() if before.entries.get(p) != after.entries.get(p)}
    if changed & (inputs["files"].keys() | inputs.get("versions", {}).keys()):
        return True
    moved = {p for p in changed if (p in before.entries) != (p in after.entries)}
    looked = set(inputs.get("absent", [])) | set(inputs.get("present", []))
    if any(p in looked or looked & set(ancestors(p)) for p in moved):
        return True
    dirs = {d for p in moved for d in ancestors(p)} & inputs["dirs"].keys()
    return any(before.listing(d) != after.listing(d) for d in dirs)


def ancestors(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


STORED_INPUTS = """
SELECT c.sha, r.id, r.status, r.renderers, r.debug_level, b.text FROM runs r
JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN suites s ON s.id = r.suite_id
JOIN blobs b ON b.id = r.inputs_blob_id
WHERE s.hash = ? AND r.backend = ? AND r.status = 'ok' AND r.is_current = 1 AND c.sha IN ({marks})
"""


def stored_inputs(conn: Connection, asked: dict[str, Any], shas: list[str]) -> dict[str, dict[str, Any]]:
    """The inputs of those commits' current ok runs that hold the `asked` settings and hold nothing their own
    extraction did not make (a renderer carried from the run it replaced was extracted from other inputs). Each run's
    inputs blob is read once: its settings say what the run holds (store.runs.StoredRun)."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(shas), 500):
        chunk = shas[start:start + 500]
        for sha, run_id, status, renderers, debug_level, text in conn.exec_driver_sql(
                STORED_INPUTS.format(marks=",".join("?" * len(chunk))), (asked["suite"], asked["backend"], *chunk)):
            inputs = json.loads(text)
            if "files" not in inputs or "machine" not in inputs:
                continue
            settings = inputs.get("settings")
            run = StoredRun(run_id, status, renderers, json.dumps(settings) if settings is not None else None,
                            debug_level, asked["suite"], asked["backend"])
            if run.covers(asked) and set((settings or {}).get("renderers", [])) == set(run.settings["renderers"]):
                found[sha] = inputs
    return found


STORED_MACHINES = """
SELECT c.sha, json_extract(b.text, '$.machine') FROM runs r
JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN suites s ON s.id = r.suite_id
JOIN blobs b ON b.id = r.inputs_blob_id
WHERE s.hash = ? AND r.backend = ? AND r.is_current = 1 AND c.sha IN ({marks})
"""


def stored_machines(conn: Connection, asked: dict[str, Any], shas: list[str]) -> dict[str, dict[str, Any] | None]:
    """What those commits' current runs recorded of the machine they used (toolchain keys and identities)."""
    found: dict[str, dict[str, Any] | None] = {}
    for start in range(0, len(shas), 500):
        chunk = shas[start:start + 500]
        for sha, text in conn.exec_driver_sql(STORED_MACHINES.format(marks=",".join("?" * len(chunk))),
                                              (asked["suite"], asked["backend"], *chunk)).fetchall():
            found[sha] = json.loads(text) if text else None
    return found


def machine_differs(recorded: dict[str, str | None] | None, probed: list[dict[str, str | None]]) -> str | None:
    """None when every machine that would extract (`probed`: each one's identities of the recorded keys,
    toolchain.identify) identifies each key as the run that `recorded` them did; else the first difference."""
    if recorded is None:
        return "its run did not record the machine it used"
    if not probed:
        return "no machine to extract on was probed"
    for key, identity in sorted(recorded.items()):
        for found in probed:
            if found.get(key) != identity:
                return f"{key} is {found.get(key) or 'absent'} where it would be extracted (its run had " \
                       f"{identity or 'none'})"
    return None


def nearest_directory(tree: Path, path: str) -> str:
    """The directory of `path` that a checkout without it (`tree`) still has: the one whose listing lacks it."""
    parts = path.split("/")[:-1]
    while parts and not (tree / "/".join(parts)).is_dir():
        parts.pop()
    return "/".join(parts)


def needed_missing(missing: list[list[str]], inputs: dict[str, Any] | None) -> list[str]:
    """Of the paths a partial clone lacked ([path, nearest_directory] each), those the extraction could have read: in a
    directory whose entries it loaded from or listed (an import or a glob there would have seen them), at or under a
    path it looked for and did not find (it would have found it), or all of them when it recorded nothing (it
    failed)."""
    if inputs is None or "files" not in inputs:
        return [path for path, _directory in missing]
    absent = set(inputs.get("absent", []))
    return [path for path, directory in missing if path in inputs["files"] or directory in inputs["dirs"]
            or path in absent or absent & set(ancestors(path))]


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
