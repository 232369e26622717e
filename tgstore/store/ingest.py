"""Storing a bundle in the database: one transaction per bundle, artifacts content-addressed, set-based.

A bundle's run either lands whole or not at all. Every artifact (text blob, kernel AST, linearized UOps, pass graph,
pass list, canonical document, rule, rule set, match set, whole case result, the set of a run's case results) is
identified by a hash computed here from its content; the store finds which hashes are already there and inserts the
rest, a statement per table. So re-ingesting an unchanged commit adds only its commit and `runs` rows.

Tables are filled parents first: blobs; kernels, linears, graphs; pass lists; canonical documents; patterns, pattern
sets, match sets; case results with their schedule items, programs, canonical links and missing features; the
case set; then the run.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from tgstore import __version__
from tgstore.bundle import Bundle, BundleError
from tgstore.db.models.run_tables import Run, RunMissing, Suite, TinygradCommit
from tgstore.resources import code_hash
from tgstore.store.commits import rank_commits, to_utc, version_key
from tgstore.store.compile_times import store_compile_times
from tgstore.store.content import ContentStore, canonical_json, content_hash, document_hash, sha256_text
from tgstore.store.rows import (
    FAILED,
    MEMBER_COLUMNS,
    STATUS_RANK,
    case_ids,
    case_set_digest,
    get_or_create,
    insert_returning_id,
    kernel_rows,
    linear_rows,
    now_iso,
    pattern_values,
)
from tgstore.store.timings import store_timings

STDERR_KEEP = 64 * 1024


def norm_hash(nodes: list) -> str:
    """The graph's hash in the spelling Svod's trees are compared in (tgstore.svod.spelling)."""
    from tgstore.svod.spelling import normalize_tinygrad

    return sha256_text(json.dumps(normalize_tinygrad(nodes)[0], ensure_ascii=False, separators=(",", ":")))


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
    timed: bool = False  # skipped, but its kernel timings were stored (a re-timing)
    carried_renderers: list[str] = field(default_factory=list)  # kept from the run this one replaced


@dataclass
class ExtractionOutcome:
    """How the child process ended, as far as ingestion cares (see tgstore.extract.runner.ExtractionResult)."""

    status: str  # ok | failed | timeout
    returncode: int | None = None
    stderr: str = ""


class BundleStore:
    """The content of one bundle, hashed and stored through a ContentStore."""

    def __init__(self, conn: Connection, bundle: Bundle, carried: Carried | None = None) -> None:
        self.conn, self.bundle = conn, bundle
        self.store = ContentStore(conn)
        self.new_case_results = 0
        self.carried = carried or Carried()
        for table, known in self.carried.known.items():  # carried rows exist: their ids are known
            self.store.known.setdefault(table, {}).update(known)

    # ---- hashes (pure; tgstore.store.rows)
    kernel_rows = staticmethod(kernel_rows)
    linear_rows = staticmethod(linear_rows)
    pattern_values = staticmethod(pattern_values)

    # ---- storing
    def store_all(self) -> list[tuple[dict[str, Any], int, int | None]]:
        """Store every artifact of the bundle; returns (case record, case result id, match set id) per case."""
        cases = self.bundle.cases
        items = [item for case in cases for item in case["schedule"]]
        programs = [p for item in items for p in item["programs"]]
        entries = [e for p in programs for e in p.get("passes") or []]
        entries += [e for case in cases for e in case.get("schedule_passes") or []]
        rewrites = {id(e): canonical_json(e["rewrites"]) for e in entries if e.get("rewrites")}
        self.store.blobs([*(t for item in items for t in (item.get("ast_text"), item.get("pyrender"))),
                          *(p.get("source") for p in programs), *rewrites.values()])
        kernel_hashes = self._kernels(items)
        linear_hashes = self._linears(programs)
        self._graphs(entries)
        pass_hashes = self._pass_lists(programs, cases, rewrites)
        canonical_hashes = self._canonical(cases)
        patterns = self._patterns()
        match_sets = self._match_sets(cases, patterns)
        results = self._case_results(cases, kernel_hashes, linear_hashes, pass_hashes, canonical_hashes)
        return [(case, results[i], match_sets[i]) for i, case in enumerate(cases)]

    def _kernels(self, items: list[dict[str, Any]]) -> dict[int, str]:
        rows, graphs, hashes = {}, {}, {}
        for item in items:
            h, graph = self.kernel_rows(item)
            hashes[id(item)] = h
            if h not in rows:
                graphs[h] = graph
                rows[h] = (kernel_name(item["programs"]), item["root_op"], len(graph),
                           self.store.blob_id(item.get("ast_text")), self.store.blob_id(item.get("pyrender")))
        known = self.store.lookup("kernels", rows)
        rows = {h: (*row, norm_hash(graphs[h])) for h, row in rows.items() if h not in known}
        new = self.store.ensure("kernels", ("name", "root_op", "node_count", "ast_text_blob_id", "pyrender_blob_id",
                                            "norm_hash"), rows)
        nodes, edges = [], []
        for h in new:
            kid = self.store.id("kernels", h)
            for i, (op, dtype, arg, src) in enumerate(graphs[h]):
                nodes.append((kid, i, op, dtype, arg))
                edges += [(kid, i, pos, child) for pos, child in enumerate(src)]
        self.store.insert("uop_nodes", ("kernel_id", "idx", "op", "dtype", "arg"), nodes)
        self.store.insert("uop_edges", ("kernel_id", "parent_idx", "src_pos", "child_idx"), edges)
        return hashes

    def _linears(self, programs: list[dict[str, Any]]) -> dict[int, str]:
        rows, contents, hashes = {}, {}, {}
        for program in programs:
            if program.get("uops") is None:
                continue
            h, content = self.linear_rows(program["uops"])
            hashes[id(program)] = h
            rows[h] = (len(content),)
            contents[h] = content
        new = self.store.ensure("linears", ("uop_count",), rows)
        self.store.insert("linear_uops", ("linear_id", "idx", "op", "dtype", "arg", "src"),
                          [(self.store.id("linears", h), i, *row) for h in new for i, row in enumerate(contents[h])])
        return hashes

    def _graphs(self, entries: list[dict[str, Any]]) -> None:
        used = {e["graph"] for e in entries if e.get("graph")}
        known = self.store.lookup("graphs", used)
        rows, texts = {}, {}
        for h in used - set(known):
            nodes = self.bundle.graphs[h]
            text = json.dumps(nodes, ensure_ascii=False, separators=(",", ":"))
            if sha256_text(text) != h:
                raise BundleError(f"{self.bundle.path}: graph {h[:12]} does not match its hash")
            rows[h] = (nodes[-1][0] if nodes else None, len(nodes), text, norm_hash(nodes))
            texts[h] = nodes
        new = self.store.ensure("graphs", ("root_op", "node_count", "nodes", "norm_hash"), rows)
        self.store.insert("graph_ops", ("graph_id", "op", "count"),
                          [(self.store.id("graphs", h), op, n) for h in new
                           for op, n in sorted(Counter(node[0] for node in texts[h]).items())])

    def _pass_lists(self, programs: list[dict[str, Any]], cases: list[dict[str, Any]],
                    rewrites: dict[int, str]) -> dict[int, str]:
        """pass list hash per program / case (by id) that recorded passes."""
        owners = [(id(p), p.get("passes")) for p in programs] + [(id(c), c.get("schedule_passes")) for c in cases]
        rows, lists, hashes = {}, {}, {}
        for owner, passes in owners:
            if passes is None:
                continue
            entries = [(e["name"], e["depth"], e["node_count"], bool(e["changed"]), e.get("graph"),
                        self.store.text_hash(rewrites[id(e)]) if id(e) in rewrites else None) for e in passes]
            h = content_hash([list(e) for e in entries])
            hashes[owner] = h
            rows[h] = (len(entries),)
            lists[h] = [(e, passes[i]) for i, e in enumerate(entries)]
        new = self.store.ensure("pass_lists", ("pass_count",), rows)
        self.store.insert("pass_entries", ("pass_list_id", "position", "name", "depth", "node_count", "changed",
                                           "graph_id", "rewrites_blob_id"),
                          [(self.store.id("pass_lists", h), position, name, depth, count, changed,
                            self.store.id("graphs", graph), self.store.blob_id(rewrites.get(id(raw))))
                           for h in new for position, ((name, depth, count, changed, graph, _r), raw)
                           in enumerate(lists[h])])
        return hashes

    def _canonical(self, cases: list[dict[str, Any]]) -> dict[int, list[tuple]]:
        """Per case (by id): its sorted canonical links (position, stage, document hash); position -1 holds the
        case's schedule-level stages."""
        rows, links = {}, {}
        for case in cases:
            docs = [(-1, case.get("canonical") or {})]
            docs += [(item["position"], item.get("canonical") or {}) for item in case["schedule"]]
            for position, by_stage in docs:
                for stage, entry in by_stage.items():
                    if entry.get("document") is not None:
                        document = entry["document"]
                        h = document_hash(document)
                        # kept in the schema's key order, for people; the hash sorts the keys
                        rows[h] = (stage, len(document.get("nodes") or document.get("items") or []),
                                   json.dumps(document, separators=(",", ":"), ensure_ascii=False), None, None)
                    else:
                        problem = entry.get("unsupported") or {}
                        h = content_hash({"stage": stage, "unsupported": problem})
                        rows[h] = (stage, None, None, problem.get("error") or "unsupported", problem.get("reason"))
                    links.setdefault(id(case), []).append((position, stage, h))
        self.store.ensure("canonical_docs", ("stage", "node_count", "document", "unsupported", "reason"), rows)
        return {case: sorted(found) for case, found in links.items()}

    def _patterns(self) -> dict[str, tuple[int, str]]:
        """bundle key -> (pattern id, pattern hash); the run's pattern set is stored too."""
        values = {key: self.pattern_values(record) for key, record in self.bundle.patterns.items()}
        self.store.ensure("patterns", ("matcher", "ops", "upat", "function_name", "file", "line"),
                          {h: v for h, v in values.values()})
        patterns = {key: (self.store.id("patterns", h), h) for key, (h, _v) in values.items()}
        hashes = sorted({h for _pid, h in patterns.values()})
        self.pattern_set_id = None
        if hashes:
            set_hash = content_hash(hashes)
            if self.store.ensure("pattern_sets", ("pattern_count",), {set_hash: (len(hashes),)}):
                self.store.insert("pattern_set_members", ("pattern_set_id", "pattern_id"),
                                  [(self.store.id("pattern_sets", set_hash), self.store.id("patterns", h))
                                   for h in hashes])
            self.pattern_set_id = self.store.id("pattern_sets", set_hash)
        return patterns

    def _match_sets(self, cases: list[dict[str, Any]], patterns: dict[str, tuple[int, str]]) -> list[int | None]:
        """Per case, its match set id (None when it has no counts). Rules that read the same (built in a loop at
        one line, say) are one stored pattern, so their counts add up."""
        rows, members, per_case = {}, {}, []
        for case in cases:
            merged: dict[str, list] = {}
            for record in case["matches"]:
                pid, phash = patterns[record["pattern"]]
                entry = merged.setdefault(phash, [pid, 0, None])
                entry[1] += record["matches"]
                if record.get("tries") is not None:
                    entry[2] = (entry[2] or 0) + record["tries"]
            if not merged:
                per_case.append(None)
                continue
            h = content_hash(sorted([phash, n, tries] for phash, (_pid, n, tries) in merged.items()))
            per_case.append(h)
            rows[h] = (len(merged),)
            members[h] = sorted((pid, n, tries) for pid, n, tries in merged.values())
        new = self.store.ensure("match_sets", ("pattern_count",), rows)
        self.store.insert("pattern_matches", ("match_set_id", "pattern_id", "matches", "tries"),
                          [(self.store.id("match_sets", h), *m) for h in new for m in members[h]])
        return [self.store.id("match_sets", h) for h in per_case]

    def _case_results(self, cases: list[dict[str, Any]], kernel_hashes: dict[int, str],
                      linear_hashes: dict[int, str], pass_hashes: dict[int, str],
                      canonical: dict[int, list[tuple]]) -> list[int]:
        rows, contents, hashes = {}, {}, []
        carried = self.carried.programs
        for case in cases:
            missing = sorted((m.get("feature") or "?", m.get("reason")) for m in case["missing"])
            # what the current run recorded per case and this one did not (its stages off) is kept, like its programs
            links = canonical.get(id(case)) or self.carried.links.get(case["name"], [])
            schedule_passes = pass_hashes.get(id(case)) or self.carried.schedule_passes.get(case["name"])
            # a call site (capture mode) joins the hash only where there is one: older hashes stay valid
            schedule = [[item["position"], item["root_op"], kernel_hashes[id(item)],
                         *([item["call_site"]] if item.get("call_site") else []),
                         *([{"context": item.get("context"), "lowered_by": item.get("lowered_by")}]
                           if item.get("context") or item.get("lowered_by") else []),
                         [[p["renderer"], p["name"], self.store.text_hash(p["source"]) if p.get("source") else None,
                           linear_hashes.get(id(p)), p.get("error"), pass_hashes.get(id(p))]
                          for p in item["programs"]]
                         + [list(c.hashes) for c in carried.get((case["name"], item["position"]), [])]]
                        for item in case["schedule"]]
            h = content_hash({"status": case["status"], "schedule": schedule, "missing": missing,
                              "schedule_passes": schedule_passes, "canonical": [list(x) for x in links]})
            hashes.append(h)
            kernels = sum(1 for item in case["schedule"]
                          if item["programs"] or carried.get((case["name"], item["position"])))
            rows[h] = (len(case["schedule"]), kernels, self.store.id("pass_lists", schedule_passes))
            contents[h] = (case, missing, links)
        new = self.store.ensure("case_results", ("item_count", "kernel_count", "schedule_pass_list_id"), rows)
        self.new_case_results += len(new)
        item_rows, program_rows, missing_rows, link_rows = [], [], [], []
        next_item = self.store.next_id("schedule_items")
        for h in new:
            result_id = self.store.id("case_results", h)
            case, missing, links = contents[h]
            for item in case["schedule"]:
                item_rows.append((next_item, result_id, item["position"],
                                  self.store.id("kernels", kernel_hashes[id(item)]), item["root_op"],
                                  item.get("call_site"), canonical_json(item["context"]) if item.get("context")
                                  else None, item.get("lowered_by")))
                program_rows += [(next_item, p["renderer"], p["name"], self.store.blob_id(p.get("source")),
                                  self.store.id("linears", linear_hashes.get(id(p))), p.get("error"),
                                  self.store.id("pass_lists", pass_hashes.get(id(p)))) for p in item["programs"]]
                program_rows += [(next_item, c.hashes[0], c.hashes[1], *c.ids[:2], c.hashes[4], c.ids[2])
                                 for c in carried.get((case["name"], item["position"]), [])]
                next_item += 1
            missing_rows += [(result_id, feature, reason) for feature, reason in missing]
            link_rows += [(result_id, pos, stage, self.store.id("canonical_docs", doc)) for pos, stage, doc in links]
        self.store.insert("schedule_items", ("id", "case_result_id", "position", "kernel_id", "root_op", "call_site",
                                             "context", "lowered_by"), item_rows)
        self.store.insert("programs", ("schedule_item_id", "renderer", "name", "source_blob_id", "linear_id", "error",
                                       "pass_list_id"), program_rows)
        self.store.insert("case_missing", ("case_result_id", "feature", "reason"), missing_rows)
        self.store.insert("canonical_links", ("case_result_id", "position", "stage", "doc_id"), link_rows)
        return [self.store.id("case_results", h) for h in hashes]


def store_case_set(store: ContentStore, conn: Connection,
                   stored: list[tuple[dict[str, Any], int, int | None]]) -> int | None:
    """The case set of a run's cases (case, case result id, match set id), stored if new: a commit whose cases
    produced what an earlier one's did adds no row here. Hashed over the members' ids, in run order."""
    if not stored:
        return None
    store.blobs([t for case, _r, _m in stored for t in (case.get("debug") or None, case.get("error"))])
    ids = case_ids(conn, [case["name"] for case, _r, _m in stored])
    members = [[ids[case["name"]], result_id, match_set_id, case["status"], store.blob_id(case.get("debug") or None),
                store.blob_id(case.get("error"))] for case, result_id, match_set_id in stored]
    digest = case_set_digest(members)
    if store.ensure("case_sets", ("case_count",), {digest: (len(members),)}):
        store.insert("case_set_members", ("case_set_id", "position", *MEMBER_COLUMNS),
                     [(store.id("case_sets", digest), i, *m) for i, m in enumerate(members)])
    return store.id("case_sets", digest)


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
    if tree_hash:  # a checkout that failed stored none
        conn.execute(update(TinygradCommit).where(TinygradCommit.id == commit_id, TinygradCommit.tree_hash == "")
                     .values(tree_hash=tree_hash))
    rank_commits(conn)
    return commit_id


@dataclass
class CarriedProgram:
    """A program of the current run, for a renderer the new run did not render, that the new run keeps."""

    hashes: tuple  # renderer, name, source hash, linear hash, error, pass list hash (as a case result hashes it)
    ids: tuple  # source blob id, linear id, pass list id


@dataclass
class Carried:
    programs: dict[tuple[str, int], list[CarriedProgram]] = field(default_factory=dict)  # (case, position) ->
    renderers: list[str] = field(default_factory=list)  # the renderers carried
    schedule_passes: dict[str, str] = field(default_factory=dict)  # case -> schedule pass list hash
    links: dict[str, list[tuple]] = field(default_factory=dict)  # case -> canonical links (position, stage, hash)
    lost: int = 0  # programs with no place in the new run (its kernel at that position differs, or no such case)
    known: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> hash -> id, of the carried rows


CARRIED_PROGRAMS = """
SELECT c.name, si.position, k.hash, p.renderer, p.name, b.hash, l.hash, p.error, pl.hash, p.source_blob_id,
       p.linear_id, p.pass_list_id
FROM runs r
JOIN case_set_members m ON m.case_set_id = r.case_set_id
JOIN cases c ON c.id = m.case_id
JOIN schedule_items si ON si.case_result_id = m.case_result_id
JOIN kernels k ON k.id = si.kernel_id
JOIN programs p ON p.schedule_item_id = si.id
LEFT JOIN blobs b ON b.id = p.source_blob_id
LEFT JOIN linears l ON l.id = p.linear_id
LEFT JOIN pass_lists pl ON pl.id = p.pass_list_id
WHERE r.id = ? AND p.renderer IN ({marks})
ORDER BY c.name, si.position, p.renderer
"""


def carry_programs(conn: Connection, existing: StoredRun, bundle: Bundle) -> Carried:
    """The programs of `existing` (the current run) for renderers `bundle` does not render: a new run at a stored
    commit adds to what it covers, it never takes away another renderer's sources. A program is carried to the new
    run's schedule item of the same case and position when that item's kernel is the same."""
    others = [r for r in (existing.renderers or "").split(",") if r and r not in bundle.header["renderers"]]
    if not others:
        return Carried()
    kernels = {(case["name"], item["position"]): BundleStore.kernel_rows(item)[0]
               for case in bundle.cases for item in case["schedule"]}
    carried = Carried()
    found: set[str] = set()
    for (case, position, kernel, renderer, name, source, linear, error, passes, source_id, linear_id,
         pass_id) in conn.exec_driver_sql(CARRIED_PROGRAMS.format(marks=",".join("?" * len(others))),
                                          (existing.id, *others)).fetchall():
        if kernels.get((case, position)) != kernel:
            carried.lost += 1
            continue
        carried.programs.setdefault((case, position), []).append(
            CarriedProgram((renderer, name, source, linear, error, passes), (source_id, linear_id, pass_id)))
        found.add(renderer)
        for table, h, row_id in (("blobs", source, source_id), ("linears", linear, linear_id),
                                 ("pass_lists", passes, pass_id)):
            if h is not None:
                carried.known.setdefault(table, {})[h] = row_id
    carried.renderers = [r for r in others if r in found]
    if carried.renderers:
        _carry_case_parts(conn, existing, bundle, carried)
    return carried


CARRIED_CASE_PARTS = """
SELECT c.name, pl.hash, pl.id, cl.position, cl.stage, d.hash, d.id
FROM runs r
JOIN case_set_members m ON m.case_set_id = r.case_set_id
JOIN cases c ON c.id = m.case_id
JOIN case_results cr ON cr.id = m.case_result_id
LEFT JOIN pass_lists pl ON pl.id = cr.schedule_pass_list_id
LEFT JOIN canonical_links cl ON cl.case_result_id = cr.id
LEFT JOIN canonical_docs d ON d.id = cl.doc_id
WHERE r.id = ?
ORDER BY c.name, cl.position, cl.stage
"""


def _carry_case_parts(conn: Connection, existing: StoredRun, bundle: Bundle, carried: Carried) -> None:
    """The schedule passes and canonical documents of the current run's cases whose kernels all match, for the cases
    where the new run recorded none (its stages were off)."""
    same = {case["name"] for case in bundle.cases
            if all((case["name"], item["position"]) in carried.programs for item in case["schedule"])}
    for name, pass_hash, pass_id, position, stage, doc_hash, doc_id in conn.exec_driver_sql(
            CARRIED_CASE_PARTS, (existing.id,)).fetchall():
        if name not in same:
            continue
        if pass_hash is not None:
            carried.schedule_passes[name] = pass_hash
            carried.known.setdefault("pass_lists", {})[pass_hash] = pass_id
        if doc_hash is not None:
            carried.links.setdefault(name, []).append((position, stage, doc_hash))
            carried.known.setdefault("canonical_docs", {})[doc_hash] = doc_id


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


def command_failed(command: dict[str, Any]) -> str | None:
    """Capture mode: one line saying how the command failed, or None if it exited 0. What it lowered before is
    stored all the same."""
    if command.get("exit_status") == 0 and not command.get("error"):
        return None
    last = (command.get("error") or "").strip().splitlines()[-1:] or [""]
    status = command.get("exit_status")
    return f"the captured command {'did not run' if status is None else f'exited {status}'}" + \
        (f": {last[0][:300]}" if last[0] else "")


def _run_status(bundle: Bundle | None, outcome: ExtractionOutcome | None, failed_cases: int) -> str:
    if outcome is not None and outcome.status == "timeout":
        return "timeout"
    if bundle is None or not bundle.complete or (outcome is not None and outcome.status != "ok"):
        return "failed"
    if bundle.command is not None and bundle.command.get("exit_status") is None:
        return "failed"  # the captured command never ran (not found, not executable): nothing was captured
    return "partial" if failed_cases else "ok"


def ingest_bundle(engine: Engine, bundle: Bundle, *, outcome: ExtractionOutcome | None = None,
                  force: bool = False) -> IngestReport:
    """Store `bundle` as one run. The current run of the same commit, suite and backend is kept when it is `ok` and
    rendered the bundle's renderers (the report says skipped) unless `force`. Otherwise the new run becomes current
    unless it is worse than the current one (see make_room): a failed re-extraction is then stored as an attempt."""
    with engine.begin() as conn:
        return store_bundle(conn, bundle, outcome=outcome, force=force)


def store_bundle(conn: Connection, bundle: Bundle, *, outcome: ExtractionOutcome | None = None,
                 force: bool = False) -> IngestReport:
    """`ingest_bundle` within the caller's transaction (`tgstore check` rolls it back after comparing)."""
    header, tinygrad = bundle.header, bundle.tinygrad
    sha = commit_key(tinygrad)
    suite = header["suite"]
    backend = header["backend"]
    existing = find_run(conn, sha, suite["hash"], backend)
    if existing and existing.covers(header["renderers"]) and not force:
        if header.get("timing"):  # re-timing a stored commit: the run stays, the timings are added
            store_bundle_timings(conn, bundle, sha, existing.id)
        return IngestReport(existing.id, sha, existing.status, 0, 0, 0, skipped=True,
                            timed=bool(header.get("timing")))
    failed_cases = sum(1 for case in bundle.cases if case["status"] == "error")  # unsupported is no failure
    command = bundle.command
    status = _run_status(bundle, outcome, failed_cases + bool(command and command_failed(command)))
    carried = carry_programs(conn, existing, bundle) if existing and existing.status not in FAILED else Carried()
    # a run that cannot keep every program of the current run's other renderers does not take its place
    lost = carried.lost
    current = make_room(conn, existing, status) if not lost else False
    if not current:
        carried = Carried()  # an attempt holds what it rendered itself
    contents = BundleStore(conn, bundle, carried)
    stored = contents.store_all()
    commit_id = upsert_commit(conn, sha, tinygrad.get("tree_hash") or "", tinygrad.get("version"),
                              tinygrad.get("git") or {})
    suite_id = get_or_create(conn, Suite, {"hash": suite["hash"]}, {"name": suite["name"]})
    errors = []
    if bundle.truncated_line:
        errors.append(f"bundle truncated at line {bundle.truncated_line}")
    if not bundle.complete:
        errors.append("the extraction did not finish (no end record)")
    if outcome is not None and outcome.status != "ok":
        errors.append(f"extraction {outcome.status} (exit code {outcome.returncode})")
    if lost and existing:
        errors.append(f"{lost} programs of run {existing.id}'s other renderers have no matching kernel in "
                      "this run; that run stays current")
    if command and command_failed(command):
        errors.append(command_failed(command))
    store = contents.store
    features = store.blob(canonical_json(header["features"]))
    inputs = (bundle.end or {}).get("inputs")  # what it read (history/skip.py); bundles before it have none
    inputs_blob = store.blob(canonical_json(inputs)) if isinstance(inputs, dict) else None
    case_set_id = store_case_set(store, conn, stored)
    run_id = insert_returning_id(
        conn, Run, commit_id=commit_id, suite_id=suite_id, backend=backend,
        renderers=",".join([*header["renderers"], *carried.renderers]), is_current=current,
        status=status, started_at=header.get("started_at"), finished_at=(bundle.end or {}).get("finished_at"),
        ingested_at=now_iso(), tgstore_version=__version__, code_hash=code_hash(),
        bundle_version=header["bundle_version"],
        debug_level=header.get("debug_level"), python=header.get("python"), tinygrad_path=tinygrad.get("path"),
        features_blob_id=features, inputs_blob_id=inputs_blob, error="; ".join(errors) or None,
        stderr=(outcome.stderr[-STDERR_KEEP:] if outcome and outcome.stderr else None),
        pattern_set_id=contents.pattern_set_id, case_set_id=case_set_id,
        case_seconds=json.dumps([case.get("seconds") for case, _r, _m in stored], separators=(",", ":")),
        command=json.dumps({k: command.get(k) for k in ("argv", "cwd", "exit_status", "seconds", "error")})
        if command else None)
    store_bundle_timings(conn, bundle, sha, run_id)
    if bundle.missing:
        conn.execute(insert(RunMissing), [{"run_id": run_id, "case_name": m.get("case"), "feature": m["feature"],
                                           "reason": m.get("reason")} for m in bundle.missing])
    return IngestReport(run_id, sha, status, len(bundle.cases), failed_cases, contents.new_case_results,
                        kept_run_id=None if current else existing.id if existing else None,
                        error="; ".join(errors) or None, carried_renderers=carried.renderers)


def store_bundle_timings(conn: Connection, bundle: Bundle, sha: str, run_id: int) -> None:
    """The bundle's kernel timings (tgstore.store.timings), if it was extracted with --time."""
    if not bundle.header.get("timing"):
        return
    commit_id = conn.execute(select(TinygradCommit.id).where(TinygradCommit.sha == sha)).scalar_one()
    suite = bundle.header["suite"]
    suite_id = get_or_create(conn, Suite, {"hash": suite["hash"]}, {"name": suite["name"]})
    cases = case_ids(conn, [case["name"] for case in bundle.cases])
    session_id = store_timings(conn, bundle, commit_id=commit_id, suite_id=suite_id, run_id=run_id, case_ids=cases,
                               now=now_iso())
    if session_id is not None:  # compile times belong to the timing session and its machine
        store_compile_times(conn, bundle, session_id, cases)


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
            status=status, is_current=current, ingested_at=now_iso(), tgstore_version=__version__,
            code_hash=code_hash(), error=error,
            stderr=outcome.stderr[-STDERR_KEEP:] if outcome.stderr else None)
        return IngestReport(run_id, sha, status, 0, 0, 0, kept_run_id=None if current else existing.id
                            if existing else None, error=error)


# the run columns copy_run takes from its source run (the rest say when and from where the copy was made)
COPIED = ("suite_id", "backend", "renderers", "status", "started_at", "finished_at", "tgstore_version", "code_hash",
          "bundle_version", "debug_level", "python", "features_blob_id", "error", "stderr", "pattern_set_id",
          "case_set_id", "case_seconds", "command", "inputs_blob_id")


def copy_run(engine: Engine, source_sha: str, git: dict[str, Any], suite_hash: str, backend: str,
             renderers: list[str], *, reason: str | None = None, tree_hash: str | None = None) -> IngestReport | None:
    """Store the commit `git` names ({sha, date, subject, position}) with a copy of `source_sha`'s current run,
    which must be ok and cover `renderers`; None when it is not. For a commit whose tinygrad package is
    byte-identical to the source's (git.package_keys), or that changes no file the source's run read
    (history/skip.py): its extraction would read what the source's read, so its output is the source's, but for
    timings. The run says so (`copied_from`, `copy_reason`). The new commit row takes the source's version (its
    version files are the source's) and package hash unless `tree_hash` is its own."""
    reason = reason or f"its package is {source_sha}'s"
    with engine.begin() as conn:
        source = find_run(conn, source_sha, suite_hash, backend)
        if source is None or not source.covers(renderers):
            return None
        row = conn.execute(select(*(getattr(Run, c) for c in COPIED), TinygradCommit.tree_hash,
                                  TinygradCommit.version).join(TinygradCommit, TinygradCommit.id == Run.commit_id)
                           .where(Run.id == source.id)).one()
        values = dict(zip(COPIED, row[:len(COPIED)], strict=True))
        source_tree_hash, version = row[len(COPIED):]
        current = make_room(conn, find_run(conn, git["sha"], suite_hash, backend), values["status"])
        commit_id = upsert_commit(conn, git["sha"], tree_hash or source_tree_hash, version, git)
        run_id = conn.execute(insert(Run).values(
            commit_id=commit_id, is_current=current, ingested_at=now_iso(), tinygrad_path=f"not extracted: {reason}",
            copied_from=source_sha, copy_reason=reason, **values)).inserted_primary_key[0]
        missing = conn.execute(select(RunMissing.case_name, RunMissing.feature, RunMissing.reason)
                               .where(RunMissing.run_id == source.id)).all()
        if missing:
            conn.execute(insert(RunMissing), [{"run_id": run_id, "case_name": m.case_name, "feature": m.feature,
                                               "reason": m.reason} for m in missing])
        return IngestReport(run_id, git["sha"], values["status"], 0, 0, 0)
