"""Removing content-addressed rows that no run refers to any more.

Artifacts are shared by hash, so replacing a run (`--force`, a retried failure, a run widened to more renderers)
cannot delete what it referenced: another run may share it. `collect_garbage` deletes what nothing references,
working out "references" from the schema's foreign keys, so a table added later is covered without change here.
"""

from __future__ import annotations

from sqlalchemy import Engine, Table, and_, delete, exists, select

from tgstore.db.models import Base

# Content-addressed tables, parents before children: deleting an unreferenced case set cascades to its members,
# which may leave case results unreferenced, whose schedule items go with them, leaving kernels, linears and blobs.
COLLECTED = ["case_sets", "case_results", "match_sets", "pattern_sets", "pass_lists", "kernels", "linears", "graphs",
             "canonical_docs", "patterns", "svod_trees", "blobs"]


def _referrers(target: Table) -> list[tuple[Table, object]]:
    """(table, column) pairs whose foreign key points at target's id, leaving out ON DELETE CASCADE ones: those are
    the target's own parts (a case result's schedule items, a kernel's nodes), deleted with it, not references."""
    found = []
    for table in Base.metadata.sorted_tables:
        for fk in table.foreign_keys:
            if fk.column.table is target and (fk.ondelete or "").upper() != "CASCADE":
                found.append((table, fk.parent))
    return found


def collect_garbage(engine: Engine) -> dict[str, int]:
    """Delete every row of the content-addressed tables that no other row refers to; returns counts per table."""
    deleted: dict[str, int] = {}
    with engine.begin() as conn:
        for name in COLLECTED:
            target = Base.metadata.tables[name]
            referenced = [exists(select(1).select_from(table).where(column == target.c.id))
                          for table, column in _referrers(target)]
            unreferenced = and_(*[~ref for ref in referenced]) if referenced else True
            deleted[name] = conn.execute(delete(target).where(unreferenced)).rowcount
    return deleted
