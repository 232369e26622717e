"""Storing Svod logs (tgstore.svod.store, `tgstore ingest-svod`) and the svod queries, on real migrated databases."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tgstore.bundle import read_bundle
from tgstore.cli import app
from tgstore.db import downgrade, open_engine, upgrade
from tgstore.ingest import ingest_bundle
from tgstore.queries import QUERIES_DIR, get_query, run_query
from tgstore.svod.parse import parse_svod_log
from tgstore.svod.store import SvodLogError, ingest_svod_log, ingest_svod_text

FIXTURES = Path(__file__).parent / "fixtures" / "svod"
LOGS = ["add.log", "matmul.log", "corrupt.log"]
SVOD_TABLES = ["svod_runs", "svod_events", "svod_event_trees", "svod_trees", "svod_stage_dumps", "svod_per_stage",
               "svod_kernels", "svod_pattern_matches", "svod_problems"]
ALL_TABLES = [*SVOD_TABLES, "cases", "blobs"]


def new_db(path: Path):
    engine = open_engine(path)
    upgrade(engine)
    return engine


def counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ALL_TABLES}


def rows(db: Path, sql: str, params: Any = ()) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def renumber(text: str) -> str:
    """Another run of the same test: every tree id (in dumps and inside JSON tree fields) is different."""
    return re.sub(r"(?<![=\w])\[(\d+)\](?= )", lambda m: f"[{int(m.group(1)) * 7 + 1000}]", text)


# ------------------------------------------------------------------------------------------------------ ingestion


@pytest.mark.parametrize("name", LOGS)
def test_each_fixture_is_stored_as_the_parser_reads_it(tmp_path, name):
    db = tmp_path / "t.db"
    engine = new_db(db)
    text = (FIXTURES / name).read_text(encoding="utf-8")
    log = parse_svod_log(text)
    report = ingest_svod_log(engine, FIXTURES / name, "add", svod_commit="5ad0c0ffee")
    assert not report.skipped
    assert (report.events, report.kernels, report.stage_dumps, report.per_stage) == (
        len(log.events), len(log.kernels), len(log.stage_dumps), len(log.per_stage))
    assert [(p.line_no, p.message) for p in report.problems] == [(p.line_no, p.message) for p in log.problems]

    run = rows(db, "SELECT r.id, c.name, r.svod_commit, b.text, r.log_hash, r.source_path, r.event_count, "
                   "r.kernel_count, r.stage_dump_count, r.per_stage_count, r.raw_line_count, r.problem_count "
                   "FROM svod_runs r JOIN cases c ON c.id = r.case_id JOIN blobs b ON b.id = r.log_blob_id")
    assert len(run) == 1
    run_id, case, commit, log_text, _hash, source, *stored_counts = run[0]
    assert (case, commit, source) == ("add", "5ad0c0ffee", str(FIXTURES / name))
    assert log_text == text  # the whole log, byte for byte: nothing is lost
    assert stored_counts == [len(log.events), len(log.kernels), len(log.stage_dumps), len(log.per_stage),
                             len(log.raw_lines), len(log.problems)]

    assert rows(db, "SELECT line_no, level, target, message, elapsed_ms, node_count, kernel_index FROM svod_events "
                    "ORDER BY line_no") == [
        (e.line_no, e.level, e.target, e.message, e.elapsed_ms, e.node_count, e.kernel_index) for e in log.events]
    assert rows(db, "SELECT line_no, kernel_index, label, node_count FROM svod_per_stage ORDER BY line_no") == [
        (p.line_no, p.kernel_index, p.label, p.node_count) for p in log.per_stage]
    assert rows(db, "SELECT d.line_no, d.end_line_no, d.kernel_index, d.label, t.node_count FROM svod_stage_dumps d "
                    "JOIN svod_trees t ON t.id = d.tree_id ORDER BY d.line_no") == [
        (d.line_no, d.end_line_no, d.kernel_index, d.label, d.tree.node_count()) for d in log.stage_dumps]
    assert rows(db, "SELECT kernel_index, line_no, ti.node_count, tp.node_count, tz.node_count, b.text "
                    "FROM svod_kernels k LEFT JOIN svod_trees ti ON ti.id = k.initial_tree_id "
                    "LEFT JOIN svod_trees tp ON tp.id = k.pre_tree_id "
                    "LEFT JOIN svod_trees tz ON tz.id = k.optimized_tree_id "
                    "LEFT JOIN blobs b ON b.id = k.code_blob_id ORDER BY kernel_index") == [
        (k.index, k.line_no, k.initial.node_count() if k.initial else None, k.pre.node_count() if k.pre else None,
         k.optimized.node_count() if k.optimized else None, k.generated_code) for k in log.kernels]
    assert dict(rows(db, "SELECT op_key, count FROM svod_pattern_matches")) == log.pattern_matches
    assert rows(db, "SELECT line_no, message, text FROM svod_problems ORDER BY id") == [
        (p.line_no, p.message, p.text) for p in log.problems]

    # Every parsed tree of every event, by field; the event's own tree_id is the first of TREE_FIELDS.
    event_trees = {(line, field): structure for line, field, structure in rows(
        db, "SELECT et.line_no, et.field, b.text FROM svod_event_trees et JOIN svod_trees t ON t.id = et.tree_id "
            "JOIN blobs b ON b.id = t.structure_blob_id")}
    assert event_trees == {(e.line_no, f): t.structure_text() for e in log.events for f, t in e.trees.items()}
    assert sum(1 for (tid,) in rows(db, "SELECT tree_id FROM svod_events") if tid is not None) == sum(
        1 for e in log.events if e.tree is not None)
    # Stored tree text carries no allocation ids.
    for (structure,) in rows(db, "SELECT b.text FROM svod_trees t JOIN blobs b ON b.id = t.structure_blob_id"):
        assert not re.search(r"(?m)^[ →]*\[\d+\]", structure)
    # The non-tree fields of each event are kept as JSON.
    for line_no, fields in rows(db, "SELECT line_no, fields FROM svod_events"):
        event = next(e for e in log.events if e.line_no == line_no)
        assert json.loads(fields) == {k: v for k, v in event.fields.items() if k not in event.trees}


def test_kernel_names_and_final_stages_in_the_view(tmp_path):
    db = tmp_path / "t.db"
    engine = new_db(db)
    ingest_svod_log(engine, FIXTURES / "matmul.log", "matmul")
    assert rows(db, 'SELECT "case", kernel_index, kernel_name, initial_nodes, final_stage, final_nodes '
                    "FROM v_svod_kernels ORDER BY kernel_index") == [
        ("matmul", 0, "r_4_4_4", 22, "20-final_rewrite", 32), ("matmul", 1, "r_4_4_4n1", 22, "20-final_rewrite", 32)]


def test_corrupt_log_problems_are_stored_with_line_numbers_and_the_rest_kept(tmp_path):
    db = tmp_path / "t.db"
    engine = new_db(db)
    report = ingest_svod_log(engine, FIXTURES / "corrupt.log", "add")
    assert [p.line_no for p in report.problems] == [7, 8, 11, 46, 48]
    assert rows(db, "SELECT line_no FROM svod_problems ORDER BY line_no") == [(7,), (8,), (11,), (46,), (48,)]
    messages = dict(rows(db, "SELECT line_no, message FROM svod_problems"))
    assert messages[7].startswith("malformed JSON event")
    assert messages[46].startswith("malformed [per-stage] line")
    assert messages[48].startswith("unterminated [dump-stage] block '13-pm_add_loads'")
    # The offending line is kept verbatim.
    lines = (FIXTURES / "corrupt.log").read_text(encoding="utf-8").split("\n")
    assert rows(db, "SELECT text FROM svod_problems WHERE line_no = 7") == [(lines[6],)]
    # The rest is kept: the good events, the per-stage lines, both dumps, the kernel, the pattern matches.
    assert counts(db)["svod_events"] == 6
    assert counts(db)["svod_per_stage"] == 12
    assert rows(db, "SELECT label, end_line_no FROM svod_stage_dumps ORDER BY line_no") == [
        ("08-post_opt_sym", 42), ("13-pm_add_loads", None)]
    assert dict(rows(db, "SELECT op_key, count FROM svod_pattern_matches")) == {"ADD": 1, "INDEX": 1}
    # The view shows the unterminated dump (no per-stage line) as its own, marked stage; the final stage skips it.
    assert rows(db, "SELECT stage, node_count, source FROM v_svod_stages WHERE stage = '13-pm_add_loads'") == [
        ("13-pm_add_loads", 9, "dump-stage (unterminated)")]
    assert rows(db, "SELECT final_stage, final_nodes, pre_nodes FROM v_svod_kernels") == [
        ("12-remove_reduce", 15, None)]


def test_reingesting_the_same_log_is_a_no_op(tmp_path):
    db = tmp_path / "t.db"
    engine = new_db(db)
    first = ingest_svod_log(engine, FIXTURES / "corrupt.log", "add")
    before = counts(db)
    again = ingest_svod_log(engine, FIXTURES / "corrupt.log", "add", svod_commit="abc1234")
    assert again.skipped and again.run_id == first.run_id
    assert [p.line_no for p in again.problems] == [7, 8, 11, 46, 48]  # still reported
    assert counts(db) == before
    # ... except that a commit the first ingest did not know is filled in; a known one is never overwritten.
    assert again.commit_filled
    assert ingest_svod_log(engine, FIXTURES / "corrupt.log", "add", svod_commit="other").commit_filled is False
    assert rows(db, "SELECT svod_commit FROM svod_runs") == [("abc1234",)]
    # The same log for another case is another run (the tinygrad side it is compared with differs).
    other = ingest_svod_log(engine, FIXTURES / "corrupt.log", "relu")
    assert not other.skipped and other.new_trees == 0
    assert counts(db)["blobs"] == before["blobs"] and counts(db)["svod_runs"] == 2


def test_structure_equal_trees_from_different_runs_are_stored_once(tmp_path):
    db = tmp_path / "t.db"
    engine = new_db(db)
    text = (FIXTURES / "add.log").read_text(encoding="utf-8")
    other = renumber(text)
    assert other != text and "[1203] SINK" in other  # ids really differ, in dumps and in JSON tree fields
    first = ingest_svod_text(engine, text, "add", "aaaa1111")
    trees = counts(db)["svod_trees"]
    assert first.new_trees == trees > 0
    second = ingest_svod_text(engine, other, "add", "bbbb2222")
    assert not second.skipped and second.new_trees == 0
    assert counts(db)["svod_trees"] == trees
    per_run = rows(db, "SELECT run_id, initial_tree_id, pre_tree_id, optimized_tree_id FROM svod_kernels "
                       "ORDER BY run_id")
    assert len(per_run) == 2 and per_run[0][1:] == per_run[1][1:]
    assert rows(db, "SELECT tree_id FROM svod_stage_dumps WHERE run_id = 1 ORDER BY line_no") == rows(
        db, "SELECT tree_id FROM svod_stage_dumps WHERE run_id = 2 ORDER BY line_no")
    # Within one log too: matmul's two kernels start from the same AST.
    ingest_svod_log(engine, FIXTURES / "matmul.log", "matmul")
    (a, b), = rows(db, "SELECT min(initial_tree_id), max(initial_tree_id) FROM svod_kernels k "
                       "JOIN svod_runs r ON r.id = k.run_id JOIN cases c ON c.id = r.case_id WHERE c.name = 'matmul'")
    assert a == b


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"  \n\n\t\n", "empty"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "not a text file"),
    (b"caf\xe9 latin-1 text\n", "not UTF-8 text"),
    ("{}\n".encode("utf-16"), "UTF-16 text"),
    (b"   Compiling svod v0.4.0\nrunning 1 test\ntest foo ... ok\n", "no Svod tracing events"),
])
def test_unusable_files_give_a_clear_error_and_write_nothing(tmp_path, content, message):
    db = tmp_path / "t.db"
    engine = new_db(db)
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(SvodLogError, match=message):
        ingest_svod_log(engine, path, "add")
    assert set(counts(db).values()) == {0}


def test_a_missing_file_is_an_error(tmp_path):
    engine = new_db(tmp_path / "t.db")
    with pytest.raises(SvodLogError, match="no such file"):
        ingest_svod_log(engine, tmp_path / "nope.log", "add")


def test_downgrade_removes_the_svod_schema_and_upgrade_restores_it(tmp_path):
    db = tmp_path / "t.db"
    engine = new_db(db)
    ingest_svod_log(engine, FIXTURES / "add.log", "add")
    downgrade(engine, "0002")
    names = {n for (n,) in rows(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert not {n for n in names if "svod" in n}
    upgrade(engine)
    ingest_svod_log(engine, FIXTURES / "add.log", "add")
    assert counts(db)["svod_runs"] == 1


# ------------------------------------------------------------------------------------------------------------ CLI


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_cli_ingests_prints_problems_with_line_numbers_and_exits_0(tmp_path):
    db = tmp_path / "cli.db"  # created and migrated by the command
    corrupt = str(FIXTURES / "corrupt.log")
    result = cli("ingest-svod", str(FIXTURES / "add.log"), corrupt, "--case", "add", "--svod-commit", "1234abcd",
                 "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "add.log: svod run 1 for case 'add'" in result.output and "0 problems" in result.output
    assert "5 problems" in result.output
    for line_no, start in [(7, "malformed JSON event"), (8, "unparsable tree in field 'uop.tree'"),
                           (11, "malformed JSON event"), (46, "malformed [per-stage] line"),
                           (48, "unterminated [dump-stage] block '13-pm_add_loads'")]:
        assert f"{corrupt}:{line_no}: {start}" in result.output  # one unwrapped line each, markup kept
    assert rows(db, "SELECT count(*), min(svod_commit) FROM svod_runs") == [(2, "1234abcd")]
    assert rows(db, "SELECT count(*) FROM svod_problems") == [(5,)]

    again = cli("ingest-svod", str(FIXTURES / "add.log"), "--case", "add", "--db", str(db))
    assert again.exit_code == 0 and "already stored for case 'add' (svod run 1)" in again.output
    assert rows(db, "SELECT count(*) FROM svod_runs") == [(2,)]


def test_cli_exits_1_when_a_file_cannot_be_stored_but_keeps_the_others(tmp_path):
    db = tmp_path / "cli.db"
    empty = tmp_path / "empty.log"
    empty.write_text("")
    result = cli("ingest-svod", str(empty), str(FIXTURES / "add.log"), "--case", "add", "--db", str(db))
    assert result.exit_code == 1
    assert f"error: {empty}: the file is empty; nothing stored" in result.output
    assert rows(db, "SELECT source_path FROM svod_runs") == [(str(FIXTURES / "add.log"),)]


def test_cli_needs_a_case(tmp_path):
    result = cli("ingest-svod", str(FIXTURES / "add.log"), "--db", str(tmp_path / "x.db"))
    assert result.exit_code == 2 and "--case" in result.output


# -------------------------------------------------------------------------------------------------------- queries

SHA_OLD = "0a" * 20
SHA_NEW = "1b" * 20


def chain(n: int) -> list[dict[str, Any]]:
    """n UOps, each using the previous one, ending in SINK."""
    return [{"op": "SINK" if i == n - 1 else f"OP{i}", "dtype": "dtypes.float", "arg": str(i),
             "src": [i - 1] if i else []} for i in range(n)]


def item(position: int, name: str, ast_nodes: int, c_uops: int) -> dict[str, Any]:
    return {"position": position, "root_op": "SINK", "ast_text": f"ast {name}", "pyrender": None,
            "nodes": chain(ast_nodes),
            "programs": [{"renderer": "C", "name": name, "source": f"void {name}() {{}}", "error": None,
                          "uops": chain(c_uops)},
                         {"renderer": "LLVM", "name": name, "source": f"define void @{name}()", "error": None,
                          "uops": chain(c_uops + 5)}]}


COPY_ITEM = {"position": 1, "root_op": "COPY", "ast_text": "copy", "pyrender": None,
             "nodes": [{"op": "BUFFER", "dtype": "dtypes.float", "arg": "16", "src": []},
                       {"op": "COPY", "dtype": "dtypes.float", "arg": "CPU", "src": [0]}], "programs": []}


def write_tinygrad_bundle(path: Path, sha: str, version: str, date: str, cases: dict[str, list]) -> Path:
    """A bundle by hand, per docs/bundle-format.md."""
    records = [
        {"kind": "header", "bundle_version": 1, "producer": "tgstore-child", "started_at": date, "python": "3.11.7",
         "platform": "Linux-test", "tinygrad": {"path": "/abs", "version": version, "tree_hash": sha[:16] * 4,
                                                "git": {"sha": sha, "date": date, "subject": f"tinygrad {version}"}},
         "backend": "CPU", "renderers": ["C", "LLVM"], "debug_level": 4,
         "suite": {"name": "svod", "hash": "5d" * 32, "files": ["/abs/cases.py"]}, "features": {}},
        *({"kind": "case", "name": name, "status": "ok", "error": None, "seconds": 0.1, "debug": "",
           "schedule": schedule, "matches": [], "missing": []} for name, schedule in cases.items()),
        {"kind": "end", "finished_at": date, "cases": len(cases), "failed_cases": 0},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def compare_db(tmp_path) -> Path:
    """tinygrad at two commits and Svod logs of `add` (two Svod commits) and `matmul`, in one database."""
    db = tmp_path / "compare.db"
    engine = new_db(db)
    ingest_bundle(engine, read_bundle(write_tinygrad_bundle(
        tmp_path / "old.jsonl", SHA_OLD, "0.13.0", "2026-01-01T00:00:00+00:00",
        {"add": [item(0, "E_16", 13, 17)]})))
    ingest_bundle(engine, read_bundle(write_tinygrad_bundle(
        tmp_path / "new.jsonl", SHA_NEW, "0.14.0", "2026-02-01T00:00:00+00:00",
        # matmul: SINK, a COPY (not a kernel: skipped in the pairing), SINK, and a third SINK Svod does not have.
        {"add": [item(0, "E_4_4", 12, 20)],
         "matmul": [item(0, "r_4_4_4", 22, 30), COPY_ITEM, {**item(2, "r_4_4_4n1", 20, 32)},
                    {**item(3, "E_16n2", 5, 9)}]})))
    add = (FIXTURES / "add.log").read_text(encoding="utf-8")
    ingest_svod_text(engine, add, "add", "5f5f0001")
    # A later Svod commit of the same test whose final rewrite yields one node fewer (and other allocation ids).
    later = renumber(add).replace("[per-stage] 20-final_rewrite : node_count=17",
                                  "[per-stage] 20-final_rewrite : node_count=16")
    ingest_svod_text(engine, later, "add", "6e6e0002")
    ingest_svod_log(engine, FIXTURES / "matmul.log", "matmul", "6e6e0002")
    engine.dispose()
    return db


def query(db: Path, name: str, **params: str) -> list[dict[str, Any]]:
    """Run queries/NAME.sql with plain sqlite3, as Datasette or the sqlite3 shell would."""
    sql = (QUERIES_DIR / f"{name}.sql").read_text(encoding="utf-8")
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def test_svod_queries_have_valid_headers():
    for name, params in [("svod_stage_node_counts", ["case_name", "svod_commit"]),
                         ("svod_pattern_counts", ["case_name", "svod_commit"]),
                         ("svod_vs_tinygrad", ["case_name", "commit", "svod_commit"])]:
        q = get_query(name)
        assert q.title and q.description and q.parameter_names == params
        assert [p.name for p in q.parameters if p.optional] == ["svod_commit"]


def test_stage_node_counts_of_the_latest_or_a_given_svod_commit(compare_db):
    latest = query(compare_db, "svod_stage_node_counts", case_name="add", svod_commit="")
    assert len(latest) == 21 and {r["svod_commit"] for r in latest} == {"6e6e0002"}
    assert [r["stage"] for r in latest][:2] == ["00-initial", "01-early_movement_ops"]
    assert latest[0]["change"] is None and latest[0]["kernel_name"] == "E_4_4"
    by_stage = {r["stage"]: r for r in latest}
    assert (by_stage["06-apply_opts"]["node_count"], by_stage["06-apply_opts"]["change"]) == (17, 4)
    assert (by_stage["08-post_opt_sym"]["node_count"], by_stage["08-post_opt_sym"]["change"]) == (15, -2)
    assert (by_stage["20-final_rewrite"]["node_count"], by_stage["20-final_rewrite"]["change"]) == (16, -1)
    older = query(compare_db, "svod_stage_node_counts", case_name="add", svod_commit="5f5f")  # a prefix
    assert {r["svod_commit"] for r in older} == {"5f5f0001"} and older[-1]["node_count"] == 17
    matmul = query(compare_db, "svod_stage_node_counts", case_name="matmul", svod_commit="")
    assert [(k, sum(1 for r in matmul if r["kernel_index"] == k)) for k in (0, 1)] == [(0, 21), (1, 21)]
    assert query(compare_db, "svod_stage_node_counts", case_name="nope", svod_commit="") == []


def test_pattern_counts(compare_db):
    result = query(compare_db, "svod_pattern_counts", case_name="add", svod_commit="")
    assert [(r["op_key"], r["count"], r["percent"]) for r in result] == [
        ("ADD", 3, 30.0), ("INDEX", 3, 30.0), ("CAST", 1, 10.0), ("MUL", 1, 10.0), ("RANGE", 1, 10.0),
        ("STORE", 1, 10.0)]
    matmul = query(compare_db, "svod_pattern_counts", case_name="matmul", svod_commit="")
    assert {r["op_key"]: r["count"] for r in matmul} == {"ADD": 4, "INDEX": 4, "MUL": 2, "REDUCE": 2, "CAST": 2}


def test_svod_vs_tinygrad(compare_db):
    cols = ["kernel_index", "svod_kernel", "tinygrad_position", "tinygrad_kernel", "svod_initial_nodes",
            "tinygrad_ast_nodes", "ast_difference", "svod_final_stage", "svod_final_nodes", "tinygrad_c_uops",
            "final_difference", "verdict"]

    def table(**params):
        return [[r[c] for c in cols] for r in query(compare_db, "svod_vs_tinygrad", **params)]

    # add at the newer tinygrad (by version): Svod's latest log (final_rewrite 16) against 12 AST nodes, 20 C uops.
    assert table(case_name="add", commit="0.14.0", svod_commit="") == [
        [0, "E_4_4", 0, "E_4_4", 13, 12, 1, "20-final_rewrite", 16, 20, -4, "differs"]]
    # ... by sha prefix, against the older Svod commit; the older tinygrad (full sha) matches both counts exactly.
    assert table(case_name="add", commit=SHA_NEW[:7], svod_commit="5f5f0001")[0][8:] == [17, 20, -3, "differs"]
    assert table(case_name="add", commit=SHA_OLD, svod_commit="5f5f0001") == [
        [0, "E_4_4", 0, "E_16", 13, 13, 0, "20-final_rewrite", 17, 17, 0, "same counts"]]
    # matmul: the n-th Svod kernel pairs with the n-th SINK item (the COPY at position 1 is skipped).
    assert table(case_name="matmul", commit="0.14.0", svod_commit="") == [
        [0, "r_4_4_4", 0, "r_4_4_4", 22, 22, 0, "20-final_rewrite", 32, 30, 2, "differs"],
        [1, "r_4_4_4n1", 2, "r_4_4_4n1", 22, 20, 2, "20-final_rewrite", 32, 32, 0, "differs"],
        [2, None, 3, "E_16n2", None, 5, None, None, None, 9, None, "tinygrad only"]]
    # A tinygrad commit without the case (or unknown): Svod's side alone.
    assert [r[-1] for r in table(case_name="matmul", commit=SHA_OLD, svod_commit="")] == ["svod only"] * 2
    assert [r[-1] for r in table(case_name="add", commit="ffff", svod_commit="")] == ["svod only"]


def test_svod_queries_run_through_tgstore_queries(compare_db):
    """The same files through tgstore.queries (optional svod_commit defaults to the latest)."""
    with sqlite3.connect(compare_db) as conn:
        result = run_query(conn, "svod_vs_tinygrad", {"case_name": "add", "commit": "0.14.0"})
    assert result.dicts()[0]["svod_final_nodes"] == 16 and result.dicts()[0]["svod_commit"] == "6e6e0002"
