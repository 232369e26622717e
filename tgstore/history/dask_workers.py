"""Sweeps on a Dask cluster: `tgstore sweep --rev A..B --dask ADDRESS`.

Each commit's extraction is one Dask task, submitted through Dask's `concurrent.futures` executor
(`Client.get_executor`), so a Dask sweep is the local sweep's loop (tgstore.history.sweep.sweep) with other workers: the
client stays the only writer and ingests each bundle as it comes back. A task carries what the worker needs:
the commit's package as a `git archive` tar (or, with `--worker-repo`, the path of a tinygrad clone on the workers)
and the text of the case files; it returns the bundle compressed. Workers need tgstore installed and nothing else.

Before a run is copied instead of extracted, every worker identifies the machine keys the run recorded
(`identify`: its Python, CPU, clang, libLLVM, ...): a copy needs each of them to extract as the run's machine did.

A worker lost mid-task: the scheduler runs the task again elsewhere (up to its `allowed-failures`); only a result
that came back is ingested, so nothing is stored twice. An extraction already running when the client stops runs
to its end on its worker, and its result is dropped.

Dask is an optional extra (`pip install 'tgstore[dask]'`): this module imports it only when a cluster is asked for.
"""

from __future__ import annotations

import logging
import time
import warnings
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

from tgstore import tempdirs
from tgstore.extract.child.toolchain import identify
from tgstore.extract.runner import ExtractionResult
from tgstore.git import Commit, commit_archive, readable_archive, unpack
from tgstore.history.sweep import SweepError, SweepStopped, WorkerLost, extract_commit, extract_tree
from tgstore.pipeline import ExtractionPlan

LOCAL_PREFIX = "local:"
BUNDLE_COMPRESSION = 3  # zlib level: JSON lines shrink ~8x at a fraction of the extraction's time


@dataclass
class RemoteTask:
    commit: Commit
    plan: ExtractionPlan
    archive: bytes | None  # the commit's tree (the package, or all of it when capturing) as a tar
    worker_repo: str | None  # else: a tinygrad clone at this path on every worker
    case_files: list[tuple[str, bytes]]  # the plan's case files (name, bytes): the suite's identity is their bytes
    missing: list[str] | None = None  # package paths the client's clone could not read (not in the archive)


@dataclass
class RemoteResult:
    described: dict
    status: str
    returncode: int | None
    stderr: str
    seconds: float
    checkout_seconds: float
    bundle: bytes | None  # zlib-compressed; None when the extractor wrote none


def run_remote(task: RemoteTask) -> RemoteResult:
    """On a worker: unpack the commit, run the extraction child, return the bundle. Imports no database code."""
    with tempdirs.owned("remote") as tmp:
        tmp = Path(tmp)
        case_files = []
        for i, (name, content) in enumerate(task.case_files):
            path = tmp / "cases" / str(i) / name  # the file name is part of the suite's name ("builtin")
            path.parent.mkdir(parents=True)
            path.write_bytes(content)
            case_files.append(path)
        plan = replace(task.plan, case_files=case_files) if case_files else task.plan
        started = time.monotonic()
        if task.archive is not None:
            described, result = extract_tree(unpack(task.archive, tmp / "tree"), task.commit, plan, tmp, task.missing)
        else:
            described, result = extract_commit(Path(task.worker_repo or "."), task.commit, plan, tmp)
        bundle = result.bundle_path.read_bytes() if result.bundle_path.is_file() else None
        return RemoteResult(described, result.status, result.returncode, result.stderr, result.seconds,
                            time.monotonic() - started - result.seconds,
                            None if bundle is None else zlib.compress(bundle, BUNDLE_COMPRESSION))


def quiet_dask() -> None:
    """The client's own log lines (reconnect attempts, tracebacks) and its warning about large tasks (a package
    archive is a few MB by design) would bury the one line the CLI prints when something goes wrong."""
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name.startswith("distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)


class SchedulerLost(SweepStopped):
    """The client lost its scheduler mid-sweep: the sweep stops; what it stored is kept (a rerun resumes)."""


class DaskWorkers:
    """sweep.Workers on a Dask cluster: `tcp://host:port` of a running `dask scheduler`, or `local:N` for a
    cluster of N worker processes started here (and stopped by close)."""

    def __init__(self, address: str, repo: Path, *, worker_repo: str | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SweepError("--dask needs Dask's distributed scheduler: pip install 'tgstore[dask]'") from None
        self.repo, self.address = repo, address
        self.worker_repo = worker_repo
        self.cluster = None
        quiet_dask()
        try:
            if address.startswith(LOCAL_PREFIX):
                count = address[len(LOCAL_PREFIX):]
                if not count.isdigit() or int(count) < 1:
                    raise SweepError(f"--dask {address!r}: local:N needs a number of workers, e.g. local:2")
                self.cluster = LocalCluster(n_workers=int(count), threads_per_worker=1, processes=True,
                                            dashboard_address=None)
                self.client = Client(self.cluster)
            else:
                # how long to try: Dask's own setting (distributed.comm.timeouts.connect, 30 s unless configured,
                # e.g. by DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT)
                self.client = Client(address)
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            raise SweepError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.executor = self.client.get_executor(pure=False)
        self.width = max(1, sum(self.client.nthreads().values()))

    def submit(self, commit: Commit, plan: ExtractionPlan, workdir: Path) -> Future:
        whole_tree = plan.capture is not None
        archive, missing = None, None
        if not self.worker_repo:  # what the clone can read of the package (a whole tree for capture mode)
            archive, missing = (commit_archive(self.repo, commit.sha, whole_tree=True), None) if whole_tree \
                else readable_archive(self.repo, commit.sha)
        task = RemoteTask(commit, replace(plan, case_files=[]), archive, self.worker_repo,
                          [(Path(p).name, Path(p).read_bytes()) for p in plan.case_files], missing)
        try:
            return self.executor.submit(run_remote, task)
        except Exception as exc:
            self.check_scheduler(exc)
            raise

    def identify(self, keys: list[str]) -> list[dict[str, str | None]]:
        """Every worker's identities of the machine keys (a run is copied only where each worker would extract it
        as the run's machine did: two machines with another clang or libLLVM never copy each other's runs)."""
        try:
            return list(self.client.run(identify, keys).values())
        except Exception as exc:  # noqa: BLE001 - the scheduler gone: say so; else no probe, so no copy
            self.check_scheduler(exc)
            return []

    def check_scheduler(self, exc: Exception) -> None:
        """Raise SchedulerLost when `exc` came from the scheduler being gone (the client is no longer running)."""
        if self.client.status != "running":
            raise SchedulerLost(f"lost the Dask scheduler at {self.address} ({type(exc).__name__}); the commits "
                                "stored so far are kept: start a scheduler and run the same command again to "
                                "resume") from None

    def result(self, future: Future, workdir: Path) -> tuple[dict, ExtractionResult, float]:
        try:
            remote: RemoteResult = future.result()
        except Exception as exc:  # KilledWorker (lost too often), the task failed on the worker, or no scheduler
            self.check_scheduler(exc)
            raise WorkerLost(f"{type(exc).__name__}: {exc}") from None
        workdir.mkdir(parents=True, exist_ok=True)
        bundle_path = workdir / "bundle.jsonl"
        if remote.bundle is not None:
            bundle_path.write_bytes(zlib.decompress(remote.bundle))
        result = ExtractionResult(bundle_path, remote.status, remote.returncode, remote.stderr, remote.seconds)
        return remote.described, result, remote.checkout_seconds

    def stop(self) -> None:
        try:
            self.executor.shutdown(wait=False)  # cancels what has not started
        except Exception:  # noqa: BLE001 - with the scheduler gone there is nothing left to cancel (ClosedClientError)
            if self.client.status == "running":
                raise
        self.close()

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
