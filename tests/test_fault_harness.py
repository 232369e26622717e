"""The fault harness (issue 19, item 6): every class of bad input and fault, each run as a real tgstore process
against a copy of a real database (real extractions, tests/real_bundles.py), and after each the same checks:
the exit status, one-line stderr (no traceback), PRAGMA integrity_check and foreign_key_check, every view readable,
and the earlier runs with their kernel counts unchanged.

Classes: bundle mutations, CLI misuse, bad environment variables, a foreign database, extraction output that is no
file, Svod junk, a locked database, kills at several points, a full disk and read-only media (in mount namespaces,
where root allows), web requests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TGSTORE = [sys.executable, "-m", "tgstore"]
PAIR_CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "pair.py"


@dataclass
class Fault:
    """What to do (given the database and a scratch directory) and what must come of it."""

    run: Callable[[Path, Path, dict[str, Path]], subprocess.CompletedProcess[str] | None]
    exit_status: int | None = 1  # None: killed, or any
    says: str | None = None  # in the one line of stderr; None: stderr is not checked (a kill)
    changes_runs: bool = False  # the fault may add a run (a failed attempt); earlier runs stay as they were


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TGSTORE, *map(str, args)], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def mutated(src: Path, dst: Path, change: Callable[[list[dict]], None], raw: Callable[[str], str] | None = None
            ) -> Path:
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    change(records)
    text = "".join(json.dumps(r) + "\n" for r in records)
    dst.write_bytes((raw(text) if raw else text).encode("utf-8", "surrogateescape"))  # \udcff: the byte 0xff
    return dst


def case_of(records: list[dict]) -> dict:
    return next(r for r in records if r["kind"] == "case")


def bundle_fault(change: Callable[[list[dict]], None], says: str, raw: Callable[[str], str] | None = None) -> Fault:
    return Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--bundle",
                                        mutated(b["ptx"], tmp / "bad.jsonl", change, raw)), says=says)


def nothing(_records: list[dict]) -> None:
    pass


def killed_ingest(delay: float) -> Fault:
    def run(db: Path, tmp: Path, bundles: dict[str, Path]) -> None:
        proc = subprocess.Popen([*TGSTORE, "ingest", "--db", str(db), "--bundle", str(bundles["ptx"]), "--force"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return None
    return Fault(run, exit_status=None, changes_runs=True)


def killed_extraction(delay: float) -> Fault:
    """`tgstore ingest` extracting, killed (SIGKILL) while the child runs: what it stored stays consistent."""
    def run(db: Path, tmp: Path, bundles: dict[str, Path]) -> None:
        proc = subprocess.Popen([*TGSTORE, "ingest", "--db", str(db), "--cases", str(PAIR_CASES), "--renderers",
                                 "PTX", "--force"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return None
    return Fault(run, exit_status=None, changes_runs=True)


def locked(db: Path, tmp: Path, bundles: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        return cli("ingest", "--db", db, "--bundle", bundles["ptx"], "--force", env={"TGSTORE_BUSY_TIMEOUT": "0.5"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def foreign(db: Path, tmp: Path, bundles: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    other = tmp / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.close()
    before = other.read_bytes()
    proc = cli("ingest", "--db", other, "--bundle", bundles["ptx"])
    assert other.read_bytes() == before and not Path(f"{other}-wal").exists()
    return proc


def svod_junk(db: Path, tmp: Path, bundles: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    log = tmp / "junk.log"
    log.write_text('{"timestamp":"t","level":"DEBUG","fields":' + "[" * 100_000 + "\n"
                   + '{"fields":{"v":NaN}}\n[dump-stage] X :\n' + "(" * 10_000 + "\n")
    proc = cli("ingest-svod", log, "--case", "add", "--db", db)
    assert proc.returncode == 0 and "nested deeper" in proc.stderr and "NaN" in proc.stderr, proc.stderr
    return None  # type: ignore[return-value]


def in_namespace(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec", script], cwd=cwd,
                          capture_output=True, text=True)


def mounts_allowed(tmp: Path) -> bool:
    return shutil.which("unshare") is not None and \
        in_namespace(f"mount -t tmpfs -o size=64k tmpfs {tmp}", tmp).returncode == 0


Action = Callable[[Path, Path, dict[str, Path]], subprocess.CompletedProcess[str]]


def full_disk(command: str, free: int = 48 * 1024) -> Action:
    """`command` (with {db}, {dir}, {ptx}, {cases}) run with the database on a tmpfs `free` bytes bigger than it."""
    def run(db: Path, tmp: Path, bundles: dict[str, Path]) -> subprocess.CompletedProcess[str]:
        if not mounts_allowed(tmp):
            pytest.skip("cannot mount a tmpfs here (needs unshare and mount rights)")
        full = tmp / "full"
        full.mkdir()
        size = db.stat().st_size + free
        py, cmd = sys.executable, " ".join(TGSTORE[1:])
        line = command.format(db=f"{full}/t.db", dir=full, ptx=bundles["ptx"], cases=PAIR_CASES)
        script = f"""
mount -t tmpfs -o size={size} tmpfs {full}
cp {db} {full}/t.db
set +e
{py} {cmd} {line} > {tmp}/stdout 2> {tmp}/stderr
echo $? > {tmp}/status
cp {full}/t.db {db}
ls {full} > {tmp}/files
"""
        done = in_namespace(script, tmp)
        assert done.returncode == 0, done.stderr
        return subprocess.CompletedProcess(line, int((tmp / "status").read_text()), (tmp / "stdout").read_text(),
                                           (tmp / "stderr").read_text())
    return run


def extract_to_full_disk(db: Path, tmp: Path, bundles: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    proc = full_disk("extract -o {dir}/out.jsonl --cases {cases} --renderers C,LLVM", free=8 * 1024)(db, tmp, bundles)
    assert "out.jsonl" not in (tmp / "files").read_text()  # no partial bundle left behind
    return proc


def web(method: str, path: str, status: int) -> Fault:
    def run(db: Path, tmp: Path, bundles: dict[str, Path]) -> None:
        import httpx
        from web_server import start_server, stop_server

        server = start_server(db, tmp / "serve.log")
        try:
            response = httpx.request(method, server.root + path.replace("DB", db.stem), timeout=120)
            assert response.status_code == status, (response.status_code, response.text[:300])
        finally:
            stop_server(server)
        return None
    return Fault(run, exit_status=None)


FAULTS: dict[str, Fault] = {
    # bundle mutations
    "bundle: NaN": bundle_fault(lambda rs: case_of(rs).update(seconds="S"), "NaN is not a number",
                                raw=lambda t: t.replace('"seconds": "S"', '"seconds": NaN')),
    "bundle: Infinity": bundle_fault(lambda rs: case_of(rs).update(seconds="S"), "Infinity is not a number",
                                     raw=lambda t: t.replace('"seconds": "S"', '"seconds": Infinity')),
    "bundle: integer past SQLite": bundle_fault(lambda rs: case_of(rs)["schedule"][0].update(position=2**64),
                                                "position"),
    "bundle: negative position": bundle_fault(lambda rs: case_of(rs)["schedule"][0].update(position=-2), "position"),
    "bundle: empty case name": bundle_fault(lambda rs: case_of(rs).update(name=""), "empty"),
    "bundle: NUL in case name": bundle_fault(lambda rs: case_of(rs).update(name="\x00"), "control characters"),
    "bundle: empty tree hash": bundle_fault(lambda rs: rs[0]["tinygrad"].update(tree_hash="", git=None),
                                           "tree_hash is empty"),
    "bundle: not JSON": bundle_fault(nothing, "not valid JSON", raw=lambda t: t.replace("\n", "\n}{\n", 1)),
    "bundle: deep nesting": bundle_fault(nothing, "not valid JSON",
                                         raw=lambda t: t + '{"kind": "x", "y": ' + "[" * 20000 + "]" * 20000 + "}\n"),
    "bundle: not UTF-8": bundle_fault(nothing, "not UTF-8", raw=lambda t: t[:100] + "\udcff" + t[100:]),
    "bundle: empty file": bundle_fault(lambda rs: rs.clear(), "empty bundle"),
    # CLI misuse
    "cli: unknown renderer": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--renderers", "NOPE"),
                                   says="unknown renderer 'NOPE'"),
    "cli: markup backend": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--backend", "[/x]NOPE"),
                                 says="not a device name"),
    "cli: unknown backend": Fault(lambda db, tmp, b: cli("extract", "-o", tmp / "o.jsonl", "--backend", "NOPE"),
                                  says="no such device"),
    "cli: unknown suite": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--suite", "nope"),
                                says="no built-in suite"),
    "cli: timeout nan": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--timeout", "nan"), says="--timeout"),
    "cli: empty commit parameter": Fault(lambda db, tmp, b: cli("query", "case_at_commit", "--db", db, "-p",
                                                                "commit=", "-p", "case_name=add"), says="is empty"),
    "cli: extract to a device": Fault(lambda db, tmp, b: cli("extract", "-o", "/dev/full", "--cases", PAIR_CASES),
                                      says="not a regular file"),
    "cli: keep bundle in a directory": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--keep-bundle", tmp,
                                                                    "--cases", PAIR_CASES), says="is a directory"),
    # environment
    "env: TGSTORE_BUSY_TIMEOUT=abc": Fault(lambda db, tmp, b: cli("runs", "--db", db,
                                                                  env={"TGSTORE_BUSY_TIMEOUT": "abc"}),
                                           says="TGSTORE_BUSY_TIMEOUT='abc'"),
    "env: TGSTORE_BUSY_TIMEOUT=-1": Fault(lambda db, tmp, b: cli("ingest", "--db", db, "--bundle", b["ptx"],
                                                                 env={"TGSTORE_BUSY_TIMEOUT": "-1"}),
                                          says="TGSTORE_BUSY_TIMEOUT"),
    # databases
    "db: foreign SQLite file": Fault(foreign, says="of something else"),
    "db: locked by another writer": Fault(locked, says="locked by another writer"),
    "db: full disk during ingest": Fault(full_disk("ingest --db {db} --bundle {ptx} --force", free=4 * 1024),
                                         says="no space left"),
    "db: full disk during extraction": Fault(extract_to_full_disk, says="no space left"),
    # Svod junk (stored with its problems, exit 0)
    "svod: deep nesting and NaN": Fault(svod_junk, exit_status=None, changes_runs=True),
    # kills at several points
    **{f"kill: ingest after {d}s": killed_ingest(d) for d in (0.3, 1.5, 3.0)},
    **{f"kill: extraction after {d}s": killed_extraction(d) for d in (1.0, 4.0)},
    # web
    "web: traversal": web("GET", "/-/graph/../../etc/passwd", 404),
    "web: insert": web("POST", "/DB/runs/-/insert", 405),
}


def earlier_runs(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("""
            SELECT r.id, r.status, r.is_current, r.renderers, coalesce(sum(cr.kernel_count), 0)
            FROM runs r LEFT JOIN case_set_members m ON m.case_set_id = r.case_set_id
            LEFT JOIN case_results cr ON cr.id = m.case_result_id GROUP BY r.id ORDER BY r.id""").fetchall()


def assert_sound(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for (view,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            conn.execute(f'SELECT * FROM "{view}"').fetchall()  # every view readable, every row


@pytest.fixture(scope="module")
def base_db(tmp_path_factory, real_bundles: dict[str, Path]) -> Path:
    db = tmp_path_factory.mktemp("harness") / "base.db"
    proc = cli("ingest", "--db", db, "--bundle", real_bundles["c_llvm"])
    assert proc.returncode == 0, proc.stderr
    return db


@pytest.mark.parametrize("name", list(FAULTS))
def test_fault(tmp_path: Path, base_db: Path, real_bundles: dict[str, Path], name: str) -> None:
    fault = FAULTS[name]
    db = tmp_path / "t.db"
    shutil.copy(base_db, db)
    before = earlier_runs(db)
    proc = fault.run(db, tmp_path, real_bundles)
    if proc is not None:
        assert "Traceback" not in proc.stderr, proc.stderr
        if fault.exit_status is not None:
            assert proc.returncode == fault.exit_status, (proc.returncode, proc.stderr)
        if fault.says is not None:
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and fault.says in lines[0], lines
    assert_sound(db)
    after = earlier_runs(db)
    if fault.changes_runs:
        # an added run may replace the earlier one only with one at least as good that keeps its renderers
        kept = {r[0]: r for r in after}
        for run in before:
            if run[0] in kept:
                assert kept[run[0]][1:] == run[1:] or (kept[run[0]][2] == 0 and run[2] == 1), (run, kept[run[0]])
            else:
                current = [r for r in after if r[2] == 1]
                assert current and current[0][1] == "ok" and set(run[3].split(",")) <= set(current[0][3].split(",")) \
                    and current[0][4] == run[4], (before, after)
    else:
        assert after == before
