"""The named queries in queries/*.sql, the commit resolver and `tgstore query`, on a real migrated, ingested db."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sample_bundles import SHA_A, SHA_B, SHA_C, SampleDb, build_sample_db, is_svod_query, query_params
from sqlalchemy import text
from typer.testing import CliRunner

from tgstore.cli import app
from tgstore.db import open_engine, upgrade
from tgstore.queries import QUERIES_DIR, QueryError, get_query, load_queries, parse_query, run_query, sql_parameters
from tgstore.store.commits import CommitNotFound, resolve_commit


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleDb:
    return build_sample_db(tmp_path_factory.mktemp("queries"))


def run(db: SampleDb, name: str, **overrides: str) -> list[dict[str, Any]]:
    """Run query `name` with the sample's parameters (plus overrides) through SQLAlchemy and through plain sqlite3;
    both must agree (the files are meant for both, and for Datasette)."""
    params = {**query_params(db)[name], **overrides}
    engine = open_engine(db.path, writer=False)
    with engine.connect() as conn:
        rows = run_query(conn, name, params).dicts()
    engine.dispose()
    with sqlite3.connect(f"file:{db.path}?mode=ro", uri=True) as raw:
        assert run_query(raw, name, params).dicts() == rows
    return rows


# --- one check per query file: each runs with real parameters and its rows are asserted ---

def check_kernels_changed(db: SampleDb) -> None:
    rows = run(db, "kernels_changed")
    got = {(r["case"], r["change"], r["kernel_name"]) for r in rows}
    assert got == {("matmul", "removed", "r_16_16"), ("matmul", "added", "r_16_16_4"), ("relu", "added", "E_8")}
    removed = next(r for r in rows if r["change"] == "removed")
    assert (removed["positions_a"], removed["positions_b"], removed["node_count"]) == ("0", None, 6)
    # matmul kernel 1 only changed its C source, not its AST: not a changed kernel
    assert not any(r["kernel_name"] == "E_16" for r in rows)
    # B -> C: the failing case lost its kernel
    rows = run(db, "kernels_changed", a=db.version_b, b=db.sha_c)
    assert [(r["case"], r["change"], r["kernel_name"]) for r in rows] == [("add", "removed", "E_4")]


def check_sources_changed(db: SampleDb) -> None:
    rows = run(db, "sources_changed")
    got = {(r["case"], r["position"], r["renderer"], r["ast_changed"]) for r in rows}
    # matmul kernel 1 changed only its C source (same AST): listed here, not by kernels_changed
    assert ("matmul", 1, "C", 0) in got, got
    assert all((r["source_a"], r["error_a"]) != (r["source_b"], r["error_b"]) for r in rows)
    assert {r["renderer"] for r in run(db, "sources_changed", renderer="C")} == {"C"}
    assert run(db, "sources_changed", b=db.sha_a[:8]) == []


def check_patterns_changed(db: SampleDb) -> None:
    rows = run(db, "patterns_changed")
    # the lambda moved from line 50 to 52 and is still the same rule
    assert [(r["change"], r["function_name"], r["line"]) for r in rows] == [
        ("added", "fold_mul", 70), ("removed", "fold_mul_zero", 60)]
    assert rows[0]["matcher"] == "symbolic" and "UPat.var('y')" in rows[0]["upat"]
    assert run(db, "patterns_changed", a=db.sha_b, b=db.sha_c) == []


def check_uop_count_history(db: SampleDb) -> None:
    rows = run(db, "uop_count_history")
    assert [r["sha"] for r in rows] == [SHA_A, SHA_B, SHA_C]  # ordered by committed_at
    assert [r["uop_nodes"] for r in rows] == [11, 12, 12]
    assert [r["largest_ast"] for r in rows] == [6, 7, 7]
    assert [r["change"] for r in rows] == [None, 1, 0]
    rows = run(db, "uop_count_history", case_name="add")
    assert [(r["status"], r["uop_nodes"]) for r in rows] == [("ok", 5), ("ok", 5), ("error", 0)]


def check_source_history(db: SampleDb) -> None:
    rows = run(db, "source_history")
    # C: A first, B changed (both kernels), C identical to B so no row
    assert [(r["sha"], r["change"]) for r in rows] == [(SHA_A, "first"), (SHA_B, "changed")]
    assert rows[0]["kernel_names"] == "r_16_16, E_16"
    assert "acc0 += data1[k] * data2[k];" in rows[0]["source"]
    assert "float4 acc0" in rows[1]["source"] and "__builtin_exp2f" in rows[1]["source"]
    assert rows[1]["source"].index("// 0: r_16_16_4") < rows[1]["source"].index("// 1: E_16")
    rows = run(db, "source_history", case_name="add")
    assert [(r["sha"], r["change"], r["kernels"]) for r in rows] == [(SHA_A, "first", 1), (SHA_C, "gone", 0)]
    # a renderer never used: one "first" row without source, then nothing changes
    rows = run(db, "source_history", renderer="PTX")
    assert [(r["sha"], r["change"], r["kernels"], r["source"]) for r in rows] == [(SHA_A, "first", 0, None)]


def check_failed_runs(db: SampleDb) -> None:
    rows = run(db, "failed_runs")
    assert len(rows) == 1
    row = rows[0]
    assert (row["sha"], row["status"], row["failed_cases"], row["failed_case_names"]) == (SHA_C, "failed", 1, "add")
    assert "did not finish" in row["error"] and "exit code -11" in row["error"]
    assert "Segmentation fault" in row["stderr"]
    assert row["case_traceback"].endswith("AssertionError: shape mismatch in add")


def check_top_patterns(db: SampleDb) -> None:
    rows = run(db, "top_patterns")
    assert [(r["function_name"], r["matches"], r["tries"]) for r in rows] == [
        ("fold_mul", 9, 30), ("fold_add", 5, 20), ("<lambda>", 2, 20)]
    assert rows[0]["hit_percent"] == 30.0 and rows[2]["line"] == 52
    rows = run(db, "top_patterns", commit=db.version_a)
    assert [r["function_name"] for r in rows] == ["fold_add", "<lambda>", "fold_mul_zero"]
    # an unknown commit is said, not an empty result that would read as "nothing matched"
    assert [(r["matcher"], r["matches"]) for r in run(db, "top_patterns", commit="not-a-commit")] == [
        ("no stored commit matches 'not-a-commit'", None)]


def check_pattern_first_seen(db: SampleDb) -> None:
    rows = run(db, "pattern_first_seen")
    assert len(rows) == 1
    row = rows[0]
    assert (row["function_name"], row["first_sha"], row["first_version"], row["last_sha"], row["commits_present"]) \
        == ("fold_mul", SHA_B, "0.14.0", SHA_C, 2)
    # by UPat text: every MUL rule; the lambda exists since A although its line moved
    rows = run(db, "pattern_first_seen", pattern="Ops.MUL")
    got = {(r["function_name"], r["first_sha"], r["last_sha"], r["commits_present"]) for r in rows}
    assert got == {("<lambda>", SHA_A, SHA_C, 3), ("fold_mul_zero", SHA_A, SHA_A, 1), ("fold_mul", SHA_B, SHA_C, 2)}
    assert run(db, "pattern_first_seen", pattern="") == []


def check_kernel_counts(db: SampleDb) -> None:
    rows = run(db, "kernel_counts")
    assert [(r["sha"], r["status"], r["kernel_count"], r["change"]) for r in rows] == [
        (SHA_A, "ok", 1, None), (SHA_B, "ok", 1, 0), (SHA_C, "error", 0, -1)]
    everything = run(db, "kernel_counts", case_name="")  # optional parameter left empty: all cases
    assert {(r["case"], r["sha"]): r["kernel_count"] for r in everything} == {
        ("add", SHA_A): 1, ("add", SHA_B): 1, ("add", SHA_C): 0, ("matmul", SHA_A): 2, ("matmul", SHA_B): 2,
        ("matmul", SHA_C): 2, ("relu", SHA_B): 1, ("relu", SHA_C): 1}


def check_case_results_diff(db: SampleDb) -> None:
    rows = run(db, "case_results_diff")
    assert [(r["case"], r["change"], r["status_a"], r["status_b"], r["kernels_a"], r["kernels_b"]) for r in rows] == [
        ("add", "status changed", "ok", "error", 1, 0)]
    rows = run(db, "case_results_diff", a=db.sha_a, b=db.sha_b)
    assert [(r["case"], r["change"]) for r in rows] == [("matmul", "changed"), ("relu", "added")]
    assert rows[0]["result_a"] != rows[0]["result_b"] and rows[1]["result_a"] is None


def check_runs_missing(db: SampleDb) -> None:
    rows = run(db, "runs_missing")
    assert [(r["level"], r["sha"], r["case"], r["feature"]) for r in rows] == [
        ("case", SHA_C, "relu", "uops"), ("case", SHA_B, "relu", "uops"), ("run", SHA_A, None, "schedule_linear")]
    assert rows[2]["reason"] == "no tinygrad.engine.schedule.linear"
    assert [r["sha"] for r in run(db, "runs_missing", feature="schedule_linear")] == [SHA_A]


def check_commits(db: SampleDb) -> None:
    rows = run(db, "commits")
    assert [(r["sha"], r["version"], r["runs"], r["statuses"], r["case_runs"]) for r in rows] == [
        (SHA_C, "0.14.1", 1, "failed", 3), (SHA_B, "0.14.0", 1, "ok", 3), (SHA_A, "0.13.0", 1, "ok", 2)]


def check_case_at_commit(db: SampleDb) -> None:
    rows = run(db, "case_at_commit")
    assert [(r["position"], r["kernel_name"], r["renderer"], r["node_count"]) for r in rows] == [
        (0, "r_16_16_4", "C", 7), (1, "E_16", "C", 5)]
    assert "float4 acc0" in rows[0]["source"] and rows[0]["pyrender"].endswith("ast = c6")
    rows = run(db, "case_at_commit", renderer="")  # every renderer
    assert [(r["position"], r["renderer"]) for r in rows] == [(0, "C"), (0, "LLVM"), (1, "C"), (1, "LLVM")]


CHECKS: dict[str, Callable[[SampleDb], None]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_")}


def check_passes_changed(db: SampleDb) -> None:
    rows = run(db, "passes_changed")
    # matmul kernel 0's AST changed, so its graph after the first pass did too; kernel 1 and add kept theirs
    assert [(r["case"], r["position"], r["renderer"], r["pass_position"], r["pass_a"], r["pass_b"]) for r in rows] == [
        ("matmul", 0, "C", 0, "expander", "expander")]
    assert (rows[0]["nodes_a"], rows[0]["nodes_b"]) == (7, 8)
    assert run(db, "passes_changed", b=db.version_a) == []


def check_pass_history(db: SampleDb) -> None:
    rows = run(db, "pass_history")
    # B changed the passes, C kept B's: one span each for A and for B (which C extends)
    assert [(r["sha"], r["position"], r["pass_name"], r["node_count"], r["commits"], r["until_sha"])
            for r in rows if r["position"] == 0] == [
        (db.sha_a, 0, "expander", 7, 1, db.sha_a), (db.sha_a, 0, "final rewrite", 7, 1, db.sha_a),
        (db.sha_b, 0, "expander", 8, 2, db.sha_c), (db.sha_b, 0, "final rewrite", 8, 2, db.sha_c)]


def check_op_first_pass(db: SampleDb) -> None:
    rows = run(db, "op_first_pass")
    assert [(r["position"], r["kernel_name"], r["pass_name"], r["op_count"]) for r in rows] == [
        (0, "r_16_16_4", "expander", 1), (1, "E_16", "expander", 1)]
    assert run(db, "op_first_pass", op="WMMA") == []


def check_kernel_time_history(db: SampleDb) -> None:
    rows = run(db, "kernel_time_history")
    assert [(r["sha"], r["position"], r["ns_min"]) for r in rows] == [
        (db.sha_a, 0, 100_000), (db.sha_a, 1, 100_000), (db.sha_b, 0, 300_000), (db.sha_b, 1, 100_000)]
    assert [r["ratio_to_previous"] for r in rows] == [None, None, 3.0, 1.0]
    assert {r["machine"] for r in rows} == {"5a3b1e0f5a3b1e0f"} and rows[0]["gflops"] == round(4096 / 100_000, 4)
    assert run(db, "kernel_time_history", machine="nosuch") == []


def check_compile_time_history(db: SampleDb) -> None:
    rows = run(db, "compile_time_history")
    expander = [(r["sha"], r["ms"], r["ratio_to_previous"]) for r in rows if r["step"] == "lower: expander"]
    assert expander == [(db.sha_a, 2.0, None), (db.sha_b, 6.0, 3.0)]  # 1 ms per kernel at a, 3 at b; 2 kernels
    scheduling = [(r["sha"], r["ms"], r["kernels"]) for r in rows if r["step"] == "(scheduling)"]
    assert scheduling == [(db.sha_a, 4.0, 1), (db.sha_b, 4.0, 1)]
    assert run(db, "compile_time_history", renderer="LLVM", machine="nosuch") == []


def check_kernel_slowdowns(db: SampleDb) -> None:
    rows = run(db, "kernel_slowdowns")
    assert [(r["case"], r["position"], r["ratio"], r["kernel_a"], r["kernel_b"]) for r in rows] == [
        ("matmul", 0, 3.0, "r_16_16", "r_16_16_4")]
    assert run(db, "kernel_slowdowns", threshold="3") == []  # 3x is not more than 300% slower
    assert run(db, "kernel_slowdowns", a=db.sha_b, b=db.version_a) == []  # faster is no slowdown


def check_passes_at_commit(db: SampleDb) -> None:
    rows = run(db, "passes_at_commit")
    # the sample records passes for C only: every row is C's, in pipeline order per kernel (C and LLVM sharing a
    # row: tests/test_viz.py, on real extractions)
    assert [(r["position"], r["pass_position"], r["pass_name"], r["node_count"], r["renderers"]) for r in rows] == [
        (0, 0, "expander", 8, "C"), (0, 1, "final rewrite", 8, "C"),
        (1, 0, "expander", 6, "C"), (1, 1, "final rewrite", 6, "C")]
    assert [r["pass_position"] for r in run(db, "passes_at_commit", kernel="1")] == [0, 1]
    (missing,) = run(db, "passes_at_commit", commit="nosuch")
    assert missing["kernel_name"] == "no stored commit matches 'nosuch'"


CHECKS["passes_at_commit"] = check_passes_at_commit
CHECKS["kernel_time_history"] = check_kernel_time_history
CHECKS["kernel_slowdowns"] = check_kernel_slowdowns
CHECKS["compile_time_history"] = check_compile_time_history
CHECKS["passes_changed"] = check_passes_changed
CHECKS["pass_history"] = check_pass_history
CHECKS["op_first_pass"] = check_op_first_pass


def test_every_query_file_has_a_check_and_parameters() -> None:
    names = {name for name in load_queries() if not is_svod_query(name)}  # Svod queries: tests/test_svod.py
    assert len(names) >= 9
    assert names == set(CHECKS), "every queries/*.sql needs a check_<name> here"
    assert names <= set(query_params(SampleDb(Path("unused")))), "and parameters in sample_bundles.query_params"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_query(sample: SampleDb, name: str) -> None:
    CHECKS[name](sample)


@pytest.mark.parametrize("path", sorted(QUERIES_DIR.glob("*.sql")), ids=lambda p: p.stem)
def test_query_file_header(path: Path) -> None:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("-- title: ")
    assert any(line.startswith("-- description: ") for line in lines[:6])
    assert any(line.startswith("-- parameters: ") for line in lines[:8])
    query = parse_query(path)
    assert query.title and query.description and query.name == path.stem
    assert set(query.parameter_names) == set(sql_parameters(query.sql))
    body = "\n".join(line for line in lines if not line.startswith("--")).strip().rstrip(";")
    assert ";" not in body, "one statement per file"


def test_header_parsing(tmp_path: Path) -> None:
    path = tmp_path / "demo.sql"
    path.write_text("-- title: Demo\n-- description: first line\n--   second line\n"
                    "-- parameters: a (commit: sha, prefix or version),\n--   b (optional: anything)\n"
                    "SELECT :a AS a, :b AS b, ':not_a_param' AS s -- :nor_this\n")
    query = parse_query(path)
    assert query.description == "first line second line"
    assert [(p.name, p.optional) for p in query.parameters] == [("a", False), ("b", True)]
    assert query.parameters[0].description == "commit: sha, prefix or version"
    with sqlite3.connect(":memory:") as conn:
        assert run_query(conn, query, {"a": "x"}).dicts() == [{"a": "x", "b": "", "s": ":not_a_param"}]
        with pytest.raises(QueryError, match=r"needs -p a=\.\.\. \(commit: sha"):
            run_query(conn, query, {})
        with pytest.raises(QueryError, match="no parameter 'c'"):
            run_query(conn, query, {"a": "x", "c": "y"})
    path.write_text("-- title: Bad\n-- parameters: a\nSELECT :a, :b\n")
    with pytest.raises(QueryError, match="declares parameters"):
        parse_query(path)


def test_unknown_query_lists_the_available_ones() -> None:
    with pytest.raises(QueryError) as info:
        get_query("kernels_changd")
    assert "no query named 'kernels_changd'" in str(info.value)
    assert "kernels_changed" in str(info.value) and "failed_runs" in str(info.value)
    assert get_query("failed_runs.sql").name == "failed_runs"


# --- resolve_commit ---

def test_resolve_commit(sample: SampleDb) -> None:
    engine = open_engine(sample.path, writer=False)
    with engine.connect() as conn:
        assert resolve_commit(conn, SHA_B).sha == SHA_B
        assert resolve_commit(conn, SHA_B[:7]).sha == SHA_B
        assert resolve_commit(conn, SHA_B[:7].upper()).sha == SHA_B
        assert resolve_commit(conn, "0.13.0").sha == SHA_A
        row = resolve_commit(conn, " 0.14.1 ")
        assert (row.sha, row.version, row.subject) == (SHA_C, "0.14.1", "newest: add broke")
        with pytest.raises(CommitNotFound, match="no stored commit matches 'deadbeef'; 3 commits"):
            resolve_commit(conn, "deadbeef")
        with pytest.raises(CommitNotFound, match="at least 4 hex digits"):
            resolve_commit(conn, "a1")
        with pytest.raises(CommitNotFound, match="empty"):
            resolve_commit(conn, "")
    engine.dispose()
    with sqlite3.connect(sample.path) as raw:
        assert resolve_commit(raw, "0.14.0").sha == SHA_B


def test_resolve_commit_ambiguity(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "refs.db")
    upgrade(engine)
    with engine.begin() as conn:
        for sha, version, date in [("abcd1111" + "0" * 32, "0.14.0", "2026-01-01"),
                                   ("abcd2222" + "0" * 32, "0.14.0", "2026-01-02"),
                                   ("tree:" + "f" * 64, "0.14.0", None)]:
            conn.execute(text("INSERT INTO tinygrad_commits (sha, tree_hash, version, committed_at) "
                              "VALUES (:sha, 'x', :version, :date)"), {"sha": sha, "version": version, "date": date})
        with pytest.raises(CommitNotFound, match=r"'abcd' is ambiguous: it is a prefix of 2 commits"):
            resolve_commit(conn, "abcd")
        with pytest.raises(CommitNotFound, match=r"'0\.14\.0' is ambiguous: it is the version of 3 commits") as info:
            resolve_commit(conn, "0.14.0")
        assert "abcd2222" in str(info.value) and "tree:ffff" in str(info.value)
        assert resolve_commit(conn, "abcd2").sha.startswith("abcd2222")
        assert resolve_commit(conn, "tree:fff").sha == "tree:" + "f" * 64
    engine.dispose()


# --- the CLI ---

def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_cli_query_json_csv_and_table(sample: SampleDb) -> None:
    db = str(sample.path)
    result = invoke("query", "kernels_changed", "-p", f"a={SHA_A[:8]}", "-p", "b=0.14.0", "--jsonl", "--db", db)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert {(r["case"], r["change"]) for r in rows} == {("matmul", "removed"), ("matmul", "added"), ("relu", "added")}
    result = invoke("query", "top_patterns", "--param", "commit=0.14.0", "-p", "case_name=matmul", "--csv", "--db", db)
    assert result.exit_code == 0, result.output
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["function_name"] for r in table] == ["fold_mul", "fold_add", "<lambda>"]
    result = invoke("query", "failed_runs", "--db", db)
    assert result.exit_code == 0, result.output
    # piped: one block per row (the values span lines), each column on its own line
    assert result.stdout.startswith("-[ row 1 ]")
    assert f"sha               | {SHA_C}" in result.stdout
    assert "| Fatal Python error: Segmentation fault" in result.stdout


def test_cli_query_errors(sample: SampleDb) -> None:
    db = str(sample.path)
    result = invoke("query", "nope", "--db", db)
    assert result.exit_code == 1 and "no query named 'nope'" in result.output and "source_history" in result.output
    result = invoke("query", "source_history", "-p", "case_name=matmul", "--db", db)
    assert result.exit_code == 1 and "renderer" in result.output
    result = invoke("query", "top_patterns", "-p", "commit=ffff0000", "-p", "case_name=matmul", "--db", db)
    assert result.exit_code == 1 and "no stored commit matches 'ffff0000'" in result.output
    result = invoke("query", "failed_runs", "-p", "oops", "--db", db)
    assert result.exit_code == 1 and "not key=value" in result.output
    result = invoke("query", "failed_runs", "--db", str(sample.path.parent / "absent.db"))
    assert result.exit_code == 1 and "does not exist" in result.output


def test_cli_lists_queries() -> None:
    for args in (("query", "--list"), ("queries",)):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        for name in load_queries():
            assert name in result.stdout
        assert "[renderer]" in result.stdout  # optional parameters, not eaten as markup


def test_views_of_migration_0021_hold_the_rows_of_their_old_definitions(sample: SampleDb, tmp_path: Path) -> None:
    """v_passes, v_pattern_matches and v_run_cases, rewritten for speed (one join of case sets to current runs),
    list exactly the rows their previous definitions did, a run that is not current left out by both."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("m0021", QUERIES_DIR.parent / "migrations" / "versions"
                                                  / "0021_browse_speed.py")
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    copy = tmp_path / "copy.db"
    with sqlite3.connect(sample.path) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    with sqlite3.connect(copy) as conn:  # an older attempt at a stored commit: no longer current
        conn.execute("INSERT INTO runs (commit_id, suite_id, backend, renderers, status, ingested_at, tgstore_version, "
                     "is_current, case_set_id, case_seconds) SELECT commit_id, suite_id, backend, renderers, status, "
                     "ingested_at, tgstore_version, 0, case_set_id, case_seconds FROM runs WHERE is_current = 1 "
                     "AND case_set_id IS NOT NULL ORDER BY id LIMIT 1")
        for view, old in (("v_passes", migration.OLD_V_PASSES), ("v_pattern_matches", migration.OLD_V_PATTERN_MATCHES),
                          ("v_run_cases", migration.OLD_V_RUN_CASES)):
            new_rows = conn.execute(f"SELECT * FROM {view}").fetchall()
            assert new_rows, view
            assert sorted(new_rows, key=repr) == sorted(conn.execute(old).fetchall(), key=repr), view
            not_current = conn.execute(f"SELECT count(*) FROM {view} WHERE run_id IN (SELECT id FROM runs "
                                       "WHERE is_current = 0)").fetchone()[0]
            assert not_current == 0, view
