"""Triage states and confirmations of regressions (tables of migration 0024), keyed by the series and the commit
range. Read on a DB-API connection (the analysis runs on Datasette's and the CLI's read-only sqlite3 connections);
written on a SQLAlchemy connection by `tgstore triage` and `tgstore regressions --confirm`."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection

STATES = ("new", "acknowledged", "fixed", "ignored")

Key = tuple[str, str, str, int, str, str, str]  # metric, machine, case, position (-1: total), renderer, good, bad


def key_of(metric: str, machine: str, case: str, position: int | None, renderer: str | None, good: str,
           bad: str) -> Key:
    return (metric, machine, case, -1 if position is None else position, renderer or "", good, bad)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Triage:
    state: str
    note: str
    updated_at: str | None

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "note": self.note, "updated_at": self.updated_at}


@dataclass
class Confirmation:
    verdict: str  # confirmed | not confirmed | failed
    rounds: int
    good_ns: list[int]
    bad_ns: list[int]
    ratio: float | None
    p: float | None
    detail: str
    confirmed_at: str

    def as_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rounds": self.rounds, "good_ns": self.good_ns, "bad_ns": self.bad_ns,
                "ratio": self.ratio, "p": self.p, "detail": self.detail, "confirmed_at": self.confirmed_at}


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


KEY_COLUMNS = "metric, machine, case_name, position, renderer, good, bad"


def triage_states(conn: sqlite3.Connection, machine: str, metric: str) -> dict[Key, Triage]:
    """Every stored triage state of this machine and metric, by key (none in a database before migration 0024)."""
    if not _has_table(conn, "regression_triage"):
        return {}
    rows = conn.execute(f"SELECT {KEY_COLUMNS}, state, note, updated_at FROM regression_triage "
                        "WHERE machine = ? AND metric = ?", (machine, metric))
    return {tuple(r[:7]): Triage(r[7], r[8], r[9]) for r in rows}


def confirmations(conn: sqlite3.Connection, machine: str, metric: str) -> dict[Key, Confirmation]:
    """The latest confirmation per key of this machine and metric."""
    if not _has_table(conn, "regression_confirmations"):
        return {}
    rows = conn.execute(f"SELECT {KEY_COLUMNS}, verdict, rounds, good_ns, bad_ns, ratio, p, detail, confirmed_at "
                        "FROM regression_confirmations WHERE machine = ? AND metric = ? ORDER BY id",
                        (machine, metric))
    return {tuple(r[:7]): Confirmation(r[7], r[8], json.loads(r[9]), json.loads(r[10]), r[11], r[12], r[13], r[14])
            for r in rows}


def set_triage(conn: Connection, key: Key, state: str, note: str) -> None:
    """Store (or replace) the triage state of `key`."""
    from sqlalchemy import text  # writes only: the analysis reads through sqlite3 without the ORM

    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    names = KEY_COLUMNS.split(", ")
    values = dict(zip(names, key, strict=True))
    conn.execute(text(f"INSERT INTO regression_triage ({KEY_COLUMNS}, state, note, updated_at) "
                      f"VALUES ({', '.join(':' + n for n in names)}, :state, :note, :at) "
                      f"ON CONFLICT ({KEY_COLUMNS}) DO UPDATE SET state = excluded.state, note = excluded.note, "
                      "updated_at = excluded.updated_at"), {**values, "state": state, "note": note, "at": now()})


def store_confirmation(conn: Connection, key: Key, found: Confirmation) -> None:
    from sqlalchemy import insert

    from tgstore.db.models.triage_tables import RegressionConfirmation

    names = KEY_COLUMNS.split(", ")
    conn.execute(insert(RegressionConfirmation), [{
        **dict(zip(names, key, strict=True)), "rounds": found.rounds, "good_ns": json.dumps(found.good_ns),
        "bad_ns": json.dumps(found.bad_ns), "ratio": found.ratio, "p": found.p, "verdict": found.verdict,
        "detail": found.detail, "confirmed_at": found.confirmed_at}])
