"""`tgstore db check [--fix]`: what an older tgstore may have written that breaks views (JSON columns holding NaN or
Infinity, which SQLite's JSON functions refuse, so `run_cases` and every view on it fail), and SQLite's own checks.

--fix rewrites a bad JSON value with its non-finite numbers as null (or NULL where it is no JSON at all and the
column allows it), in one transaction."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

# (table, column, nullable): every column tgstore writes JSON into
JSON_COLUMNS = [("runs", "case_seconds", True), ("runs", "command", True), ("graphs", "nodes", False),
                ("canonical_docs", "document", True), ("svod_trees", "graph", False), ("svod_trees", "unknown", True),
                ("svod_events", "fields", True)]


@dataclass
class CheckReport:
    integrity: list[str] = field(default_factory=list)  # PRAGMA integrity_check's lines other than "ok"
    foreign_keys: int = 0  # rows whose reference points nowhere
    bad_json: dict[str, list[int]] = field(default_factory=dict)  # "table.column" -> rowids
    unreadable_views: dict[str, str] = field(default_factory=dict)  # view -> error
    fixed: int = 0

    @property
    def ok(self) -> bool:
        return not (self.integrity or self.foreign_keys or self.bad_json or self.unreadable_views)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "integrity": self.integrity, "foreign_key_violations": self.foreign_keys,
                "bad_json": {k: len(v) for k, v in self.bad_json.items()},
                "unreadable_views": self.unreadable_views, "fixed": self.fixed}


def _columns(conn: Connection, table: str) -> set[str]:
    return {row[1] for row in conn.exec_driver_sql(f"PRAGMA table_info({table})")}


def check(conn: Connection) -> CheckReport:
    report = CheckReport()
    report.integrity = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check") if r[0] != "ok"]
    report.foreign_keys = len(conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall())
    for table, column, _nullable in JSON_COLUMNS:
        if column not in _columns(conn, table):
            continue
        rows = [r[0] for r in conn.exec_driver_sql(
            f"SELECT rowid FROM {table} WHERE {column} IS NOT NULL AND NOT json_valid({column})")]
        if rows:
            report.bad_json[f"{table}.{column}"] = rows
    report.unreadable_views = unreadable_views(conn)
    return report


def unreadable_views(conn: Connection) -> dict[str, str]:
    """view -> the error reading every row of it gives (all rows: a bad value may be anywhere)."""
    found = {}
    for (view,) in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name").all():
        try:
            for _row in conn.exec_driver_sql(f'SELECT * FROM "{view}"'):
                pass
        except DBAPIError as exc:
            found[view] = str(exc.orig)
    return found


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def repaired(text: str) -> str | None:
    """`text` as valid JSON with NaN and Infinity as null; None if it is no JSON even so."""
    try:
        return json.dumps(_finite(json.loads(text)), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):
        return None


def fix(conn: Connection, report: CheckReport) -> int:
    """Repair the bad JSON values `report` found; returns how many rows changed. Integrity and foreign-key problems
    are reported, not repaired (restore from a copy)."""
    fixed = 0
    nullable = {f"{t}.{c}": n for t, c, n in JSON_COLUMNS}
    for where, rowids in report.bad_json.items():
        table, column = where.split(".")
        for rowid in rowids:
            text = conn.exec_driver_sql(f"SELECT {column} FROM {table} WHERE rowid = ?", (rowid,)).scalar()
            new = repaired(text)
            if new is None and not nullable[where]:
                continue
            conn.exec_driver_sql(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (new, rowid))
            fixed += 1
    return fixed


def check_database(engine: Engine, *, repair: bool = False) -> CheckReport:
    """Check (and with `repair`, fix then check again) the database behind `engine` (a writer when repairing)."""
    with engine.begin() as conn:
        report = check(conn)
        if repair and report.bad_json:
            fixed = fix(conn, report)
            report = check(conn)
            report.fixed = fixed
    return report
