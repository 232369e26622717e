"""Storing what Svod printed: one run per ingest-svod call (its files and directories together), one transaction.

Every file's text is kept (svod_files), so nothing read is ever lost; what the readers found is stored beside it:
kernels, stages (trees content-addressed in tinygrad's spelling, canonical documents with tinygrad's), events and
problems. Ingesting the same path again does nothing, unless it was read by an older reader (PARSER_VERSION), in
which case it is read again from its stored text, keeping its run id.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, update

from tgstore import __version__
from tgstore.compare.canonical import document_hash, validate
from tgstore.db.models.svod_tables import (
    SvodEvent,
    SvodKernel,
    SvodParityPair,
    SvodProblem,
    SvodRuleFire,
    SvodRun,
    SvodStage,
    SvodStageMap,
)
from tgstore.nogc import gc_paused
from tgstore.spelling.svod import Speller, kernel_renderer, maps
from tgstore.store.content import ContentStore
from tgstore.store.rows import case_ids, insert_returning_id, now_iso
from tgstore.svod import drawing
from tgstore.svod.log_paths import MAX_FILE_BYTES, SvodLogError, chunks, read_path  # noqa: F401 - re-exported
from tgstore.svod.parity_store import INGEST_PAIRS, forget, refresh
from tgstore.svod.readers import Problem, Stage, SvodLog, read_runs
from tgstore.svod.readers.hints import nothing_printed
from tgstore.svod.readers.sessions import case_from_test, variant_of
from tgstore.svod.tree import text_hash

PARSER_VERSION = 7  # 2: kernel boundaries from Svod's emission order; 3: a run per test, threads, failures;
# 4: pattern matches and the kernel cut's events; 5: stages on kernels by proof only (hash-consed ids are none),
# split lines put back, nextest, BEAM candidates, captured output, Metal code, a run's schedules; 6: Rust 1.88+
# panics, tracing's text formats, programs without a harness, ONNX and unknown skip lines, captured runs stored
# 7: one optimizing thread known only when stated (--svod-threads) or shown by the events' threads
EVENT_CHUNK = 1000
TREE_CHUNK = 1000  # trees spelled and stored at a time (a 100 MB log's 12,000 graph texts held together: 15 MB)


@dataclass
class SvodIngestReport:
    run_id: int
    case: str
    log: SvodLog | None
    skipped: bool = False
    reparsed: bool = False
    commit_filled: bool = False
    svod_commit: str | None = None
    new_trees: int = 0
    problems: list[Problem] = field(default_factory=list)
    parity_pairs: int = 0  # tinygrad runs this Svod run's parity was decided against (svod/parity_store.py)
    parity_left: int = 0  # pairs of this ingest's runs past INGEST_PAIRS, left to `parity-refresh`

    def summary(self) -> dict[str, Any]:
        """What `ingest-svod --json` prints for the path."""
        kernels = []
        for kernel in self.log.kernels if self.log else []:
            merged: dict[str, dict[str, Any]] = {}
            for stage in kernel.stages:
                entry = merged.setdefault(stage.label, {"label": stage.label, "node_count": None, "has_tree": False,
                                                        "has_canonical": False})
                entry["node_count"] = entry["node_count"] if entry["node_count"] is not None else stage.node_count
                entry["has_tree"] |= stage.tree is not None
                entry["has_canonical"] |= stage.canonical is not None
            kernels.append({"index": kernel.index, "name": kernel.name, "test": kernel.test,
                            "stages": list(merged.values())})
        files = [name for name, _kind, _text in self.log.files] if self.log else []
        log = self.log
        return {"svod_run": self.run_id, "case": self.case, "skipped": self.skipped,
                "test": log.test if log else None, "outcome": log.outcome if log else None,
                "panic": {"thread": log.panic.thread, "location": log.panic.location, "message": log.panic.message}
                if log and log.panic
                else None, "failed_kernel": log.failed_kernel if log else None,
                "last_stage": log.last_stage if log else None,
                "unattributed_stages": len(log.unattributed) if log else 0,
                "output_captured": log.captured if log else False, "schedules": log.schedules if log else 0,
                "kernel_order_proven": log.order_proven if log else True,
                "beam_candidates": log.beam_candidates if log else 0,
                "kernels": None if log and log.captured and not log.kernels else kernels,
                "pattern_matches": dict(zip(("tied", "loose"), log.pattern_matches, strict=True)) if log else None,
                "parity_decided_against": self.parity_pairs,
                "problems": [{"line": p.line, "message": p.message,
                              "file": files[p.file] if p.file < len(files) else None} for p in self.problems]}


# CAST from the file's bytes: binding the text would make Python keep a UTF-8 copy of it for as long as it lives
_FILE_BLOB = "INSERT INTO blobs (id, hash, size, text) SELECT ?, ?, ?, CAST(? AS TEXT) WHERE ?"
_FILE_BLOB_PIECES = "INSERT INTO blobs (id, hash, size, text) VALUES (?, ?, ?, zeroblob(?))"
# A larger file is written into its blob a piece at a time, as its UTF-8 bytes (a BLOB value; readers CAST it to
# TEXT): SQLite binds a copy of a value and builds its record from another, 190 MB held for a 100 MB log
WHOLE_FILE_BYTES = 32 * 1024 * 1024


class _FileBlobKeeper:
    """Stores each file as a blob from its bytes, read again a piece at a time after its text was read (the bytes
    are never held whole beside the text, nor bound whole into SQLite past WHOLE_FILE_BYTES). A file that is not
    UTF-8 failed before; a SvodLogError later rolls the blob back. Valid UTF-8 bytes' sha256 is the text's content
    hash. The run's source hash (`source`, svod_runs.source_hash) is made from the same bytes, in the order read:
    sha256 over each file's `len(name):name:size:` (size in characters) and its UTF-8 text."""

    def __init__(self, conn: Connection, store: ContentStore) -> None:
        self.conn, self.store = conn, store
        self.source = hashlib.sha256()

    def __call__(self, path: Path, size: int, text: str) -> None:
        store, name = self.store, str(path)
        file_hash = hashlib.sha256()
        self.source.update(f"{len(name)}:{name}:{len(text)}:".encode())
        whole = size <= WHOLE_FILE_BYTES
        pieces: list[bytes] = []  # a file bound whole: its pieces, kept from this read
        read = 0
        for chunk in chunks(path, size):
            file_hash.update(chunk)
            self.source.update(chunk)
            read += len(chunk)
            if whole:
                pieces.append(chunk)
        if read != size:  # SvodLogError rolls back what was stored
            raise SvodLogError(f"{path}: the file changed while it was read; nothing stored")
        digest = file_hash.hexdigest()
        if digest not in store.lookup("blobs", [digest]):
            blob_id = store.next_id("blobs")
            if whole:
                data = b"".join(pieces)
                pieces.clear()  # not held beside SQLite's copies of `data`
                self.conn.exec_driver_sql(_FILE_BLOB, (blob_id, digest, len(text), data, 1))
                # SQLite keeps a bound value until the next bind
                self.conn.exec_driver_sql(_FILE_BLOB, (0, "", 0, b"", 0))
            else:
                self.conn.exec_driver_sql(_FILE_BLOB_PIECES, (blob_id, digest, len(text), size))
                with self.conn.connection.driver_connection.blobopen("blobs", "text", blob_id) as blob:
                    for chunk in chunks(path, size):
                        blob.write(chunk)  # a file grown past `size` is cut there; one shrunk raises below
                    if blob.tell() != size:
                        raise SvodLogError(f"{path}: the file changed while it was read; nothing stored")
            store.known["blobs"][digest] = blob_id
            store.created.setdefault("blobs", set()).add(digest)
        store.text_hashes[text] = digest


def _one_reading(read: list[tuple[str, str, bool]], store: ContentStore) -> tuple[list[tuple[str, str]], bool]:
    """The files' texts all narrowed or all as they are (read_runs widens all or none), and which: a large log
    narrowed beside small files read as they are narrows them too (a dump directory), unless one holds a
    stand-in itself; then the narrowed ones are widened. Each new text keeps its file's content hash."""
    if not any(n for _name, _text, n in read):
        return [(name, text) for name, text, _n in read], False
    narrowed = [text if n else drawing.narrow(text) for _name, text, n in read]
    every = all(text is not None for text in narrowed)
    texts = [(name, narrowed[i] if every else drawing.widen(text) if n else text, text)
             for i, (name, text, n) in enumerate(read)]
    for _name, new, old in texts:
        if new is not old:  # the old text is let go (the caller drops `read`)
            store.text_hashes[new] = store.text_hashes.pop(old)
    return [(name, new) for name, new, _old in texts], every


def _check(runs: list[SvodLog], where: str) -> None:
    why = nothing_printed(runs)
    if why is not None:
        raise SvodLogError(f"{where}: {why}; nothing stored")


def refresh_stage_map(conn: Connection) -> None:
    """svod_stage_map as maps.toml says (for the parity_matrix query)."""
    conn.execute(delete(SvodStageMap))
    rows = []
    for position, stage in enumerate(maps()["stages"]):
        name = stage.get("pass")
        rows.append({"label": stage["label"], "position": position, "scope": stage["scope"],
                     "pass_name": name.removeprefix("input:") if name else None,
                     "pass_input": bool(name and name.startswith("input:")), "canonical": stage.get("canonical")})
    conn.execute(SvodStageMap.__table__.insert(), rows)


class _Writer:
    def __init__(self, conn: Connection, run_id: int, log: SvodLog) -> None:
        self.conn, self.run_id, self.log = conn, run_id, log
        self.store = ContentStore(conn)
        self.new_trees = 0

    def trees(self, stages: list[Stage]) -> dict[int, str]:
        """svod_trees rows for the stages' trees, TREE_CHUNK trees' texts at a time; the tree hash per stage (by
        id)."""
        rows: dict[str, tuple] = {}
        hashes: dict[int, str] = {}
        done: dict[int, str] = {}  # a Tree shared by stages (parsed once) is spelled once
        for stage in stages:
            if stage.tree is None:
                continue
            if id(stage.tree) in done:
                hashes[id(stage)] = done[id(stage.tree)]
                continue
            speller = Speller()
            text, count, root_op = stage.tree.graph_text(speller)  # graph_text(graph(speller)), made at once
            h = text_hash(text)
            hashes[id(stage)] = done[id(stage.tree)] = h
            rows[h] = (count, root_op, text, json.dumps(speller.unknown) if speller.unknown else None)
            if len(rows) >= TREE_CHUNK:
                self._ensure_trees(rows)
        self._ensure_trees(rows)
        return hashes

    def _ensure_trees(self, rows: dict[str, tuple]) -> None:
        self.new_trees += len(self.store.ensure("svod_trees", ("node_count", "root_op", "graph", "unknown"), rows))
        rows.clear()

    def canonical(self, stages: list[Stage]) -> dict[int, str]:
        rows, hashes = {}, {}
        for stage in stages:
            document = stage.canonical
            if document is None:
                continue
            if not isinstance(document, dict):
                self.log.problems.append(Problem(stage.file, stage.line, f"canonical {stage.label!r}: not a JSON "
                                                 "object; kept as text"))
                stage.tree_text, stage.canonical = json.dumps(document), None
                continue
            for problem in validate(document)[:3]:
                self.log.problems.append(Problem(stage.file, stage.line, f"canonical {stage.label!r}: {problem}"))
            try:
                h = document_hash(document)
            except (TypeError, ValueError) as e:
                self.log.problems.append(Problem(stage.file, stage.line, f"canonical {stage.label!r}: {e}"))
                continue
            hashes[id(stage)] = h
            nodes = document.get("nodes") or document.get("items") or []
            rows[h] = (str(document.get("stage", stage.label)), len(nodes),
                       json.dumps(document, separators=(",", ":"), ensure_ascii=False), None, None)
        self.store.ensure("canonical_docs", ("stage", "node_count", "document", "unsupported", "reason"), rows)
        return hashes

    def write(self) -> None:
        log, store = self.log, self.store
        stages = [(None, s) for s in log.schedule_stages] + [(k.index, s) for k in log.kernels for s in k.stages]
        # stages no kernel or schedule holds: unattributed rows (an unplaced one, of no stage Svod emits or a dump body
        # of blocks open at once, is kept at its line too, with its problem)
        loose = [*log.unattributed, *log.unplaced]
        unattributed = {id(s) for s in loose}
        stages += [(None, s) for s in loose]
        tree_hashes = self.trees([s for _k, s in stages])
        doc_hashes = self.canonical([s for _k, s in stages])
        store.blobs([s.tree_text for _k, s in stages] + [k.code for k in log.kernels])
        store.insert("svod_kernels", ("run_id", "kernel_index", "test", "name", "file_position", "line_no",
                                      "code_blob_id", "code_kind", "renderer", "schedule"),
                     [(self.run_id, k.index, k.test, k.name, k.file, k.line, store.blob_id(k.code), k.code_kind,
                       kernel_renderer(variant_of(k.test), k.code_kind), k.schedule) for k in log.kernels])
        schedule_of = {k.index: k.schedule for k in log.kernels}
        for start in range(0, len(stages), EVENT_CHUNK):  # a chunk's rows at a time, as the events'
            store.insert("svod_stages", ("run_id", "seq", "kernel_index", "label", "source", "file_position",
                                         "line_no", "node_count", "tree_id", "text_blob_id", "canonical_doc_id",
                                         "message", "elapsed_ms", "unattributed", "fragment", "schedule"),
                         [(self.run_id, seq, kernel, s.label, s.source, s.file, s.line, s.node_count,
                           store.id("svod_trees", tree_hashes.get(id(s))), store.blob_id(s.tree_text),
                           store.id("canonical_docs", doc_hashes.get(id(s))), s.message, s.elapsed_ms,
                           id(s) in unattributed, s.fragment, schedule_of.get(kernel, s.schedule))
                          for seq, (kernel, s) in enumerate(stages[start:start + EVENT_CHUNK], start)])
        for start in range(0, len(log.events), EVENT_CHUNK):  # the fields' JSON of a chunk at a time, not all of it
            store.insert("svod_events", ("run_id", "file_position", "line_no", "timestamp", "level", "target",
                                         "message", "fields"),
                         [(self.run_id, e.file, e.line, e.timestamp, e.level, e.target, e.message, e.fields_json())
                          for e in log.events[start:start + EVENT_CHUNK]])
        seqs = {id(s): seq for seq, (_kernel, s) in enumerate(stages)}
        fires = [(kernel, seqs[id(s)], s.label, s.fires, id(s) in unattributed) for kernel, s in stages if s.fires]
        fires += [(k.index, None, "codegen", k.code_fires, False) for k in log.kernels if k.code_fires]
        fires += [(None, None, None, f, True) for f in log.loose_fires]
        rows = [(kernel, stage_seq, None if loose else label, None if loose else f.since, op_key, count, f.file,
                 f.first_line, f.last_line, loose)
                for kernel, stage_seq, label, f, loose in fires for op_key, count in sorted(f.counts.items())]
        store.insert("svod_rule_fires", ("run_id", "seq", "kernel_index", "stage_seq", "label", "since", "op_key",
                                         "count", "file_position", "first_line", "last_line", "unattributed"),
                     [(self.run_id, seq, *row) for seq, row in enumerate(rows)])
        store.insert("svod_problems", ("run_id", "file_position", "line_no", "message", "text"),
                     [(self.run_id, p.file, p.line, p.message, p.text) for p in log.problems])


def _counts(log: SvodLog) -> dict[str, int]:
    return {"file_count": len(log.files), "line_count": sum(t.count("\n") + 1 for _n, _k, t in log.files),
            "event_count": len(log.events), "kernel_count": len(log.kernels), "stage_count": log.stage_count,
            "raw_line_count": log.raw_lines, "problem_count": len(log.problems),
            "kind": log.files[0][1] if len(log.files) == 1 else "dir", "parser_version": PARSER_VERSION,
            "test": log.test, "variant": variant_of(log.test), "outcome": log.outcome,
            "panic_location": log.panic.location if log.panic else None,
            "panic_message": log.panic.message if log.panic else None, "failed_kernel": log.failed_kernel,
            "panic_thread": log.panic.thread[:500] if log.panic else None,
            "last_stage": log.last_stage, "output_captured": log.captured, "schedule_count": log.schedules}


def ingest_svod(engine: Engine, path: Path | str | list[Path], case: str, svod_commit: str | None = None
                ) -> SvodIngestReport:
    """`ingest_svod_runs` for callers that store one run (a log of one test, or no test): its report."""
    return ingest_svod_runs(engine, path, case, svod_commit)[0]


def ingest_svod_runs(engine: Engine, path: Path | str | list[Path], case: str | None, svod_commit: str | None = None,
                     *, tests: str | None = None, case_from: bool = False,
                     svod_threads: int | None = None) -> list[SvodIngestReport]:
    """Read the files and directories at `path` (one path or several: a log and its SVOD_DUMP_LINEAR /
    SVOD_DUMP_LLVM_IR directories; see tgstore.svod.readers) and store one Svod run per libtest test in them (one
    run when they hold no test), all for `case`, or each for the case its test name maps to (`case_from`,
    sessions.case_from_test). `tests` keeps the tests whose name contains it (cargo's own filter rule);
    `svod_threads` is the SVOD_THREADS the user says the run had (the log cannot show one thread; a reading that
    counts on it is another run of the files). One
    transaction; SvodLogError (nothing written) when a path cannot be read, nothing holds Svod output, no test
    matches."""
    paths = [Path(p) for p in path] if isinstance(path, list) else [Path(path)]
    where = ", ".join(str(p) for p in paths)
    reports = []
    # a 30 MB log makes some 100,000 objects that live until stored: the collector's passes cost a fifth of reading
    with gc_paused(), engine.begin() as conn:  # a SvodLogError below rolls back the texts stored
        store = ContentStore(conn)
        keep = _FileBlobKeeper(conn, store)
        read: list[tuple[str, str, bool]] = []
        for one in paths:
            read += [(str(one / name) if one.is_dir() else str(one), text, narrowed)
                     for name, text, narrowed in read_path(one, keep, empty_ok=len(paths) > 1, narrow=True)]
        files, narrowed = _one_reading(read, store)
        del read
        path = paths[0] if len(paths) == 1 else Path(os.path.commonpath([os.path.abspath(p) for p in paths]))
        digest = keep.source.hexdigest()  # the files' source hash (_FileBlobKeeper)
        if svod_threads is not None:  # read with what the user says: not the reading of the files alone
            digest = hashlib.sha256(f"{digest}\0svod-threads={svod_threads}".encode()).hexdigest()
        runs = read_runs(files, threads_stated=svod_threads, narrowed=narrowed)
        _check(runs, where)
        if tests is not None:
            runs = [log for log in runs if log.test is not None and tests in log.test]
            if not runs:
                raise SvodLogError(f"{where}: no test whose name contains {tests!r}; nothing stored")
        refresh_stage_map(conn)
        test_cases = {case_from_test(log.test) for log in runs if log.test}
        for log in runs:
            run_case = case_from_test(log.test) if case_from and log.test else case
            if run_case is None and log.tests_unproven and len(test_cases) == 1:
                run_case = next(iter(test_cases))  # output of tests no proof tells apart, all of one case
            if run_case is None:
                raise SvodLogError(f"{where}: a run outside any libtest test has no test name to map to a case; "
                                   "give --case; nothing stored")
            reports.append(_store_run(conn, store, log, run_case, svod_commit, digest, path))
        _decide_parity(conn, reports)
    return reports


def _decide_parity(conn: Connection, reports: list[SvodIngestReport]) -> None:
    """Parity of the runs against every current tinygrad run holding their case, decided once and stored (pairs
    already decided by this DECIDER are kept)."""
    runs = [r.run_id for r in reports]
    decided = refresh(conn, svod_runs=runs, limit=INGEST_PAIRS)
    for report in reports:
        report.parity_left = decided.left
    counts: dict[int, int] = {}
    for svod_run, in conn.execute(select(SvodParityPair.svod_run).where(SvodParityPair.svod_run.in_(runs))):
        counts[svod_run] = counts.get(svod_run, 0) + 1
    for report in reports:
        report.parity_pairs = counts.get(report.run_id, 0)


def _store_run(conn: Connection, store: ContentStore, log: SvodLog, case: str, svod_commit: str | None, digest: str,
               path: Path) -> SvodIngestReport:
    run_hash = digest if log.test is None else hashlib.sha256(f"{digest}\0{log.test}".encode()).hexdigest()
    case_id = case_ids(conn, [case])[case]
    found = conn.execute(select(SvodRun.id, SvodRun.svod_commit, SvodRun.parser_version)
                         .where(SvodRun.case_id == case_id, SvodRun.source_hash == run_hash)).first()
    if found is not None and found.parser_version >= PARSER_VERSION:
        filled = svod_commit is not None and found.svod_commit is None
        if filled:
            conn.execute(update(SvodRun).where(SvodRun.id == found.id).values(svod_commit=svod_commit))
        return SvodIngestReport(found.id, case, None, skipped=True, commit_filled=filled,
                                svod_commit=svod_commit or found.svod_commit)
    if found is not None:  # read by an older reader: read again, same run id
        run_id = found.id
        for table in (SvodKernel, SvodStage, SvodEvent, SvodProblem, SvodRuleFire):
            conn.execute(delete(table).where(table.run_id == run_id))
        forget(conn, run_id)  # its parity is decided again from what is read now
        conn.execute(update(SvodRun).where(SvodRun.id == run_id).values(
            **_counts(log), svod_commit=svod_commit or found.svod_commit, ingested_at=now_iso()))
    else:
        run_id = insert_returning_id(conn, SvodRun, case_id=case_id, svod_commit=svod_commit, source_hash=run_hash,
                                     source_path=os.path.abspath(path), ingested_at=now_iso(),
                                     tgstore_version=__version__, **_counts(log))
        store.blobs([text for _name, _kind, text in log.files])
        store.insert("svod_files", ("run_id", "position", "path", "kind", "blob_id"),
                     [(run_id, i, name, kind, store.blob_id(text)) for i, (name, kind, text) in
                      enumerate(log.files)])
    writer = _Writer(conn, run_id, log)
    writer.write()
    conn.execute(update(SvodRun).where(SvodRun.id == run_id).values(problem_count=len(log.problems)))
    return SvodIngestReport(run_id, case, log, reparsed=found is not None, svod_commit=svod_commit,
                            new_trees=writer.new_trees, problems=log.problems)


__all__ = ["SvodLogError", "SvodIngestReport", "ingest_svod", "ingest_svod_runs", "read_path"]
