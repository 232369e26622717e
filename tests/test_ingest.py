"""Real extraction of real tinygrad releases into a real database (issue: the tgstore spine)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli import TGSTORE, rows
from releases_db import CORE_CASES
from sample_bundles import SHA_A, SHA_B, bundle_b, write_bundle
from sample_bundles import header as sample_header
from slack import generous
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from tgstore.bundle import BundleError, read_bundle
from tgstore.db import open_engine, upgrade
from tgstore.pipeline import ExtractionPlan, extract_and_ingest
from tgstore.store.ingest import ingest_bundle

ARTIFACT_TABLES = ["blobs", "kernels", "uop_nodes", "uop_edges", "linears", "linear_uops", "case_results",
                   "schedule_items", "programs", "pattern_matches", "patterns", "pattern_sets", "pattern_set_members"]
# Oldest, a middle one, newest: each a different era of tinygrad's internal API.
RELEASES = ["0.10.0", "0.12.0", "0.14.0"]


def counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ARTIFACT_TABLES}


def scalar(db: Path, sql: str, *params):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchone()[0]


def assert_consistent(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_three_releases_in_one_database(releases_db):
    assert sorted(r[0] for r in rows(releases_db, "SELECT version FROM tinygrad_commits")) == sorted(RELEASES)
    assert rows(releases_db, "SELECT DISTINCT status FROM runs") == [("ok",)]
    for version in RELEASES:
        cases = scalar(releases_db, "SELECT count(*) FROM v_run_cases WHERE version = ? AND status = 'ok'", version)
        assert cases >= 12, version
        # every case produced at least one kernel with generated C source
        without_c = rows(releases_db, """
            SELECT "case" FROM v_run_cases WHERE version = ? AND "case" NOT IN
              (SELECT "case" FROM v_sources WHERE version = ? AND renderer = 'C' AND source IS NOT NULL)""",
                         version, version)
        assert without_c == [], (version, without_c)


def test_kernel_graph_is_stored_as_nodes_and_edges(releases_db):
    kernel_id, node_count = rows(releases_db, """
        SELECT kernel_id, node_count FROM v_kernels WHERE version = '0.14.0' AND "case" = 'matmul'
        AND root_op = 'SINK'""")[0]
    nodes = rows(releases_db, "SELECT idx, op FROM uop_nodes WHERE kernel_id = ? ORDER BY idx", kernel_id)
    assert len(nodes) == node_count and nodes[-1][1] == "SINK"
    ops = {op for _, op in nodes}
    # every op of 0.14's matmul AST (it indexes its buffers: no LOAD op before lowering)
    assert ops == {"ADD", "CONST", "END", "INDEX", "MUL", "PARAM", "RANGE", "REDUCE", "SINK", "STORE"}
    # edges point backwards in toposort order: every source precedes its user
    edges = rows(releases_db, "SELECT parent_idx, child_idx FROM uop_edges WHERE kernel_id = ?", kernel_id)
    assert len(edges) >= len(nodes) - 1 and all(child < parent for parent, child in edges)


def test_eras_differ_and_missing_features_are_recorded(releases_db):
    # pyrender exists only in newer releases; 0.10 records it as missing instead of failing
    assert scalar(releases_db, """SELECT count(*) FROM v_kernels WHERE version = '0.14.0' AND pyrender IS NOT NULL""")
    assert not scalar(releases_db, """SELECT count(*) FROM v_kernels WHERE version = '0.10.0'
                                      AND pyrender IS NOT NULL""")
    missing = rows(releases_db, """SELECT m.feature FROM run_missing m JOIN v_runs r ON r.run_id = m.run_id
                                   WHERE r.version = '0.10.0'""")
    assert any("pyrender" in f for (f,) in missing)
    # the generated C of the matmul kernel changed somewhere between 0.10 and 0.14
    hashes = {r[0] for r in rows(releases_db, """SELECT source_hash FROM v_sources WHERE "case" = 'matmul'
                                                 AND renderer = 'C'""")}
    assert len(hashes) >= 2


def test_patterns_and_match_counts(releases_db):
    for version in RELEASES:
        rules = scalar(releases_db, "SELECT count(*) FROM v_commit_patterns WHERE version = ?", version)
        assert rules > 50, version
    matched = rows(releases_db, """SELECT matcher, function_name, file, line, matches FROM v_pattern_matches
                                   WHERE version = '0.14.0' AND "case" = 'softmax' ORDER BY matches DESC""")
    assert matched and matched[0][4] > 0
    assert all(file.startswith("tinygrad/") and line > 0 for _, _, file, line, _ in matched)


def test_debug_output_is_captured(releases_db):
    debug = scalar(releases_db, """SELECT debug FROM v_run_cases WHERE version = '0.14.0' AND "case" = 'matmul'""")
    assert debug and len(debug) > 100


def test_same_commit_twice_adds_no_artifact_rows(tmp_path, releases_db, tinygrad_release):
    db = tmp_path / "copy.db"
    shutil.copy(releases_db, db)
    before = counts(db)
    runs_before = scalar(db, "SELECT count(*) FROM runs")
    engine = open_engine(db)
    plan = ExtractionPlan(case_files=[CORE_CASES])  # the suite releases_db holds
    skipped = extract_and_ingest(engine, tinygrad_release("0.12.0"), plan)
    assert skipped.skipped
    redone = extract_and_ingest(engine, tinygrad_release("0.12.0"), plan, force=True)
    assert redone.status == "ok" and redone.new_case_results == 0
    assert counts(db) == before
    assert scalar(db, "SELECT count(*) FROM runs") == runs_before
    assert_consistent(db)


def test_extract_then_ingest_bundle_separately(tmp_path, tinygrad_release):
    bundle = tmp_path / "b.jsonl"
    db = tmp_path / "sep.db"
    root = tinygrad_release("0.14.0")
    # the core cases, not the 90-case suite: any real bundle shows the seam (test_extract covers the whole suite)
    subprocess.run([*TGSTORE, "extract", "--tinygrad", str(root), "-o", str(bundle), "--renderers", "C",
                    "--cases", str(CORE_CASES)], check=True)
    header = json.loads(bundle.read_text().splitlines()[0])
    assert header["kind"] == "header" and header["bundle_version"] == 3
    subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(bundle)], check=True)
    assert scalar(db, "SELECT count(*) FROM runs WHERE status = 'ok'") == 1
    assert scalar(db, "SELECT count(DISTINCT renderer) FROM programs") == 1
    # the same bundle again is recognised as already ingested
    again = subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(bundle)], capture_output=True,
                           text=True, check=True)
    assert "already ingested" in again.stderr


CRASHING_CASES = '''
import os
from tinygrad import Tensor

def case_fine():
    return Tensor.empty(4) + 1

def case_dies():
    os._exit(3)
'''

HANGING_CASES = '''
import time
from tinygrad import Tensor

def case_fine():
    return Tensor.empty(4) + 1

def case_hangs():
    time.sleep(600)
'''

RAISING_CASES = '''
from tinygrad import Tensor

def case_raises():
    raise RuntimeError("this case is broken on purpose")

def case_fine():
    return Tensor.empty(4) * 2
'''


@pytest.mark.parametrize("source,timeout,status", [(CRASHING_CASES, 300, "failed"), (HANGING_CASES, 20, "timeout")])
def test_child_crash_or_hang_becomes_a_failed_run(tmp_path, tinygrad_release, source, timeout, status):
    cases = tmp_path / "cases.py"
    cases.write_text(source)
    db = tmp_path / "t.db"
    engine = open_engine(db)
    upgrade(engine)
    plan = ExtractionPlan(case_files=[cases], renderers=["C"], timeout=timeout)
    report = extract_and_ingest(engine, tinygrad_release("0.14.0"), plan)
    assert report.status == status
    run = rows(db, "SELECT status, error FROM runs")
    assert run[0][0] == status and run[0][1]
    # the case that finished before the crash is kept
    assert rows(db, """SELECT "case", status FROM v_run_cases""") == [("fine", "ok")]
    assert_consistent(db)
    # the failed run is not "already ingested": the next ingest retries it
    cases.write_text(source.replace("os._exit(3)", "return Tensor.empty(2)").replace("time.sleep(600)",
                                                                                      "return Tensor.empty(2)"))
    plan = ExtractionPlan(case_files=[cases], renderers=["C"], timeout=generous())
    assert extract_and_ingest(engine, tinygrad_release("0.14.0"), plan).status == "ok"


def test_a_raising_case_is_recorded_and_the_run_goes_on(tmp_path, tinygrad_release):
    cases = tmp_path / "cases.py"
    cases.write_text(RAISING_CASES)
    db = tmp_path / "t.db"
    result = subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--tinygrad", str(tinygrad_release("0.10.0")),
                             "--cases", str(cases), "--renderers", "C"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert rows(db, "SELECT status FROM runs") == [("partial",)]
    cases_rows = rows(db, """SELECT "case", status, error FROM v_run_cases ORDER BY "case" """)
    assert [(c, s) for c, s, _ in cases_rows] == [("fine", "ok"), ("raises", "error")]
    assert "broken on purpose" in cases_rows[1][2]


@pytest.mark.slow  # several CLI processes
def test_bad_inputs_give_clear_errors_and_write_nothing(tmp_path):
    db = tmp_path / "t.db"
    bad_path = subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--tinygrad", str(tmp_path / "nope")],
                              capture_output=True, text=True)
    assert bad_path.returncode != 0 and "tinygrad" in bad_path.stderr.lower()
    assert "Traceback" not in bad_path.stderr

    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text(json.dumps(sample_header(SHA_A, "0.13.0", "2026-01-10T12:00:00+00:00", "a")) +
                       '\nnot json at all\n{"kind": "end"}\n')
    result = subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(corrupt)], capture_output=True,
                            text=True)
    assert result.returncode != 0 and "corrupt.jsonl:2" in result.stderr
    with pytest.raises(BundleError, match="version"):
        future = tmp_path / "future.jsonl"
        future.write_text('{"kind": "header", "bundle_version": 99}\n')
        read_bundle(future)
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello\n")
    good = write_bundle(tmp_path / "good.jsonl", bundle_b())  # bundles are checked first: this one is fine
    result = subprocess.run([*TGSTORE, "ingest", "--db", str(not_db), "--bundle", str(good)], capture_output=True,
                            text=True)
    assert result.returncode != 0 and "not a SQLite database" in result.stderr
    assert not_db.read_text() == "hello\n"
    if db.exists():
        assert scalar(db, "SELECT count(*) FROM runs") == 0


def test_ingest_bundle_rolls_back_whole_on_error(tmp_path, releases_db):
    """A bundle that breaks half-way through ingestion (here: the database reaches its size limit, as on a full
    disk) leaves the database exactly as it was."""
    db = tmp_path / "copy.db"
    shutil.copy(releases_db, db)
    before = counts(db)
    engine = open_engine(db)

    @event.listens_for(engine, "connect")
    def _no_room(dbapi_connection, _record):
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")  # what is free in the pages there, no more

    records = bundle_b()
    records[-2]["debug"] = "x" * 200_000  # more than the free room in the copied database's pages
    bundle = read_bundle(write_bundle(tmp_path / "b.jsonl", records))
    with pytest.raises(OperationalError, match="full"):
        ingest_bundle(engine, bundle)
    engine.dispose()
    assert counts(db) == before
    assert not scalar(db, "SELECT count(*) FROM tinygrad_commits WHERE sha = ?", SHA_B)


def test_a_run_is_reused_only_when_it_rendered_what_is_asked(tmp_path, tinygrad_release):
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_mul():\n    return Tensor.empty(8) * 3\n")
    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    root = tinygrad_release("0.14.0")

    def ingest(*renderers):
        return extract_and_ingest(engine, root, ExtractionPlan(case_files=[cases], renderers=list(renderers)))

    assert not ingest("C").skipped
    widened = ingest("C", "LLVM")  # the C-only run lacks LLVM: extracted again, replacing it
    assert not widened.skipped and widened.status == "ok"
    assert ingest("LLVM").skipped  # covered by the C+LLVM run
    assert rows(tmp_path / "t.db", "SELECT renderers FROM runs") == [("C,LLVM",)]
    assert {r for (r,) in rows(tmp_path / "t.db", "SELECT DISTINCT renderer FROM programs")} == {"C", "LLVM"}


@pytest.mark.slow  # several CLI processes
def test_a_locked_database_is_a_clear_error_and_loses_nothing(tmp_path):
    from sample_bundles import bundle_a, write_bundle

    db = tmp_path / "t.db"
    bundle = write_bundle(tmp_path / "a.jsonl", bundle_a())
    subprocess.run([*TGSTORE, "db", "upgrade", "--db", str(db)], check=True, capture_output=True)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
    holder.execute("INSERT INTO cases (name) VALUES ('held by the other writer')")
    try:
        blocked = subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(bundle)], capture_output=True,
                                 text=True, env={**os.environ, "TGSTORE_BUSY_TIMEOUT": "1"})
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert blocked.returncode == 1
    assert "locked by another writer" in blocked.stderr and "Traceback" not in blocked.stderr
    assert scalar(db, "SELECT count(*) FROM runs") == 0
    assert scalar(db, "SELECT count(*) FROM cases") == 1  # the other writer's work is intact
    # once the other writer is done, the same command goes through
    subprocess.run([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(bundle)], check=True, capture_output=True)
    assert scalar(db, "SELECT count(*) FROM runs") == 1
    assert_consistent(db)


def test_runs_lists_what_is_stored(releases_db):
    listed = subprocess.run([*TGSTORE, "runs", "--db", str(releases_db), "--jsonl"], capture_output=True, text=True,
                            check=True)
    runs = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(r["version"] for r in runs) == sorted(RELEASES)
    assert {r["status"] for r in runs} == {"ok"} and all(r["sha"].startswith("tree:") for r in runs)
    table = subprocess.run([*TGSTORE, "runs", "--db", str(releases_db)], capture_output=True, text=True, check=True)
    assert all(version in table.stdout for version in RELEASES)


def test_a_checkout_is_keyed_by_commit_and_local_changes_by_tree(tmp_path, tinygrad_release):
    checkout = tmp_path / "tinygrad-checkout"
    shutil.copytree(tinygrad_release("0.14.0") / "tinygrad", checkout / "tinygrad")
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tinygrad as released"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_add():\n    return Tensor.empty(4) + 1\n")
    engine = open_engine(tmp_path / "t.db")
    upgrade(engine)
    plan = ExtractionPlan(case_files=[cases], renderers=["C"])
    assert extract_and_ingest(engine, checkout, plan).commit == sha
    assert extract_and_ingest(engine, checkout, plan).skipped
    with open(checkout / "tinygrad" / "tensor.py", "a") as f:
        f.write("\n# a local change\n")
    edited = extract_and_ingest(engine, checkout, plan)  # not skipped: it is not the commit any more
    assert not edited.skipped and edited.commit.startswith(sha + "+")
    assert rows(tmp_path / "t.db", "SELECT sha, subject FROM tinygrad_commits ORDER BY id") == [
        (sha, "tinygrad as released"), (edited.commit, "tinygrad as released")]


@pytest.mark.slow  # several CLI processes
def test_tgstore_never_imports_tinygrad_itself(tmp_path):
    """Extraction happens in a child process: ingesting (and the CLI around it) leaves tinygrad out of tgstore's own
    process, so one commit's import cannot leak into the next."""
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_add():\n    return Tensor.empty(4) + 1\n")
    script = (
        "import sys; from pathlib import Path\n"
        "from tgstore.cli import app\n"
        "from tgstore.db import open_engine, upgrade\n"
        "from tgstore.extract.runner import locate_installed_tinygrad\n"
        "from tgstore.pipeline import ExtractionPlan, extract_and_ingest\n"
        "engine = open_engine(Path(sys.argv[1])); upgrade(engine)\n"
        "report = extract_and_ingest(engine, locate_installed_tinygrad(),\n"
        "                            ExtractionPlan(case_files=[Path(sys.argv[2])], renderers=['C']))\n"
        "assert report.status == 'ok', report\n"
        "leaked = sorted(m for m in sys.modules if m == 'tinygrad' or m.startswith('tinygrad.'))\n"
        "assert not leaked, leaked\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "t.db"), str(cases)], check=True)
    assert scalar(tmp_path / "t.db", "SELECT count(*) FROM runs WHERE status = 'ok'") == 1
