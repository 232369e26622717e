"""Sweeps on a real Dask cluster (a `dask scheduler` and two `dask worker` processes on loopback), and merging
databases: what a Dask sweep stores equals what a local sweep stores; a worker killed mid-sweep loses nothing; a
killed client resumes; two halves merged equal the whole (issue: all of tinygrad's history)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history
from slack import generous
from test_sweep import CASES

pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'tgstore[dask]'")

# Releases and README-only commits: the unchanged ones must share content exactly as in a local sweep.
HISTORY = [("0.12.0", "tinygrad 0.12.0"), (None, "docs one"), ("0.14.0", "tinygrad 0.14.0"), (None, "docs two")]
# Tables whose content hashes must be identical between two databases holding the same facts (case_sets are hashed
# over their members' ids, which differ between databases: their content is compared through run_cases).
CONTENT_TABLES = ["blobs", "kernels", "linears", "case_results", "graphs", "pass_lists", "patterns", "pattern_sets",
                  "match_sets", "canonical_docs", "suites"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_cli() -> str:
    found = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if found is None:
        pytest.skip("the `dask` command is not installed")
    return found


class Cluster:
    """A `dask scheduler` and `dask worker` processes on 127.0.0.1, each in its own process group."""

    def __init__(self, workdir: Path, workers: int = 2, worker_env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.worker_env = worker_env or {}
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = self._start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                     "--dashboard-address", ":0", "--no-show")
        self.workers = [self.start_worker(i) for i in range(workers)]
        self.wait_for_workers(workers)

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "w")
        env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "5",
               **(self.worker_env if name != "scheduler" else {})}
        return subprocess.Popen([dask_cli(), *args], stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                start_new_session=True, env=env, stdin=subprocess.DEVNULL)

    def start_worker(self, i: int) -> subprocess.Popen:
        return self._start(f"worker{i}", "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                           "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}-{time.monotonic_ns()}",
                           "--local-directory", str(self.workdir / f"w{i}"))

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=generous(15)) as client:
            client.wait_for_workers(count, timeout=generous(30))

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def history(tmp_path_factory, tinygrad_release) -> tuple[Path, list[str], Path]:
    base = tmp_path_factory.mktemp("dask")
    shas = build_release_history(base / "tinygrad", HISTORY, tinygrad_release)
    cases = base / "cases.py"
    cases.write_text(CASES)
    return base / "tinygrad", shas, cases


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    found = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield found
    finally:
        found.stop()


def sweep(db: Path, repo: Path, cases: Path, rev: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C", "--stages", "C",
                   "--rev", rev, *extra, timeout=generous())


def facts(db: Path) -> dict[str, object]:
    """What a database says, without ids or times: runs by commit, and every content hash per table."""
    found: dict[str, object] = {
        "runs": sorted(rows(db, "SELECT c.sha, s.hash, r.backend, r.status, r.renderers, r.is_current "
                                "FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON "
                                "s.id = r.suite_id")),
        "commits": sorted(rows(db, "SELECT sha, tree_hash, version, committed_at, subject, git_position, "
                                   "history_rank FROM tinygrad_commits")),
        "run_cases": sorted(rows(db, "SELECT c.sha, k.name, cr.hash, rc.status FROM run_cases rc JOIN runs r ON "
                                     "r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id JOIN cases k "
                                     "ON k.id = rc.case_id JOIN case_results cr ON cr.id = rc.case_result_id")),
    }
    for table in CONTENT_TABLES:
        found[table] = sorted(r[0] for r in rows(db, f"SELECT hash FROM {table}"))
    return found


@pytest.fixture(scope="module")
def local_db(history, tmp_path_factory) -> Path:
    repo, shas, cases = history
    db = tmp_path_factory.mktemp("local") / "local.db"
    proc = sweep(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "-j", "2")
    assert proc.returncode == 0, proc.stderr
    return db


def test_dask_sweep_stores_what_a_local_sweep_stores(history, cluster, local_db, tmp_path):
    repo, shas, cases = history
    db = tmp_path / "dask.db"
    proc = sweep(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--dask", cluster.address)
    assert proc.returncode == 0, proc.stderr
    assert "2 worker threads" in proc.stderr
    assert facts(db) == facts(local_db)
    assert rows(db, "SELECT count(*) FROM runs") == [(len(shas),)]
    # again: everything is stored ok, nothing is sent to the cluster
    again = sweep(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--dask", cluster.address)
    assert again.returncode == 0, again.stderr
    assert rows(db, "SELECT count(*) FROM runs") == [(len(shas),)]
    assert f"{len(shas)} skipped" in again.stderr.replace("\n", " ")


def test_worker_killed_mid_sweep_loses_nothing(history, cluster, local_db, tmp_path):
    """SIGKILL a worker (and its extraction child) while it extracts: the scheduler reruns its task on the other
    worker, and every commit ends ok, once."""
    repo, shas, cases = history
    db = tmp_path / "killed.db"
    proc = subprocess.Popen([sys.executable, "-m", "tgstore", "ingest", "--db", str(db), "--repo", str(repo),
                             "--cases", str(cases), "--renderers", "C", "--stages", "C", "--rev",
                             f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--dask", cluster.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    victim = cluster.workers[0]
    deadline = time.monotonic() + 600
    # wait until the victim runs an extraction child (a python process whose parent is the worker's process)
    while time.monotonic() < deadline and not extraction_children(victim.pid) and proc.poll() is None:
        time.sleep(0.2)
    assert extraction_children(victim.pid), "the worker never started an extraction"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    _out, err = proc.communicate(timeout=generous())
    cluster.workers[0] = cluster.start_worker(0)  # for the tests after this one
    assert proc.returncode == 0, err
    assert facts(db) == facts(local_db)
    assert rows(db, "SELECT count(*), sum(status = 'ok') FROM runs") == [(len(shas), len(shas))]


def extraction_children(worker_pid: int) -> list[int]:
    """Processes below `worker_pid` running the extraction child (tgstore/extract/child)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"child" in cmdline and b"tgstore" in cmdline and descends_from(int(entry.name), worker_pid):
                found.append(int(entry.name))
    return found


def descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return False


def test_killed_client_resumes(history, cluster, local_db, tmp_path):
    """Kill the client once the first commit is stored: a second sweep skips what is stored and does the rest."""
    repo, shas, cases = history
    db = tmp_path / "resumed.db"
    args = [sys.executable, "-m", "tgstore", "ingest", "--db", str(db), "--repo", str(repo), "--cases", str(cases),
            "--renderers", "C", "--stages", "C", "--rev", f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0],
            "--dask", cluster.address]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None and stored_runs(db) < 1:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = stored_runs(db)
    assert 1 <= before < len(shas)
    again = sweep(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--dask", cluster.address)
    assert again.returncode == 0, again.stderr
    assert f"{before} skipped" in again.stderr.replace("\n", " ")
    assert facts(db) == facts(local_db)


def stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_bad_dask_address_is_one_line(history, tmp_path):
    repo, shas, cases = history
    db = tmp_path / "none.db"
    proc = tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--rev", shas[0], "--dask",
                   f"tcp://127.0.0.1:{free_port()}", env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT":
                                                          "3s"})
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: cannot reach the Dask scheduler at tcp://127.0.0.1:")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not db.exists()  # nothing written
    bad = tgstore("ingest", "--db", db, "--dask", "local:2")
    assert bad.returncode == 1 and "need --rev" in bad.stderr


def test_merge_of_two_halves_equals_the_whole(history, local_db, tmp_path):
    repo, shas, cases = history
    first, second, merged = tmp_path / "first.db", tmp_path / "second.db", tmp_path / "merged.db"
    half = len(shas) // 2
    assert sweep(first, repo, cases, f"{shas[0]}~0..{shas[half - 1]}", "--rev", shas[0]).returncode == 0
    assert sweep(second, repo, cases, f"{shas[half - 1]}..{shas[-1]}").returncode == 0
    # a source of an older schema is upgraded in a copy; the file itself is left as it was
    assert tgstore("db", "downgrade", "-1", "--db", first).returncode == 0
    old_revision = rows(first, "SELECT version_num FROM alembic_version")
    for source in (first, second):
        proc = tgstore("merge", source, "--db", merged)
        assert proc.returncode == 0, proc.stderr
    assert rows(first, "SELECT version_num FROM alembic_version") == old_revision
    assert facts(merged) == facts(local_db)
    assert rows(merged, "PRAGMA integrity_check") == [("ok",)]
    assert rows(merged, "PRAGMA foreign_key_check") == []
    size = merged.stat().st_size
    total = rows(merged, "SELECT sum(n) FROM (SELECT count(*) AS n FROM blobs UNION ALL SELECT count(*) FROM runs)")
    again = tgstore("merge", first, second, "--db", merged, "--json")
    assert again.returncode == 0, again.stderr
    assert [line.count('"runs_added": 0') for line in again.stdout.splitlines()] == [1, 1]
    assert '"rows_added": {}' in again.stdout
    assert rows(merged, "SELECT sum(n) FROM (SELECT count(*) AS n FROM blobs UNION ALL SELECT count(*) FROM runs)") \
        == total
    assert merged.stat().st_size == size


def test_merge_keeps_the_better_run_and_refuses_bad_sources(history, local_db, tmp_path):
    """A failed run merged over an ok one stays an attempt; an ok one merged over a failed one becomes current.
    Newer and foreign databases are refused in one line, untouched."""
    _repo, shas, _cases = history
    failed = tmp_path / "failed.db"
    shutil.copy(local_db, failed)
    write(failed, "UPDATE runs SET status = 'failed', case_set_id = NULL, error = 'boom' WHERE id = "
                  "(SELECT min(id) FROM runs)")
    ok_copy = tmp_path / "ok.db"
    shutil.copy(local_db, ok_copy)
    proc = tgstore("merge", failed, "--db", ok_copy)
    assert proc.returncode == 0, proc.stderr
    assert rows(ok_copy, "SELECT status, is_current FROM runs WHERE error = 'boom'") == [("failed", 0)]
    assert rows(ok_copy, "SELECT count(*) FROM runs WHERE is_current AND status = 'ok'") == [(len(shas),)]
    # the other way round: the ok run takes over, the failed one is kept as an attempt
    failed_dest = tmp_path / "failed_dest.db"
    shutil.copy(failed, failed_dest)
    assert tgstore("merge", local_db, "--db", failed_dest).returncode == 0
    assert rows(failed_dest, "SELECT status, is_current FROM runs WHERE error = 'boom'") == [("failed", 0)]
    assert facts(failed_dest)["run_cases"] == facts(local_db)["run_cases"]
    # an equally good, later run that rendered other renderers does not take the C sources away: kept as an attempt
    other = tmp_path / "other.db"
    shutil.copy(local_db, other)
    write(other, "UPDATE runs SET renderers = 'PTX', started_at = 'later', ingested_at = '9999' WHERE id = "
                 "(SELECT min(id) FROM runs)")
    assert tgstore("merge", other, "--db", ok_copy).returncode == 0
    assert rows(ok_copy, "SELECT renderers, is_current FROM runs WHERE started_at = 'later'") == [("PTX", 0)]
    assert rows(ok_copy, "SELECT count(*) FROM runs WHERE is_current AND renderers = 'C'") == [(len(shas),)]
    # a newer schema and a foreign database are refused; nothing changes
    newer = tmp_path / "newer.db"
    shutil.copy(local_db, newer)
    write(newer, "UPDATE alembic_version SET version_num = '9999'")
    foreign = tmp_path / "foreign.db"
    write(foreign, "CREATE TABLE notes (x)")
    before = facts(ok_copy)
    for source, message in ((newer, "newer than this tgstore knows"), (foreign, "holds no tgstore schema")):
        proc = tgstore("merge", source, "--db", ok_copy)
        assert proc.returncode == 1 and message in proc.stderr.replace("\n", " "), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert facts(ok_copy) == before


def write(db: Path, sql: str) -> None:
    """One statement, committed and the connection closed (which checkpoints the WAL: the file alone is whole)."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(sql)


def test_bundle_directory_is_ingested_as_a_batch(history, local_db, tmp_path):
    """Bundles written by `tgstore extract` on machines without a shared filesystem, handed back as files."""
    repo, shas, cases = history
    folder = tmp_path / "bundles"
    folder.mkdir()
    release = repo.parent / "checkout"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(release), shas[-1]], check=True,
                   capture_output=True)
    proc = tgstore("extract", "--tinygrad", release, "--cases", cases, "--renderers", "C", "-o",
                   folder / "a.jsonl")
    assert proc.returncode == 0, proc.stderr
    (folder / "b.jsonl").write_text('{"kind": "header"\n')  # a half-written bundle: reported, skipped
    db = tmp_path / "batch.db"
    proc = tgstore("ingest-bundle", folder, "--db", db)
    assert proc.returncode == 1
    assert "[2/2]" in proc.stderr and "b.jsonl" in proc.stderr
    assert rows(db, "SELECT status FROM runs") == [("ok",)]
    subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(release)], check=True)


def test_commits_that_keep_the_package_are_copied_not_extracted(history, local_db):
    """README-only commits keep tinygrad/ byte for byte: of each release and its README-only commits one is
    extracted and the other's run is a copy of it (a commit row and a run row), which says so."""
    _repo, shas, _cases = history
    found = rows(local_db, "SELECT c.sha, r.case_set_id, r.tinygrad_path FROM runs r JOIN tinygrad_commits c ON "
                           "c.id = r.commit_id")
    assert len(found) == len(shas) == 4
    for first, second in ((shas[0], shas[1]), (shas[2], shas[3])):  # a release, then a README edit
        pair = {sha: (case_set, path) for sha, case_set, path in found if sha in (first, second)}
        assert pair[first][0] == pair[second][0]
        copies = {sha: path for sha, (_c, path) in pair.items() if path.startswith("not extracted")}
        assert len(copies) == 1
        (copy, path), = copies.items()
        assert path == f"not extracted: its package is {first if copy == second else second}'s"


def test_workers_with_another_clang_do_not_copy_this_machines_runs(history, tmp_path):
    """A run records the clang it ran (path, bytes, version). A worker whose PATH finds another clang would not
    extract as this machine did: the commit whose package equals a run stored here is extracted there, saying why;
    and back here, the run the worker made is not copied either."""
    repo, shas, cases = history  # shas[2] is tinygrad 0.14.0 (its CPU device runs clang), shas[3] keeps its package
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "clang").write_text(f"#!/bin/sh\nexec {shutil.which('clang')} \"$@\"\n")  # the same compiler, other bytes
    (other / "clang").chmod(0o755)
    db = tmp_path / "two-machines.db"
    assert sweep(db, repo, cases, shas[2]).returncode == 0  # here
    (tmp_path / "cluster").mkdir()
    found = Cluster(tmp_path / "cluster", workers=1, worker_env={"PATH": f"{other}:{os.environ['PATH']}"})
    try:
        there = sweep(db, repo, cases, shas[3], "--dask", found.address)
    finally:
        found.stop()
    assert there.returncode == 0, there.stderr
    assert f"not copied from {shas[2][:10]}: program:clang is {other / 'clang'} " in there.stderr.replace("\n", "")

    def clang(sha: str) -> str | None:
        text = rows(db, "SELECT b.text FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id JOIN blobs b ON "
                        "b.id = r.inputs_blob_id WHERE c.sha = ? AND r.is_current", sha)[0][0]
        return json.loads(text)["machine"]["program:clang"]

    assert clang(shas[3]).startswith(f"{other / 'clang'} ") and not clang(shas[2]).startswith(str(other))
    # back here, with shas[2]'s run gone: the worker's run of the same package is not copied, it is extracted
    write(db, f"DELETE FROM runs WHERE commit_id = (SELECT id FROM tinygrad_commits WHERE sha = '{shas[2]}')")
    here = sweep(db, repo, cases, shas[2])
    assert here.returncode == 0, here.stderr
    assert f"not copied from {shas[3][:10]}: program:clang is " in here.stderr.replace("\n", "")
    assert rows(db, "SELECT c.sha, r.copied_from FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                    "ORDER BY c.sha") == sorted([(shas[2], None), (shas[3], None)])
    cases_of = {sha: [r[1:] for r in facts(db)["run_cases"] if r[0] == sha] for sha in shas[2:]}
    assert cases_of[shas[2]] == cases_of[shas[3]] != []  # the same compiler under another name: the same facts


def test_merge_carries_kernel_timings(tinygrad_release, tmp_path):
    """Tables a later migration added (timing sessions, kernel timings, machines) merge without code of their own."""
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\n\ndef case_add():\n    return Tensor.empty(64, 64) + "
                     "Tensor.empty(64, 64)\n")
    timed, merged = tmp_path / "timed.db", tmp_path / "merged.db"
    proc = tgstore("ingest", "--db", timed, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases,
                   "--renderers", "C", "--stages", "none", "--time", "--time-runs", "5")
    assert proc.returncode == 0, proc.stderr
    query = ("SELECT m.fingerprint, c.sha, t.position, t.ns_min, t.status FROM kernel_timings t JOIN timing_sessions s "
             "ON s.id = t.session_id JOIN machines m ON m.id = s.machine_id JOIN tinygrad_commits c ON "
             "c.id = s.commit_id")
    expected = rows(timed, query)
    assert expected and all(r[3] > 0 for r in expected)
    for _ in range(2):
        assert tgstore("merge", timed, "--db", merged).returncode == 0
    assert rows(merged, query) == expected
    assert rows(merged, "SELECT count(*) FROM timing_sessions") == [(1,)]


def test_scheduler_killed_mid_sweep_is_one_line_and_a_rerun_resumes(history, local_db, tmp_path):
    """SIGKILL the scheduler once a commit is stored: the client says so in one line and exits 1; with a new
    scheduler the same command keeps every stored commit and does the rest."""
    repo, shas, cases = history
    (tmp_path / "first").mkdir()
    doomed = Cluster(tmp_path / "first", workers=1)
    db = tmp_path / "lost.db"
    args = ["--rev", f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--jobs", "1"]
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tgstore", "ingest", "--db", str(db), "--repo", str(repo),
                                 "--cases", str(cases), "--renderers", "C", "--stages", "C", *args, "--dask",
                                 doomed.address], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + generous(600)
        while time.monotonic() < deadline and proc.poll() is None and stored_runs(db) < 1:
            time.sleep(0.1)
        os.killpg(doomed.scheduler.pid, signal.SIGKILL)
        doomed.scheduler.wait()
        _out, err = proc.communicate(timeout=generous())
    finally:
        doomed.stop()
    before = stored_runs(db)
    assert proc.returncode == 1, err
    assert 1 <= before < len(shas), err
    errors = [line for line in err.splitlines() if not line.startswith(("[", "Dask cluster at"))]
    assert len(errors) == 1 and errors[0].startswith(f"error: lost the Dask scheduler at {doomed.address}"), err
    (tmp_path / "second").mkdir()
    again_cluster = Cluster(tmp_path / "second", workers=1)
    try:
        again = sweep(db, repo, cases, f"{shas[0]}~0..{shas[-1]}", "--rev", shas[0], "--dask", again_cluster.address)
    finally:
        again_cluster.stop()
    assert again.returncode == 0, again.stderr
    assert f"{before} skipped" in again.stderr.replace("\n", " ")
    assert facts(db) == facts(local_db)


@pytest.fixture
def namespace() -> Iterator[tuple[str, str, str]]:
    """A network namespace joined to this one by a veth pair: (name, this side's address, its address). Needs root
    and `ip`; removed afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a network namespace needs root and iproute2's `ip`")
    tag = os.getpid() % 200 + 20
    name, host_link, ns_link = f"tgstore-ns{tag}", f"tgs{tag}h", f"tgs{tag}n"
    host_ip, ns_ip = f"10.231.{tag}.1", f"10.231.{tag}.2"
    steps = [["ip", "netns", "add", name], ["ip", "link", "add", host_link, "type", "veth", "peer", "name", ns_link],
             ["ip", "link", "set", ns_link, "netns", name], ["ip", "addr", "add", f"{host_ip}/24", "dev", host_link],
             ["ip", "link", "set", host_link, "up"],
             ["ip", "netns", "exec", name, "ip", "addr", "add", f"{ns_ip}/24", "dev", ns_link],
             ["ip", "netns", "exec", name, "ip", "link", "set", ns_link, "up"],
             ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"]]
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot make a network namespace here: {' '.join(step)}: {done.stderr.strip()}")
        yield name, host_ip, ns_ip
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", host_link], capture_output=True)


def test_a_worker_in_another_network_namespace_extracts(history, local_db, namespace, tmp_path):
    """A worker at a real second address (a veth pair into another network namespace, not loopback) gets the
    package over the network and hands the bundle back; what is stored equals the local sweep's."""
    repo, shas, cases = history
    name, host_ip, ns_ip = namespace
    port = free_port()
    address = f"tcp://{host_ip}:{port}"
    logs = [open(tmp_path / f"{n}.log", "w") for n in ("scheduler", "worker")]
    scheduler = subprocess.Popen([dask_cli(), "scheduler", "--host", host_ip, "--port", str(port),
                                  "--dashboard-address", ":0", "--no-show"], stdout=logs[0], stderr=subprocess.STDOUT,
                                 cwd=tmp_path, start_new_session=True, stdin=subprocess.DEVNULL)
    worker = subprocess.Popen(["ip", "netns", "exec", name, dask_cli(), "worker", address, "--host", ns_ip,
                               "--nthreads", "1", "--no-dashboard", "--local-directory", str(tmp_path / "w")],
                              stdout=logs[1], stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True,
                              stdin=subprocess.DEVNULL)
    try:
        from distributed import Client

        with Client(address, timeout=generous(15)) as client:
            client.wait_for_workers(1, timeout=generous(60))
            workers = list(client.scheduler_info()["workers"])
        assert [w.rsplit(":", 1)[0] for w in workers] == [f"tcp://{ns_ip}"]
        db = tmp_path / "netns.db"
        proc = sweep(db, repo, cases, shas[2], "--dask", address)
        assert proc.returncode == 0, proc.stderr
    finally:
        for proc_ in (worker, scheduler):
            os.killpg(proc_.pid, signal.SIGKILL)
            proc_.wait()
        for log in logs:
            log.close()
    assert facts(db)["run_cases"] == [r for r in facts(local_db)["run_cases"] if r[0] == shas[2]]
