"""Parity is decided once (tgstore/svod/parity.py's `parity_report`) and stored (svod/parity_store.py); the
`parity_matrix` canned query reads what was stored and decides nothing. For every stored Svod run and every stored
tinygrad commit, every (kernel, stage) cell the query shows has the verdict, the tinygrad kernel and the renderer
`parity_report` decides on the spot. A tinygrad commit ingested after the Svod runs is decided at its ingest; a pair
not decided (a database from before that, an older DECIDER) is "not decided" in the query until `tgstore
parity-refresh`. The Svod runs are logs as Svod's developers make them: the worked example (one
kernel, two with the counter's suffix, an altered tree), a serial `cargo test` session over four backends (two of
them GPU skips), a panic mid-kernel, default threads, and switch combinations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cli import tgstore
from svod_emission import Run, Switches
from svod_fixtures import CASE, CASE_SOURCE, worked_example_log
from svod_runs import panic_session, serial_session, threaded_log

from tgstore.db.engine import open_engine
from tgstore.svod.parity import parity_report

QUERY = (Path(__file__).resolve().parent.parent / "queries" / "parity_matrix.sql").read_text(encoding="utf-8")
COMPARED = ("equal", "differs")
SWITCHES = [Switches("svod_schedule=trace,svod_codegen=trace", True, "", "", True, True),
            Switches("svod_schedule::optimizer=debug", per_stage=True), Switches(None, per_stage=True),
            Switches(None, dump_stage=""), Switches("svod_schedule=debug,svod_codegen=trace", canonical="")]


def svod_logs(tmp: Path) -> list[list[Path]]:
    """Each entry: the paths of one `ingest-svod` call."""
    logs: list[list[Path]] = []

    def write(name: str, text: str, files: dict[str, str] | None = None) -> None:
        path = tmp / f"{name}.log"
        path.write_text(text, encoding="utf-8")
        entry = [path]
        if files:
            folder = tmp / f"{name}-dumps"
            folder.mkdir()
            for file, content in files.items():
                (folder / file).write_text(content, encoding="utf-8")
            entry.append(folder)
        logs.append(entry)

    write("one-kernel", worked_example_log())
    write("two-kernels", worked_example_log(kernels=2))
    write("altered", worked_example_log().replace("[116] CONST(Int(4)) : Scalar(WeakInt) shape=[]",
                                                  "[116] CONST(Int(8)) : Scalar(WeakInt) shape=[]"))
    write("serial-session", serial_session())
    write("panic", panic_session())
    write("default-threads", threaded_log(kernels=3, seed=7))
    for i, switches in enumerate(SWITCHES):
        text, files = Run(switches, 2).build()
        write(f"switches-{i}", text, files)
    return logs


@pytest.fixture(scope="module")
def agreement_db(tmp_path_factory, tinygrad_release) -> tuple[Path, dict]:
    """tinygrad 0.13.0 (C and LLVM, stages) of the worked example's program, every Svod log above (parity decided
    at ingest-svod), then 0.14.0 (decided at its ingest, against every Svod run); the query's verdicts for 0.14.0
    right after that ingest, its stderr and what `parity-refresh` said after it are returned beside the database."""
    base = tmp_path_factory.mktemp("agreement")
    cases = base / "cases.py"
    cases.write_text(CASE_SOURCE)
    db = base / "a.db"

    def ingest(version: str) -> str:
        proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(version), "--cases", cases,
                       "--renderers", "C,LLVM")
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    ingest("0.13.0")
    for paths in svod_logs(base):
        proc = tgstore("ingest-svod", *paths, "--case", CASE, "--db", db)
        assert proc.returncode == 0, (paths, proc.stderr)
    later = ingest("0.14.0")
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        before = [dict(r) for r in conn.execute(QUERY, {"case_name": CASE, "svod_run": "", "commit": "0.14.0"})]
    proc = tgstore("parity-refresh", CASE, "--db", db)
    assert proc.returncode == 0 and "pairs decided" in proc.stderr, proc.stderr
    return db, {"after_ingest": before, "ingest": later, "refresh": proc.stderr}


def copy_db(source: Path, target: Path) -> Path:
    """A copy with what the source's WAL holds (a file copy would miss it)."""
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def matrix_cells(db: Path, run: int, sha: str) -> dict[tuple[int, str], tuple[str, int | None, str]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(QUERY, {"case_name": CASE, "svod_run": str(run), "commit": sha}).fetchall()
    return {(r["kernel_index"], r["stage"]): (r["verdict"].split(" (")[0], r["tinygrad_position"], r["renderer"])
            for r in rows}


def test_parity_and_parity_matrix_agree_on_every_stored_pair(agreement_db: tuple[Path, dict]) -> None:
    agreement_db, _ = agreement_db
    with sqlite3.connect(agreement_db) as conn:
        runs = [r for (r,) in conn.execute("SELECT id FROM svod_runs WHERE kernel_count > 0 ORDER BY id")]
        shas = [s for (s,) in conn.execute("SELECT DISTINCT c.sha FROM runs r JOIN tinygrad_commits c "
                                           "ON c.id = r.commit_id WHERE r.is_current")]
    assert len(runs) >= 10 and len(shas) == 2
    engine = open_engine(agreement_db, writer=False)
    compared_cells = 0
    renderers: set[str] = set()
    for run in runs:
        for sha in shas:
            with engine.connect() as conn:
                report = parity_report(conn, CASE, svod_run=run, commit=sha)
            decided = {(k.index, s.stage): (s.verdict, k.tinygrad_position, k.renderer)
                       for k in report.kernels if k.index is not None for s in k.stages if s.basis != "canonical"}
            cells = matrix_cells(agreement_db, run, sha)
            for key, (verdict, position, renderer) in cells.items():
                if verdict in COMPARED:
                    assert decided.get(key) == (verdict, position, renderer), (run, sha, key, cells[key])
            for key, (verdict, position, renderer) in decided.items():
                if verdict in COMPARED:
                    assert cells.get(key) == (verdict, position, renderer), (run, sha, key, decided[key])
                    compared_cells += 1
                    renderers.add(renderer)
    assert compared_cells > 100 and renderers == {"C", "LLVM"}, (compared_cells, renderers)


def test_a_tinygrad_commit_ingested_later_is_decided_at_its_ingest(agreement_db: tuple[Path, dict]) -> None:
    """`tgstore ingest` of a tinygrad commit decides its parity with every stored Svod run of its cases: the query
    shows verdicts for it at once, and `parity-refresh` afterwards finds nothing left to decide."""
    db, seen = agreement_db
    with sqlite3.connect(db) as conn:
        runs = conn.execute("SELECT count(*) FROM svod_runs").fetchone()[0]
        pairs = conn.execute("SELECT count(*) FROM svod_parity_pairs").fetchone()[0]
    assert f"Svod parity: {runs} Svod run × tinygrad run pairs decided against this run" in seen["ingest"], \
        seen["ingest"]
    after = seen["after_ingest"]
    assert after and "not decided" not in {r["verdict"] for r in after}, {r["verdict"] for r in after}
    assert pairs == 2 * runs, (pairs, runs)  # every Svod run against both current tinygrad runs
    assert f"0 pairs decided, {2 * runs} already decided" in seen["refresh"], seen["refresh"]


def test_a_pair_not_decided_says_so_until_refreshed(agreement_db: tuple[Path, dict], tmp_path: Path) -> None:
    """A pair with no stored verdicts (a database from before ingest decided them, an older DECIDER's dropped) is
    "not decided" in the query, naming `parity-refresh`, which decides it."""
    db = copy_db(agreement_db[0], tmp_path / "undecided.db")
    with sqlite3.connect(db) as conn:
        tg_run = conn.execute("SELECT run_id FROM v_run_cases WHERE \"case\" = ? ORDER BY history_rank DESC LIMIT 1",
                              (CASE,)).fetchone()[0]
        conn.execute("DELETE FROM svod_parity WHERE tinygrad_run = ?", (tg_run,))
        conn.execute("DELETE FROM svod_parity_pairs WHERE tinygrad_run = ?", (tg_run,))
        conn.row_factory = sqlite3.Row
        before = [dict(r) for r in conn.execute(QUERY, {"case_name": CASE, "svod_run": "", "commit": "0.14.0"})]
    assert before and {r["verdict"] for r in before} == {"not decided"}, {r["verdict"] for r in before}
    assert all("parity-refresh" in r["why"] for r in before)
    proc = tgstore("parity-refresh", CASE, "--db", db)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        after = conn.execute(QUERY, {"case_name": CASE, "svod_run": "", "commit": "0.14.0"}).fetchall()
    assert after and not any(r[13] == "not decided" for r in after)


def test_the_query_reads_the_stored_verdicts_and_decides_nothing(agreement_db: tuple[Path, dict], tmp_path: Path
                                                                 ) -> None:
    """A stored verdict changed by hand is what the query shows (it reads, it does not decide); `parity-refresh
    --force` decides it again."""
    db = copy_db(agreement_db[0], tmp_path / "copy.db")
    with sqlite3.connect(db) as conn:
        run, tg_run, seq, kernel, stage = conn.execute(
            "SELECT svod_run, tinygrad_run, seq, kernel_index, stage FROM svod_parity WHERE verdict = 'equal' "
            "AND basis = 'tree' AND scope = 'kernel' AND kernel_index IS NOT NULL LIMIT 1").fetchone()
        conn.execute("UPDATE svod_parity SET verdict = 'differs' WHERE svod_run = ? AND tinygrad_run = ? AND seq = ?",
                     (run, tg_run, seq))
        conn.row_factory = sqlite3.Row
        shown = [dict(r) for r in conn.execute(QUERY, {"case_name": CASE, "svod_run": str(run), "commit": ""})]
    cell = [r for r in shown if (r["tinygrad_run"], r["kernel_index"], r["stage"]) == (tg_run, kernel, stage)]
    assert [r["verdict"] for r in cell] == ["differs"], cell
    proc = tgstore("parity-refresh", CASE, "--force", "--db", db)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT verdict FROM svod_parity WHERE svod_run = ? AND tinygrad_run = ? AND seq = ?",
                            (run, tg_run, seq)).fetchone()[0] == "equal"


def test_renderers_of_runs_stored_before_0020_are_filled_by_the_same_rule(tmp_path: Path) -> None:
    """A database from before `svod_kernels.renderer` (0019) gets, on upgrade, the renderer new rows are stored
    with: the test's backend variant, else the code's kind, else C."""
    from tgstore.db import downgrade, upgrade

    db = tmp_path / "s.db"
    log = tmp_path / "session.log"
    log.write_text(serial_session(("clang", "llvm")), encoding="utf-8")
    assert tgstore("ingest-svod", log, "--case", CASE, "--db", db).returncode == 0

    def renderers() -> list[tuple[str, str | None, str | None]]:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT k.test, k.code_kind, k.renderer FROM svod_kernels k "
                                "ORDER BY k.run_id, k.kernel_index").fetchall()

    stored = renderers()
    assert [(test.rsplit("::", 1)[-1], renderer) for test, _kind, renderer in stored] == [("clang", "C"),
                                                                                           ("llvm", "LLVM")]
    engine = open_engine(db)
    downgrade(engine, "0019")
    assert "renderer" not in {row[1] for row in sqlite3.connect(db).execute("PRAGMA table_info(svod_kernels)")}
    upgrade(engine)
    assert renderers() == stored


def metal_log() -> str:
    """The worked example as Svod's Metal backend prints it: the test's backend variant `metal`, and the C renderer's
    Metal dialect (`CDialect::Metal`, codegen/src/c/metal.rs at npatsakula/svod@16730a5b) in the `c codegen: final
    generated code` event; Metal's runtime prints no `Compiling LLVM IR`."""
    from svod_concurrency import code_event

    lines = []
    for line in worked_example_log(test="test::reduce::sum_axis1::metal").split("\n"):
        if '"llvm codegen: final generated code"' in line:
            line = code_event([0], "metal", "r_8_16_4").rstrip("\n")
        elif '"Compiling LLVM IR"' in line:
            continue
        lines.append(line)
    return "\n".join(lines)


def test_metal_kernels_are_compared_with_tinygrads_metal_renderer(tmp_path: Path, tinygrad_release) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text(CASE_SOURCE)
    db = tmp_path / "m.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases, "--renderers",
                   "METAL,LLVM", "--stages", "METAL,LLVM")
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "metal.log"
    log.write_text(metal_log(), encoding="utf-8")
    proc = tgstore("ingest-svod", log, "--case", CASE, "--db", db)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name, code_kind, renderer FROM svod_kernels").fetchall() == \
            [("r_8_16_4", "metal", "METAL")]
        stored = conn.execute("SELECT stage, verdict, renderer, tinygrad_nodes FROM svod_parity WHERE scope = "
                              "'kernel' AND basis = 'tree' AND verdict IN ('equal', 'differs')").fetchall()
        passes = {r[0] for r in conn.execute("SELECT DISTINCT renderer FROM v_passes WHERE \"case\" = ?", (CASE,))}
    assert passes >= {"METAL", "LLVM"}, passes
    assert stored and {r[2] for r in stored} == {"METAL"} and all(r[3] is not None for r in stored), stored
    engine = open_engine(db, writer=False)
    with engine.connect() as conn:
        report = parity_report(conn, CASE)
    assert [k.renderer for k in report.kernels] == ["METAL"]
    assert {(s.stage, s.verdict) for s in report.kernels[0].stages if s.basis == "tree"} >= \
        {(stage, verdict) for stage, verdict, _r, _n in stored}


def test_refresh_decides_the_newest_commits_first_up_to_its_limit(agreement_db: tuple[Path, dict],
                                                                   tmp_path: Path) -> None:
    """`ingest-svod` decides at most INGEST_PAIRS pairs, the newest tinygrad commits first; the rest are counted and
    left to `parity-refresh`."""
    from tgstore.svod.parity_store import refresh

    db = copy_db(agreement_db[0], tmp_path / "limit.db")
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM svod_parity_pairs")
        conn.execute("DELETE FROM svod_parity")
        newest = conn.execute("SELECT run_id FROM v_run_cases WHERE \"case\" = ? ORDER BY history_rank DESC "
                              "LIMIT 1", (CASE,)).fetchone()[0]
        runs = conn.execute("SELECT count(*) FROM svod_runs").fetchone()[0]
    engine = open_engine(db)
    with engine.begin() as conn:
        report = refresh(conn, CASE, limit=runs)
    assert (report.decided + len(report.failed), report.left) == (runs, runs)
    with sqlite3.connect(db) as conn:
        assert {t for (t,) in conn.execute("SELECT DISTINCT tinygrad_run FROM svod_parity_pairs")} == {newest}


def test_a_not_decided_cell_has_a_style_of_its_own() -> None:
    """The parity page colours "not decided" (a pair `parity-refresh` has not decided) apart from the stages a log
    lacks, and the stylesheet defines it."""
    from tgstore.web.parity import Cell

    css = (Path(__file__).resolve().parent.parent / "tgstore" / "web" / "static" / "tgstore.css").read_text()
    undecided, absent = Cell("00-initial", "not decided").css, Cell("00-initial", "not in this log").css
    assert undecided != absent and f".{undecided} " in css, (undecided, absent)
