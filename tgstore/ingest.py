"""Storing a bundle in the database: one transaction per bundle, artifacts content-addressed.

A bundle's run either lands whole or not at all. Identical artifacts (text blobs, kernel ASTs, linearized UOps,
whole case results, pattern sets) are found by hash and reused, so re-ingesting an unchanged commit adds only its
`runs` and `run_cases` rows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from tgstore import __version__
from tgstore.bundle import Bundle
from tgstore.db.models import (
    Blob,
    Case,
    CaseMissing,
    CaseResult,
    Kernel,
    Linear,
    LinearUop,
    Pattern,
    PatternMatch,
    PatternSet,
    PatternSetMember,
    Program,
    Run,
    RunCase,
    RunMissing,
    ScheduleItem,
    Suite,
    TinygradCommit,
    UopEdge,
    UopNode,
)
from tgstore.history import to_utc, version_key

STDERR_KEEP = 64 * 1024


def insert_returning_id(conn: Connection, table, **values: Any) -> int:
    return conn.execute(insert(table).values(**values)).inserted_primary_key[0]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_hash(value: Any) -> str:
    """Hash of a canonical JSON encoding: equal content, equal hash, whatever the key order."""
    return sha256_text(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def commit_key(tinygrad: dict[str, Any]) -> str:
    """The `tinygrad_commits.sha` of a bundle's tinygrad: its git sha (plus its tree hash when the checkout has
    uncommitted changes), else its source tree hash."""
    git = tinygrad.get("git") or {}
    if git.get("sha") and git.get("dirty"):
        # a checkout with uncommitted changes to tinygrad/ is not that commit: one key per distinct tree
        return f"{git['sha']}+{tinygrad['tree_hash'][:16]}"
    if git.get("sha"):
        return git["sha"]
    if not tinygrad.get("tree_hash"):
        raise ValueError("the bundle's header names neither a git sha nor a tree hash for its tinygrad")
    return f"tree:{tinygrad['tree_hash']}"


def kernel_name(programs: list[dict[str, Any]]) -> str | None:
    """The kernel's function name as the C renderer named it, else as the first renderer that named it did."""
    named = [p for p in programs if p.get("name")]
    return next((p["name"] for p in named if p.get("renderer") == "C"), named[0]["name"] if named else None)


@dataclass
class IngestReport:
    run_id: int | None
    commit: str
    status: str
    cases: int
    failed_cases: int
    new_case_results: int
    skipped: bool = False
    kept_run_id: int | None = None  # the better run that stayed current; this one was stored as an attempt
    error: str | None = None


@dataclass
class ExtractionOutcome:
    """How the child process ended, as far as ingestion cares (see tgstore.extract.runner.ExtractionResult)."""

    status: str  # ok | failed | timeout
    returncode: int | None = None
    stderr: str = ""


class ArtifactStore:
    """Hash -> id lookups and inserts inside one transaction."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.blob_ids: dict[str, int] = {}
        self.new_case_results = 0

    def _find(self, table, hash_: str) -> int | None:
        return self.conn.execute(select(table.id).where(table.hash == hash_)).scalar()

    def blob(self, text: str | None) -> int | None:
        if text is None:
            return None
        hash_ = sha256_text(text)
        if hash_ in self.blob_ids:
            return self.blob_ids[hash_]
        blob_id = self._find(Blob, hash_)
        if blob_id is None:
            blob_id = insert_returning_id(self.conn, Blob, hash=hash_, size=len(text), text=text)
        self.blob_ids[hash_] = blob_id
        return blob_id

    def kernel(self, item: dict[str, Any]) -> tuple[int, str]:
        nodes = item.get("nodes") or []
        graph = [[n.get("op"), n.get("dtype"), n.get("arg"), list(n.get("src") or [])] for n in nodes]
        hash_ = content_hash({"root": item.get("root_op"), "graph": graph, "pyrender": item.get("pyrender"),
                              "ast_text": item.get("ast_text")})
        kernel_id = self._find(Kernel, hash_)
        if kernel_id is None:
            kernel_id = insert_returning_id(
                self.conn, Kernel, hash=hash_, name=kernel_name(item.get("programs") or []),
                root_op=item.get("root_op") or (nodes[-1]["op"] if nodes else "?"),
                node_count=len(nodes), ast_text_blob_id=self.blob(item.get("ast_text")),
                pyrender_blob_id=self.blob(item.get("pyrender")))
            if nodes:
                self.conn.execute(insert(UopNode), [
                    {"kernel_id": kernel_id, "idx": i, "op": op, "dtype": dtype, "arg": arg}
                    for i, (op, dtype, arg, _src) in enumerate(graph)])
                edges = [{"kernel_id": kernel_id, "parent_idx": i, "src_pos": pos, "child_idx": child}
                         for i, (_op, _dtype, _arg, src) in enumerate(graph) for pos, child in enumerate(src)]
                if edges:
                    self.conn.execute(insert(UopEdge), edges)
        return kernel_id, hash_

    def linear(self, uops: list[dict[str, Any]] | None) -> tuple[int | None, str | None]:
        if uops is None:
            return None, None
        rows = [[u.get("op"), u.get("dtype"), u.get("arg"), ",".join(str(s) for s in u.get("src") or [])] for u in uops]
        hash_ = content_hash(rows)
        linear_id = self._find(Linear, hash_)
        if linear_id is None:
            linear_id = insert_returning_id(self.conn, Linear, hash=hash_, uop_count=len(rows))
            if rows:
                self.conn.execute(insert(LinearUop), [
                    {"linear_id": linear_id, "idx": i, "op": op, "dtype": dtype, "arg": arg, "src": src}
                    for i, (op, dtype, arg, src) in enumerate(rows)])
        return linear_id, hash_

    def pattern(self, record: dict[str, Any]) -> tuple[int, str]:
        values = {"matcher": record.get("matcher"), "ops": record.get("ops"), "upat": record.get("upat"),
                  "function_name": record.get("function"), "file": record.get("file"), "line": record.get("line")}
        hash_ = content_hash(values)
        pattern_id = self._find(Pattern, hash_)
        if pattern_id is None:
            pattern_id = insert_returning_id(self.conn, Pattern, hash=hash_, **values)
        return pattern_id, hash_

    def pattern_set(self, pattern_ids: dict[str, int]) -> int | None:
        if not pattern_ids:
            return None
        hash_ = content_hash(sorted(pattern_ids))  # keyed by pattern hash
        set_id = self._find(PatternSet, hash_)
        if set_id is None:
            set_id = insert_returning_id(self.conn, PatternSet, hash=hash_, pattern_count=len(pattern_ids))
            self.conn.execute(insert(PatternSetMember), [{"pattern_set_id": set_id, "pattern_id": pid}
                                                         for pid in sorted(set(pattern_ids.values()))])
        return set_id

    @staticmethod
    def _merge_matches(records: list[dict[str, Any]], patterns: dict[str, tuple[int, str]]
                       ) -> list[tuple[str, int, int, int | None]]:
        """(pattern hash, pattern id, matches, tries), one per stored pattern: rules that read the same (built in a
        loop at one line, say) are one stored pattern, so their counts add up."""
        merged: dict[str, list] = {}
        for record in records:
            if record.get("pattern") not in patterns:
                continue
            pattern_id, pattern_hash = patterns[record["pattern"]]
            entry = merged.setdefault(pattern_hash, [pattern_hash, pattern_id, 0, None])
            entry[2] += record.get("matches") or 0
            if record.get("tries") is not None:
                entry[3] = (entry[3] or 0) + record["tries"]
        return sorted(tuple(entry) for entry in merged.values())

    def case_result(self, case: dict[str, Any], patterns: dict[str, tuple[int, str]]) -> int:
        """Store (or find) the content of one case record; returns the case_results id."""
        items = []
        for item in case.get("schedule") or []:
            kernel_id, kernel_hash = self.kernel(item)
            programs = []
            for program in item.get("programs") or []:
                linear_id, linear_hash = self.linear(program.get("uops"))
                source_id = self.blob(program.get("source"))
                programs.append((program, linear_id, linear_hash, source_id))
            items.append((item, kernel_id, kernel_hash, programs))
        matches = self._merge_matches(case.get("matches") or [], patterns)
        missing = sorted((m.get("feature") or "?", m.get("reason")) for m in case.get("missing") or [])
        hash_ = content_hash({
            "status": case.get("status"),
            "schedule": [[item.get("position", i), item.get("root_op"), kernel_hash,
                          [[p.get("renderer"), p.get("name"), sha256_text(p["source"]) if p.get("source") else None,
                            linear_hash, p.get("error")] for p, _l, linear_hash, _s in programs]]
                         for i, (item, _k, kernel_hash, programs) in enumerate(items)],
            "matches": [[phash, n, tries] for phash, _pid, n, tries in matches],
            "missing": missing,
        })
        result_id = self._find(CaseResult, hash_)
        if result_id is not None:
            return result_id
        self.new_case_results += 1
        kernel_count = sum(1 for item, *_ in items if item.get("programs"))
        result_id = insert_returning_id(self.conn, CaseResult, hash=hash_, item_count=len(items),
                                        kernel_count=kernel_count)
        for i, (item, kernel_id, _kh, programs) in enumerate(items):
            item_id = insert_returning_id(self.conn, ScheduleItem, case_result_id=result_id,
                                          position=item.get("position", i), kernel_id=kernel_id,
                                          root_op=item.get("root_op") or "?")
            for program, linear_id, _lh, source_id in programs:
                insert_returning_id(self.conn, Program, schedule_item_id=item_id,
                                    renderer=program.get("renderer") or "?", name=program.get("name"),
                                    source_blob_id=source_id, linear_id=linear_id, error=program.get("error"))
        if matches:
            self.conn.execute(insert(PatternMatch), [
                {"case_result_id": result_id, "pattern_id": pid, "matches": n, "tries": tries}
                for _phash, pid, n, tries in matches])
        if missing:
            self.conn.execute(insert(CaseMissing), [{"case_result_id": result_id, "feature": f, "reason": r}
                                                    for f, r in missing])
        return result_id


def get_or_create(conn: Connection, table, where: dict[str, Any], values: dict[str, Any] | None = None) -> int:
    query = select(table.id)
    for column, value in where.items():
        query = query.where(getattr(table, column) == value)
    found = conn.execute(query).scalar()
    if found is not None:
        return found
    return insert_returning_id(conn, table, **where, **(values or {}))


def upsert_commit(conn: Connection, sha: str, tree_hash: str, version: str | None, git: dict[str, Any]) -> int:
    """The commit's id, created if new; what an earlier, less informed ingest did not know is filled in."""
    values = {"version": version, "committed_at": git.get("date"), "subject": git.get("subject"),
              "committed_utc": to_utc(git.get("date")), "git_position": git.get("position"),
              "version_key": version_key(version)}
    commit_id = get_or_create(conn, TinygradCommit, {"sha": sha}, {"tree_hash": tree_hash, **values})
    for column, value in values.items():
        if value is not None:
            conn.execute(update(TinygradCommit).where(TinygradCommit.id == commit_id,
                                                      getattr(TinygradCommit, column).is_(None))
                         .values({column: value}))
    return commit_id


# An ok run is only replaced by an ok run: a worse status never takes the place of a better one.
STATUS_RANK = {"ok": 2, "partial": 1, "failed": 0, "timeout": 0}
FAILED = ("failed", "timeout")


@dataclass
class StoredRun:
    id: int
    status: str
    renderers: str | None  # comma-joined, as the run's bundle header listed them

    def covers(self, renderers: list[str]) -> bool:
        """An ok run that rendered at least `renderers`: what makes a new extraction of its commit unneeded."""
        return self.status == "ok" and set(renderers) <= set((self.renderers or "").split(","))


def find_run(conn: Connection, sha: str, suite_hash: str, backend: str) -> StoredRun | None:
    """The current run of a commit, suite and backend."""
    row = conn.execute(
        select(Run.id, Run.status, Run.renderers).join(TinygradCommit, TinygradCommit.id == Run.commit_id)
        .join(Suite, Suite.id == Run.suite_id)
        .where(TinygradCommit.sha == sha, Suite.hash == suite_hash, Run.backend == backend,
               Run.is_current.is_(True))).first()
    return StoredRun(*row) if row else None


def make_room(conn: Connection, existing: StoredRun | None, status: str) -> bool:
    """Whether a new run with `status` becomes the current one; if so, the current run steps aside: a failed one is
    kept as an attempt, an ok or partial one (superseded by a run at least as good) is deleted. Run ids are never
    reused (AUTOINCREMENT), so a link to a deleted run cannot point at another."""
    if existing is None:
        return True
    if STATUS_RANK.get(status, 0) < STATUS_RANK.get(existing.status, 0):
        return False
    if existing.status in FAILED:
        conn.execute(update(Run).where(Run.id == existing.id).values(is_current=False))
    else:
        conn.execute(delete(Run).where(Run.id == existing.id))
    return True


def _run_status(bundle: Bundle | None, outcome: ExtractionOutcome | None, failed_cases: int) -> str:
    if outcome is not None and outcome.status == "timeout":
        return "timeout"
    if bundle is None or not bundle.complete or (outcome is not None and outcome.status != "ok"):
        return "failed"
    return "partial" if failed_cases else "ok"


def ingest_bundle(engine: Engine, bundle: Bundle, *, outcome: ExtractionOutcome | None = None,
                  force: bool = False) -> IngestReport:
    """Store `bundle` as one run. The current run of the same commit, suite and backend is kept when it is `ok` and
    rendered the bundle's renderers (the report says skipped) unless `force`. Otherwise the new run becomes current
    unless it is worse than the current one (see make_room): a failed re-extraction is then stored as an attempt."""
    header, tinygrad = bundle.header, bundle.tinygrad
    sha = commit_key(tinygrad)
    suite = header.get("suite") or {}
    backend = header.get("backend") or "?"
    with engine.begin() as conn:
        existing = find_run(conn, sha, suite.get("hash") or "", backend)
        if existing and existing.covers(header.get("renderers") or []) and not force:
            return IngestReport(existing.id, sha, existing.status, 0, 0, 0, skipped=True)
        failed_cases = sum(1 for case in bundle.cases if case.get("status") != "ok")
        status = _run_status(bundle, outcome, failed_cases)
        current = make_room(conn, existing, status)
        store = ArtifactStore(conn)
        commit_id = upsert_commit(conn, sha, tinygrad.get("tree_hash") or "", tinygrad.get("version"),
                                  tinygrad.get("git") or {})
        suite_id = get_or_create(conn, Suite, {"hash": suite.get("hash") or ""}, {"name": suite.get("name") or "?"})
        patterns = {key: store.pattern(record) for key, record in bundle.patterns.items()}
        pattern_set_id = store.pattern_set({phash: pid for pid, phash in patterns.values()})
        errors = []
        if bundle.truncated_line:
            errors.append(f"bundle truncated at line {bundle.truncated_line}")
        if not bundle.complete:
            errors.append("the extraction did not finish (no end record)")
        if outcome is not None and outcome.status != "ok":
            errors.append(f"extraction {outcome.status} (exit code {outcome.returncode})")
        run_id = insert_returning_id(
            conn, Run, commit_id=commit_id, suite_id=suite_id, backend=backend,
            renderers=",".join(header.get("renderers") or []), is_current=current,
            status=status, started_at=header.get("started_at"), finished_at=(bundle.end or {}).get("finished_at"),
            ingested_at=now_iso(), tgstore_version=__version__, bundle_version=header.get("bundle_version"),
            debug_level=header.get("debug_level"), python=header.get("python"), tinygrad_path=tinygrad.get("path"),
            features=json.dumps(header.get("features") or {}, sort_keys=True), error="; ".join(errors) or None,
            stderr=(outcome.stderr[-STDERR_KEEP:] if outcome and outcome.stderr else None),
            pattern_set_id=pattern_set_id)
        if bundle.missing:
            conn.execute(insert(RunMissing), [{"run_id": run_id, "case_name": m.get("case"), "feature": m.get("feature")
                                               or "?", "reason": m.get("reason")} for m in bundle.missing])
        for case in bundle.cases:
            case_id = get_or_create(conn, Case, {"name": case["name"]})
            result_id = store.case_result(case, patterns)
            conn.execute(insert(RunCase).values(
                run_id=run_id, case_id=case_id, case_result_id=result_id, status=case.get("status") or "error",
                seconds=case.get("seconds"), debug_blob_id=store.blob(case.get("debug") or None),
                error_blob_id=store.blob(case.get("error"))))
        return IngestReport(run_id, sha, status, len(bundle.cases), failed_cases, store.new_case_results,
                            kept_run_id=None if current else existing.id if existing else None,
                            error="; ".join(errors) or None)


def record_failed_run(engine: Engine, *, sha: str, tree_hash: str, version: str | None, git: dict[str, Any],
                      suite_name: str, suite_hash: str, backend: str, renderers: list[str],
                      outcome: ExtractionOutcome, error: str) -> IngestReport:
    """A run whose extraction produced no usable bundle (a checkout git refused, a crash at import, a timeout
    before the header). It becomes current unless an ok or partial run is."""
    status = "timeout" if outcome.status == "timeout" else "failed"
    with engine.begin() as conn:
        existing = find_run(conn, sha, suite_hash, backend)
        current = make_room(conn, existing, status)
        commit_id = upsert_commit(conn, sha, tree_hash, version, git)
        suite_id = get_or_create(conn, Suite, {"hash": suite_hash}, {"name": suite_name})
        run_id = insert_returning_id(
            conn, Run, commit_id=commit_id, suite_id=suite_id, backend=backend, renderers=",".join(renderers),
            status=status, is_current=current, ingested_at=now_iso(), tgstore_version=__version__, error=error,
            stderr=outcome.stderr[-STDERR_KEEP:] if outcome.stderr else None)
        return IngestReport(run_id, sha, status, 0, 0, 0, kept_run_id=None if current else existing.id
                            if existing else None, error=error)
