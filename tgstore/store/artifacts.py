"""The content of one bundle, stored: every artifact (text blob, kernel AST, linearized UOps, pass graph, pass list,
canonical document, rule, rule set, match set, whole case result, the set of a run's case results) is identified by
a hash computed here from its content; the store finds which hashes are already there and inserts the rest, a
statement per table. So re-ingesting an unchanged commit adds only its commit and `runs` rows.

Tables are filled parents first: blobs; kernels, linears, graphs; pass lists; canonical documents; patterns, pattern
sets, match sets; case results with their schedule items, programs, canonical links and missing features; the
case set (store_case_set). A kernel's and a pass graph's `norm_hash` is their hash in the spelling Svod's trees are
compared in (tgstore.spelling.svod, the one import that runs up the layers).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from sqlalchemy import Connection

from tgstore.bundle import Bundle, BundleError
from tgstore.spelling.svod import norm_hash
from tgstore.store.carry import Carried
from tgstore.store.content import ContentStore, canonical_json, content_hash, document_hash, sha256_text
from tgstore.store.rows import (
    MEMBER_COLUMNS,
    case_ids,
    case_set_digest,
    kernel_rows,
    linear_rows,
    pattern_values,
)


def kernel_name(programs: list[dict[str, Any]]) -> str | None:
    """The kernel's function name as the C renderer named it, else as the first renderer that named it did."""
    named = [p for p in programs if p.get("name")]
    return next((p["name"] for p in named if p.get("renderer") == "C"), named[0]["name"] if named else None)


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
        for h in sorted(used - set(known)):  # sorted: the same ids whatever the process's hash seed
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
