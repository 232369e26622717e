"""What a new run of a stored commit keeps of the current run: the programs of renderers it did not render (a run
adds to what a commit covers, it never takes away another renderer's sources), and the schedule passes and canonical
documents of cases whose stages it did not record. A program is carried when the new run's kernel at its case and
position is the same; one that has no such place is counted as lost (and the new run does not become current).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection

from tgstore.bundle import Bundle
from tgstore.store.rows import kernel_rows
from tgstore.store.runs import StoredRun


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
    kernels = {(case["name"], item["position"]): kernel_rows(item)[0]
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
