"""Values the database and JSON can hold (issue 19, item 2): the bundle schema refuses NaN, Infinity, integers
SQLite cannot hold and impossible positions with file:line; every JSON column written is valid JSON (json_valid over
all of them after ingesting real bundles and real-format Svod logs); `tgstore db check --fix` repairs what older
versions wrote. Svod readers bound JSON nesting (a problem of that line, not a RecursionError)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli import tgstore

from tgstore.db.repair import JSON_COLUMNS


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_case(rs: list[dict]) -> dict:
    return next(r for r in rs if r["kind"] == "case")


def first_program_with_uops(rs: list[dict]) -> dict:
    return next(p for p in first_case(rs)["schedule"][0]["programs"] if p["uops"])


def set_seconds(text: str) -> Callable[[list[dict]], str | None]:
    def change(rs: list[dict]) -> str:
        first_case(rs)["seconds"] = "SECONDS"
        return text  # replaces the "SECONDS" string token in the line
    return change


def extra_field(kind: str, text: str) -> Callable[[list[dict]], str]:
    """A field the schema does not declare on the first `kind` record (graphs and patterns are validated from their
    text by pydantic alone: tgstore.bundle._validate), holding the number `text`."""
    def change(rs: list[dict]) -> str:
        next(r for r in rs if r["kind"] == kind)["note"] = "SECONDS"
        return text
    return change


def graph_source(value: object) -> Callable[[list[dict]], None]:
    def change(rs: list[dict]) -> None:
        nodes = next(r for r in rs if r["kind"] == "graph")["nodes"]
        nodes[-1][3] = [value]
    return change


MUTATIONS: dict[str, tuple[Callable[[list[dict]], str | None], str]] = {
    "NaN seconds": (set_seconds("NaN"), "NaN is not a number JSON has"),
    "Infinity seconds": (set_seconds("Infinity"), "Infinity is not a number JSON has"),
    "-Infinity seconds": (set_seconds("-Infinity"), "Infinity is not a number JSON has"),
    "overflowing seconds": (set_seconds("1e400"), "1e400 is out of range"),
    "NaN in a graph's undeclared field": (extra_field("graph", "NaN"), "NaN is not a number JSON has"),
    "overflow in a pattern's undeclared field": (extra_field("pattern", "-1e999"), "-1e999 is out of range"),
    "true as a graph node's source": (graph_source(True), "nodes."),
    "a float as a graph node's source": (graph_source(0.5), "nodes."),
    "position past SQLite": (lambda rs: first_case(rs)["schedule"][0].update(position=2**63), "position"),
    "negative position": (lambda rs: first_case(rs)["schedule"][0].update(position=-1), "position"),
    "pattern line past SQLite": (lambda rs: next(r for r in rs if r["kind"] == "pattern").update(line=-(2**64)),
                                 "line"),
    "negative UOp source": (lambda rs: first_program_with_uops(rs)["uops"][-1].update(src=[-3]), "src"),
    "UOp source past the end": (lambda rs: first_program_with_uops(rs)["uops"][-1].update(src=[10**6]),
                                "refers to UOp 1000000"),
    "empty case name": (lambda rs: first_case(rs).update(name=""), "is empty or has control characters"),
    "NUL in case name": (lambda rs: first_case(rs).update(name="a\x00b"), "is empty or has control characters"),
    "empty tree hash": (lambda rs: rs[0]["tinygrad"].update(tree_hash="", git=None), "tree_hash is empty"),
    "empty git sha": (lambda rs: rs[0]["tinygrad"].update(git={"sha": ""}), "tinygrad.git.sha is empty"),
    "end count past SQLite": (lambda rs: rs[-1].update(cases=2**70), "cases"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_values_the_database_cannot_hold_are_refused_with_file_and_line(
        tmp_path: Path, real_bundles: dict[str, Path], name: str) -> None:
    change, says = MUTATIONS[name]
    rs = records(real_bundles["c_llvm"])
    original = [json.dumps(r) for r in rs]  # before the change: the bundle is read once, not once per line
    token = change(rs)
    lines = [json.dumps(r) for r in rs]
    if token:
        lines = [line.replace('"SECONDS"', token) for line in lines]
    number = next((i for i, line in enumerate(lines, 1) if line != original[i - 1]), None)
    bundle = tmp_path / "bad.jsonl"
    bundle.write_text("".join(line + "\n" for line in lines))
    db = tmp_path / "t.db"  # bundles are validated before the database is opened (tests/test_errors.py)
    line = one_line_error(tgstore("ingest", "--db", db, "--bundle", bundle), says)
    assert f"bad.jsonl:{number}:" in line
    assert not db.exists()


def json_columns_valid(db: Path) -> dict[str, int]:
    """table.column -> rows holding JSON; asserts every one is valid JSON."""
    counts = {}
    with sqlite3.connect(db) as conn:
        for table, column, _nullable in JSON_COLUMNS:
            bad = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL "
                               f"AND NOT json_valid({column})").fetchone()[0]
            assert bad == 0, (table, column, bad)
            counts[f"{table}.{column}"] = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL").fetchone()[0]
        for (view,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            conn.execute(f'SELECT * FROM "{view}"').fetchall()
    return counts


def test_every_json_column_is_valid_json(tmp_path: Path, real_bundles: dict[str, Path]) -> None:
    from svod_fixtures import worked_example_log

    db = tmp_path / "t.db"
    assert tgstore("ingest", "--db", db, "--bundle", real_bundles["c_llvm"]).returncode == 0
    assert tgstore("ingest", "--db", db, "--bundle", real_bundles["ptx"]).returncode == 0
    svod = tmp_path / "svod.log"
    svod.write_text(worked_example_log()  # Svod's real log shape, with a NaN and a too deeply nested line added
                    + '{"timestamp":"t","level":"DEBUG","fields":{"message":"x","v":NaN}}\n'
                    + '{"timestamp":"t","level":"DEBUG","fields":' + "[" * 3000 + "]" * 3000 + "}\n")
    proc = tgstore("ingest-svod", svod, "--case", "add", "--db", db)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "NaN is not JSON" in proc.stderr and "nested deeper than" in proc.stderr
    counts = json_columns_valid(db)
    for column in ("runs.case_seconds", "graphs.nodes", "canonical_docs.document", "svod_events.fields"):
        assert counts[column] > 0, (column, counts)


def test_db_check_repairs_what_older_versions_wrote(tmp_path: Path, real_bundles: dict[str, Path]) -> None:
    db = tmp_path / "t.db"
    assert tgstore("ingest", "--db", db, "--bundle", real_bundles["c_llvm"]).returncode == 0
    assert tgstore("db", "check", "--db", db).returncode == 0
    with sqlite3.connect(db) as conn:  # what tgstore before issue 19 stored for a NaN in a bundle
        conn.execute("UPDATE runs SET case_seconds = '[NaN,0.5]'")
        with pytest.raises(sqlite3.OperationalError, match="malformed JSON"):
            conn.execute("SELECT * FROM run_cases").fetchall()
    proc = tgstore("db", "check", "--db", db, "--json")
    assert proc.returncode == 1
    found = json.loads(proc.stdout)
    assert found["bad_json"] == {"runs.case_seconds": 1} and "run_cases" in found["unreadable_views"]
    fixed = tgstore("db", "check", "--db", db, "--fix", "--json")
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout) == {"ok": True, "integrity": [], "foreign_key_violations": 0, "bad_json": {},
                                        "unreadable_views": {}, "fixed": 1}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT case_seconds FROM runs").fetchone()[0] == "[null,0.5]"
    json_columns_valid(db)
