"""Row primitives every writer uses (ingest, the Svod store, merge, timings): get-or-insert by a key, the id of a
new row, case ids by name, the ingest time, and the row encoders that hash a kernel, a linearized program or a
pattern the same way wherever it is written."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from tgstore.db.models.run_tables import Case
from tgstore.store.content import content_hash

# Run statuses. An ok run is only replaced by an ok run: a worse status never takes the place of a better one.
STATUS_RANK = {"ok": 2, "partial": 1, "failed": 0, "timeout": 0}
FAILED = ("failed", "timeout")


def insert_returning_id(conn: Connection, table, **values: Any) -> int:
    return conn.execute(insert(table).values(**values)).inserted_primary_key[0]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def case_ids(conn: Connection, names: list[str]) -> dict[str, int]:
    """Case ids by name, creating the cases not seen before."""
    if not names:
        return {}
    query = f"SELECT name, id FROM cases WHERE name IN ({','.join('?' * len(names))})"
    found = dict(conn.exec_driver_sql(query, tuple(names)).fetchall())
    if new := [n for n in names if n not in found]:
        conn.execute(insert(Case), [{"name": n} for n in new])
        found = dict(conn.exec_driver_sql(query, tuple(names)).fetchall())
    return found


def get_or_create(conn: Connection, table, where: dict[str, Any], values: dict[str, Any] | None = None) -> int:
    """The id of `table`'s row matching `where`, inserted with `values` too when there is none (sqlite-utils'
    `lookup`)."""
    query = select(table.id)
    for column, value in where.items():
        query = query.where(getattr(table, column) == value)
    found = conn.execute(query).scalar()
    if found is not None:
        return found
    return insert_returning_id(conn, table, **where, **(values or {}))


# ---- row encoders: a row's content hash and the rows stored for it


def kernel_rows(item: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    graph = [[n["op"], n["dtype"], n["arg"], list(n["src"])] for n in item["nodes"]]
    return content_hash({"root": item["root_op"], "graph": graph, "pyrender": item.get("pyrender"),
                         "ast_text": item.get("ast_text")}), graph


def linear_rows(uops: list[dict[str, Any]]) -> tuple[str, list[list[Any]]]:
    rows = [[u["op"], u["dtype"], u["arg"], ",".join(str(s) for s in u["src"])] for u in uops]
    return content_hash(rows), rows


def pattern_values(record: dict[str, Any]) -> tuple[str, tuple]:
    values = {"matcher": record.get("matcher"), "ops": record.get("ops"), "upat": record.get("upat"),
              "function_name": record.get("function"), "file": record.get("file"), "line": record.get("line")}
    return content_hash(values), tuple(values.values())


# ---- case sets: a run's cases, hashed over their members' ids in this database (merge rekeys them)

MEMBER_COLUMNS = ("case_id", "case_result_id", "match_set_id", "status", "debug_blob_id", "error_blob_id")


def case_set_digest(members: list[list[Any]]) -> str:
    """A case set's hash: over its members' MEMBER_COLUMNS values (ids of this database), in run order."""
    return content_hash(members)
