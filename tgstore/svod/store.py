"""Storing a Svod test log in the database: one transaction per log.

The whole log text is kept as a blob (so nothing in it is ever lost, cargo output and malformed lines included);
what the parser (tgstore.svod.parse) found is stored beside it: events, ``[per-stage]`` node counts, ``[dump-stage]``
trees, kernels, ``pattern matched`` counts and the problems, each with its 1-based line number. Trees are
content-addressed by their id-free structure text, so the same tree from two runs is stored once. Re-ingesting a log
already stored for the same case is a no-op.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, insert, select, update

from tgstore import __version__
from tgstore.db.models import (
    Case,
    SvodEvent,
    SvodEventTree,
    SvodKernel,
    SvodPatternMatch,
    SvodPerStage,
    SvodProblem,
    SvodRun,
    SvodStageDump,
    SvodTree,
)
from tgstore.ingest import get_or_create, insert_returning_id, now_iso
from tgstore.store import ContentStore, sha256_text
from tgstore.svod.parse import TREE_FIELDS, ParseProblem, SvodLog, Tree, parse_svod_log

__all__ = ["SvodLogError", "SvodIngestReport", "read_svod_log", "ingest_svod_log", "ingest_svod_text"]


class SvodLogError(Exception):
    """A file that cannot be stored at all (missing, not text, empty, not a Svod log); nothing was written."""


@dataclass
class SvodIngestReport:
    path: str
    case: str
    run_id: int
    svod_commit: str | None
    skipped: bool  # the same log was already stored for this case: nothing written (but see commit_filled)
    lines: int = 0
    events: int = 0
    kernels: int = 0
    stage_dumps: int = 0
    per_stage: int = 0
    pattern_matches: int = 0  # total "pattern matched" events
    raw_lines: int = 0
    new_trees: int = 0
    problems: list[ParseProblem] = field(default_factory=list)
    commit_filled: bool = False  # a re-ingest named the Svod commit an earlier ingest did not know


def read_svod_log(path: Path | str) -> str:
    """The text of a log file; SvodLogError when it is missing, not UTF-8 text, or empty."""
    path = Path(path)
    if not path.is_file():
        raise SvodLogError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    data = path.read_bytes()
    if not data.strip():
        raise SvodLogError(f"{path}: the file is empty; nothing stored")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SvodLogError(f"{path}: UTF-16 text (a PowerShell redirect?); convert it to UTF-8; nothing stored")
    if b"\x00" in data:
        raise SvodLogError(f"{path}: not a text file (it contains NUL bytes); nothing stored")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SvodLogError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); nothing stored") from None


def _check_log(log: SvodLog, where: str) -> None:
    if not (log.events or log.per_stage or log.stage_dumps or log.problems):
        raise SvodLogError(f"{where}: no Svod tracing events, [per-stage] lines or [dump-stage] blocks found "
                           "(not a Svod test log? run it with RUST_LOG=...=debug and --nocapture); nothing stored")


class _TreeStore:
    """Svod trees by structure hash, within one transaction."""

    def __init__(self, conn: Connection, blobs: ContentStore) -> None:
        self.conn = conn
        self.blobs = blobs
        self.ids: dict[str, int] = {}
        self.new = 0

    def tree(self, tree: Tree | None) -> int | None:
        if tree is None or not tree.nodes:
            return None
        text = tree.structure_text()
        hash_ = sha256_text(text)
        if hash_ in self.ids:
            return self.ids[hash_]
        tree_id = self.conn.execute(select(SvodTree.id).where(SvodTree.hash == hash_)).scalar()
        if tree_id is None:
            self.new += 1
            root = tree.root
            tree_id = insert_returning_id(self.conn, SvodTree, hash=hash_, node_count=tree.node_count(),
                                          root_op=root.op if root else None, structure_blob_id=self.blobs.blob(text))
        self.ids[hash_] = tree_id
        return tree_id


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def ingest_svod_text(engine: Engine, text: str, case: str, svod_commit: str | None = None,
                     source_path: str | None = None) -> SvodIngestReport:
    """Store the log `text` for `case` in one transaction (see ingest_svod_log)."""
    where = source_path or "<log>"
    if not text.strip():
        raise SvodLogError(f"{where}: the log is empty; nothing stored")
    if not case or not case.strip():
        raise SvodLogError("a case name is required (the tinygrad case this Svod test corresponds to)")
    log = parse_svod_log(text)
    _check_log(log, where)
    svod_commit = svod_commit or None
    log_hash = sha256_text(text)
    line_count = len(text.splitlines())
    with engine.begin() as conn:
        case_id = get_or_create(conn, Case, {"name": case})
        existing = conn.execute(select(SvodRun.id, SvodRun.svod_commit)
                                .where(SvodRun.case_id == case_id, SvodRun.log_hash == log_hash)).first()
        if existing is not None:
            filled = False
            if existing.svod_commit is None and svod_commit is not None:
                conn.execute(update(SvodRun).where(SvodRun.id == existing.id).values(svod_commit=svod_commit))
                filled = True
            return SvodIngestReport(where, case, existing.id, existing.svod_commit or svod_commit, skipped=True,
                                    lines=line_count, problems=list(log.problems), commit_filled=filled)

        blobs = ContentStore(conn)
        trees = _TreeStore(conn, blobs)
        run_id = insert_returning_id(
            conn, SvodRun, case_id=case_id, svod_commit=svod_commit, log_blob_id=blobs.blob(text), log_hash=log_hash,
            source_path=source_path, ingested_at=now_iso(), tgstore_version=__version__, line_count=line_count,
            event_count=len(log.events), kernel_count=len(log.kernels), stage_dump_count=len(log.stage_dumps),
            per_stage_count=len(log.per_stage), raw_line_count=len(log.raw_lines),
            problem_count=len(log.problems))

        events, event_trees = [], []
        for ev in log.events:
            primary = next((name for name in TREE_FIELDS if name in ev.trees), None)
            for name, tree in ev.trees.items():
                event_trees.append({"run_id": run_id, "line_no": ev.line_no, "field": name,
                                    "tree_id": trees.tree(tree)})
            # Parsed trees live in svod_trees; everything else (unparsable tree text included) stays in `fields`.
            fields = {k: v for k, v in ev.fields.items() if k not in ev.trees}
            events.append({
                "run_id": run_id, "line_no": ev.line_no, "timestamp": ev.timestamp, "level": ev.level,
                "target": ev.target, "message": ev.message, "elapsed_ms": ev.elapsed_ms, "node_count": ev.node_count,
                "kernel_index": ev.kernel_index, "tree_field": primary,
                "tree_id": trees.tree(ev.trees[primary]) if primary else None,
                "fields": _json(fields), "extra": _json(ev.extra) if ev.extra else None})
        if events:
            conn.execute(insert(SvodEvent), events)
        if event_trees:
            conn.execute(insert(SvodEventTree), event_trees)

        if log.stage_dumps:
            conn.execute(insert(SvodStageDump), [
                {"run_id": run_id, "line_no": d.line_no, "end_line_no": d.end_line_no, "kernel_index": d.kernel_index,
                 "label": d.label, "tree_id": trees.tree(d.tree)} for d in log.stage_dumps])
        if log.per_stage:
            conn.execute(insert(SvodPerStage), [
                {"run_id": run_id, "line_no": p.line_no, "kernel_index": p.kernel_index, "label": p.label,
                 "node_count": p.node_count} for p in log.per_stage])

        by_line = {ev.line_no: ev for ev in log.events}
        kernels = []
        for k in log.kernels:
            start = by_line.get(k.line_no)
            name = start.fields.get("kernel") if start is not None else None
            kernels.append({
                "run_id": run_id, "kernel_index": k.index, "line_no": k.line_no,
                "name": name if isinstance(name, str) else None, "initial_tree_id": trees.tree(k.initial),
                "pre_tree_id": trees.tree(k.pre), "optimized_tree_id": trees.tree(k.optimized),
                "code_blob_id": blobs.blob(k.generated_code)})
        if kernels:
            conn.execute(insert(SvodKernel), kernels)

        if log.pattern_matches:
            conn.execute(insert(SvodPatternMatch), [{"run_id": run_id, "op_key": key, "count": n}
                                                    for key, n in sorted(log.pattern_matches.items())])
        if log.problems:
            conn.execute(insert(SvodProblem), [{"run_id": run_id, "line_no": p.line_no, "message": p.message,
                                                "text": p.text} for p in log.problems])
        return SvodIngestReport(
            where, case, run_id, svod_commit, skipped=False, lines=line_count, events=len(log.events),
            kernels=len(log.kernels), stage_dumps=len(log.stage_dumps), per_stage=len(log.per_stage),
            pattern_matches=sum(log.pattern_matches.values()), raw_lines=len(log.raw_lines), new_trees=trees.new,
            problems=list(log.problems))


def ingest_svod_log(engine: Engine, path: Path | str, case: str, svod_commit: str | None = None) -> SvodIngestReport:
    """Store the Svod test log at `path` for `case` (a tinygrad case name, e.g. "add") in one transaction.

    The problems the parser found (malformed JSON lines, unterminated dumps, ...) are stored in `svod_problems` and
    returned in the report; everything else in the log is kept. Raises SvodLogError, writing nothing, for a file that
    is missing, not text, empty, or holds nothing Svod printed; DatabaseLocked when another writer holds the lock.
    """
    return ingest_svod_text(engine, read_svod_log(path), case, svod_commit, source_path=str(path))
