"""Commit sweeps: extract and ingest a range of tinygrad commits from a git repository, resumable and parallel.

* Revisions. ``A..B`` means what it means to git -- the commits reachable from B but not from A, so B is included
  and A is not -- restricted to B's first-parent chain (``git rev-list --first-parent``) and taken oldest first. On
  tinygrad's master, whose history is squash merges, that is every commit; where there are merges it is the sequence
  of states the mainline went through, not the side branches' work in progress. A single rev (sha, prefix, branch,
  tag) is that one commit. Several revs are swept in the order given, duplicates once.
* Resume. A commit that already has an ``ok`` run for this suite and backend holding what is asked (its settings,
  and for a timed sweep this machine's timings of at least its --time-runs: history/stored.py) is skipped before
  anything is checked out; a ``failed``, ``timeout`` or ``partial`` run is extracted again and replaced. Each commit
  is ingested (in one transaction) as soon as its extraction finishes, so killing a sweep loses only the commits in
  flight.
* Parallelism. A sweep keeps as many commits in flight as its workers run at once: `jobs` threads here
  (LocalWorkers), each checking a commit's package out with `git archive` (a whole worktree when capturing) and
  running the extractor on it in a child process (``tgstore.extract.runner``), or the worker threads of a Dask
  cluster (``tgstore.history.dask_workers``). Here the cores are shared: an extraction starting while others run
  gets the cores they leave idle, so one running alone (its successor waits to know whether it needs extracting at
  all) runs its cases in all of them (`--jobs` of the child; the bundle is the same). The calling thread is the
  only writer and ingests the bundles one by one; worktrees left behind by a killed sweep are removed by the next
  one.
* Unchanged packages. A commit whose package (`tinygrad/` and the version files) is byte-identical to a stored
  commit's, or to one ingested ok earlier in the sweep, has that run copied instead of being extracted
  (package_keys, CommitQueue): the extraction sees nothing else of a commit.
* Skip by what ran. A commit that changes no file its first parent's stored run read (nor the entries of a directory
  it loaded from or listed) has that run copied too, saying so (history/skip.py). `skip=False` (`--no-skip`)
  extracts every commit.
* Partial clones. A commit whose package the clone cannot fully read (missing objects) is extracted from what can be
  read; the missing paths are recorded on the run, and a run that could have read one is failed as untestable,
  naming it.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine

from tgstore import tempdirs
from tgstore.extract import child
from tgstore.extract.child.toolchain import identify
from tgstore.extract.runner import ExtractionResult, TinygradNotFound, resolve_tinygrad_root
from tgstore.git import (
    Commit,
    GitError,
    Tree,
    checkout,
    clean_stale_worktrees,
    first_parents,
    package_keys,
    package_tree_hash,
    readable_archive,
    tree_of,
    unpack,
)
from tgstore.history import skip as skip_by
from tgstore.history.stored import Stored, stored_commits
from tgstore.pipeline import ExtractionPlan, default_workers, extract_bundle, ingest_result, record_failure
from tgstore.store import after_store
from tgstore.store.rows import FAILED
from tgstore.store.runs import ExtractionOutcome, copy_run

# git's one-line errors are a sweep's (the CLI catches SweepError for both)
SweepError = GitError


class SweepStopped(SweepError):
    """Where the extractions run is gone (a Dask scheduler lost): the sweep stops, keeping what it stored."""


class WorkerLost(Exception):
    """A remote extraction that did not come back (its worker died more often than the cluster retries a task)."""


def _kill_own_children() -> None:
    """Kill the process groups of this process's children (the extraction children run in their own sessions, so
    an interrupt does not reach them); Linux only, a no-op elsewhere."""
    me = os.getpid()
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            pid = int(entry.name)
            try:
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


# ---------------------------------------------------------------- one commit


def extract_commit(repo: Path, commit: Commit, plan: ExtractionPlan, workdir: Path) -> tuple[dict, ExtractionResult]:
    """Check `commit` out and run the extractor on it (in a child process); the bundle goes to workdir/bundle.jsonl.
    Returns the tinygrad description for the run and the extraction result; never raises for tinygrad's failures.
    The package is what the clone can read of it (`git.readable_archive`); the paths it lacks are described."""
    if plan.capture is not None:
        with checkout(repo, commit.sha) as tree:
            return extract_tree(tree, commit, plan, workdir)
    archive, missing = readable_archive(repo, commit.sha)
    base = tempdirs.make("pkg")
    try:
        return extract_tree(unpack(archive, base / "tree"), commit, plan, workdir, missing)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def extract_tree(tree: Path, commit: Commit, plan: ExtractionPlan, workdir: Path,
                 missing: list[str] | None = None) -> tuple[dict, ExtractionResult]:
    """Run the extractor on `commit`'s checked-out `tree` (without the `missing` paths the clone lacks); the bundle
    goes to workdir/bundle.jsonl."""
    out = workdir / "bundle.jsonl"
    described = child.describe_tinygrad(tree, commit.git())
    if missing:
        described["missing_paths"] = [[path, skip_by.nearest_directory(tree, path)] for path in missing]
    try:
        root = resolve_tinygrad_root(tree)
    except TinygradNotFound as exc:
        return described, ExtractionResult(out, "failed", None, f"[tgstore] commit {commit.sha}: {exc}\n", 0.0)
    return described, extract_bundle(root, out, plan, git=commit.git())


# ---------------------------------------------------------------- sweeps


@dataclass
class CommitOutcome:
    commit: Commit
    status: str  # ok | partial | failed | timeout | skipped
    extract_seconds: float = 0.0  # the extraction child
    ingest_seconds: float = 0.0
    checkout_seconds: float = 0.0  # worktree add and remove, tree hash
    run_id: int | None = None
    new_case_results: int = 0
    error: str | None = None
    copied_from: str | None = None  # not extracted: a copy of this stored commit's run
    copy_reason: str | None = None  # why that is this commit's output (package identical, or nothing read changed)
    note: str | None = None  # why it was skipped, or what its stored run lacked (so it was extracted or copied)

    @property
    def seconds(self) -> float:
        return self.checkout_seconds + self.extract_seconds + self.ingest_seconds


@dataclass
class SweepSummary:
    outcomes: list[CommitOutcome] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[CommitOutcome]:
        return [o for o in self.outcomes if o.status in FAILED]


def _last_line(text_: str) -> str:
    lines = [ln.strip() for ln in (text_ or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


class Reporter:
    """What a sweep tells about its progress; the CLI shows it (tgstore.cli.progress.SweepReporter)."""

    def start(self, total: int, skipped: list[CommitOutcome]) -> None: ...

    def running(self, commits: list[Commit]) -> None: ...

    def finished(self, outcome: CommitOutcome) -> None: ...


class Workers(Protocol):
    """Where a sweep's extractions run: threads here (LocalWorkers) or a Dask cluster (history.dask_workers). The
    sweep keeps `width` commits in flight and ingests each result itself: the client is the only writer."""

    width: int

    def submit(self, commit: Commit, plan: ExtractionPlan, workdir: Path) -> Future: ...

    def result(self, future: Future, workdir: Path) -> tuple[dict, ExtractionResult, float]:
        """(tinygrad description, extraction result with its bundle at workdir/bundle.jsonl, checkout seconds)."""
        ...

    def stop(self) -> None:
        """Stop at once (Ctrl-C, a database error): cancel what has not started, end what has."""
        ...

    def identify(self, keys: list[str]) -> list[dict[str, str | None]]:
        """Each machine's identities of the machine keys (extract/child/toolchain.py) where the extractions run:
        a run is copied only where every one of them identifies as the run's machine did."""
        ...


class LocalWorkers:
    """`jobs` threads on this machine, each checking a commit out of `repo` and running the extraction child."""

    def __init__(self, repo: Path, jobs: int) -> None:
        self.repo = repo
        self.width = max(1, jobs)
        self.pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="tgstore-sweep")
        self.futures: list[Future] = []

    def submit(self, commit: Commit, plan: ExtractionPlan, workdir: Path) -> Future:
        self.futures.append(self.pool.submit(self._work, commit, plan, workdir))
        return self.futures[-1]

    def identify(self, keys: list[str]) -> list[dict[str, str | None]]:
        return [identify(keys)]  # the extraction child runs this interpreter, with this PATH and HOME

    def _work(self, commit: Commit, plan: ExtractionPlan, workdir: Path) -> tuple[dict, ExtractionResult, float]:
        workdir.mkdir()
        st = time.monotonic()
        described, result = extract_commit(self.repo, commit, plan, workdir)
        return described, result, time.monotonic() - st - result.seconds

    def result(self, future: Future, workdir: Path) -> tuple[dict, ExtractionResult, float]:
        return future.result()

    def stop(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        # the extraction children run in their own sessions, out of Ctrl-C's reach: kill them (their threads then
        # remove their worktrees), again while a worker may still be starting one
        deadline = time.monotonic() + 10
        while not all(f.done() for f in self.futures) and time.monotonic() < deadline:
            _kill_own_children()
            time.sleep(0.1)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


TREES_KEPT = 64  # a tree is some 500 paths: a whole-history sweep must not keep all 7,576


class CommitQueue:
    """The commits a sweep has still to store, in order, and which of them need no extraction (with `skip`):

    * a commit whose package equals a stored commit's (or one ingested ok earlier in this sweep) has that run copied;
      while the first commit of a package is in flight, the others wait for it;
    * a commit whose first parent has a stored run (holding the asked settings) that read nothing the commit
      changed has that run copied (tgstore.skip); while its parent is in flight, a commit waits for it unless the
      change already touches what the last run read.

    Either copy needs the source run to hold what the plan asks for, and the machines that would extract (`probe`:
    Workers.identify) to identify as the source run's machine did (its clang, libLLVM, Python, ...); a commit that is
    extracted though it could have been copied says why (`notes`). Capture and timed runs are never copied."""

    def __init__(self, engine: Engine, repo: Path, plan: ExtractionPlan, todo: list[Commit], stored: set[str], *,
                 skip: bool = True, probe: Callable[[list[str]], list[dict]] | None = None):
        self.engine, self.repo, self.plan = engine, repo, plan
        self.asked = plan.settings
        self.probe = probe or (lambda keys: [identify(keys)])
        self.notes: dict[str, str] = {}  # sha -> why it was not copied
        self.pending = deque(todo)
        # capture runs the commit's own tests, and a timed sweep wants each commit's own timings (compile times
        # too): none copies
        copies = skip and plan.capture is None and not (plan.time or plan.compile_times)
        self.keys = package_keys(repo, [c.sha for c in todo] + sorted(stored)) if copies else {}
        self.stored = {self.keys[sha]: sha for sha in sorted(stored) if sha in self.keys}
        self.leading: set[str] = set()  # packages whose first commit is being extracted
        self.waiting: dict[str, list[Commit]] = {}  # "package:KEY" or "commit:SHA" -> commits waiting for it
        self.parents = first_parents(repo, [c.sha for c in todo]) if copies else {}
        self.open = {c.sha for c in todo}  # not yet stored, copied or failed in this sweep
        self.inputs: dict[str, dict] = {}  # sha -> what its stored ok run read (tgstore.skip)
        if copies:
            with engine.connect() as conn:
                parents = sorted({p for p in self.parents.values() if p} | stored)
                self.inputs = skip_by.stored_inputs(conn, self.asked, parents)
        first = self.parents.get(todo[0].sha) if todo else None
        # what the latest run read: whether a commit waits for its parent is guessed from it
        self.latest = self.inputs.get(first or "") or next(iter(self.inputs.values()), None)
        self.trees: dict[str, Tree] = {}

    def tree(self, sha: str) -> Tree:
        """The commit's package tree; the last few are kept (a commit and its parent are asked for in turn)."""
        if sha not in self.trees:
            if len(self.trees) >= TREES_KEPT:
                del self.trees[next(iter(self.trees))]
            self.trees[sha] = tree_of(self.repo, sha)
        return self.trees[sha]

    def next_to_extract(self, copied: Callable[[CommitOutcome], None]) -> Commit | None:
        """The next commit to extract; the copies made on the way there are passed to `copied`."""
        while self.pending:
            commit = self.pending.popleft()
            key = self.keys.get(commit.sha)
            if key is None:
                return commit
            if key in self.stored:
                source = self.stored[key]
                if self._copy(commit, source, f"its package is {source}'s", copied, None):
                    continue
                del self.stored[key]  # that run is gone (replaced meanwhile): extract this one
            if key in self.leading:
                self.waiting.setdefault(f"package:{key}", []).append(commit)
                continue
            parent = self.parents.get(commit.sha)
            if parent in self.inputs:
                why = skip_by.why_not_same(self.tree(commit.sha), self.inputs[parent])
                if why is None and self._copy(commit, parent, f"it changes no file {parent}'s run read", copied,
                                              package_tree_hash(self.repo, self.tree(commit.sha))):
                    continue
            elif parent in self.open and (self.latest is None or not skip_by.touches(
                    self.tree(parent), self.tree(commit.sha), self.latest)):
                self.waiting.setdefault(f"commit:{parent}", []).append(commit)  # likely a copy of its parent's run
                continue
            self.leading.add(key)
            return commit
        return None

    def _copy(self, commit: Commit, source: str, reason: str, copied: Callable[[CommitOutcome], None],
              tree_hash: str | None) -> bool:
        st = time.monotonic()
        with self.engine.connect() as conn:
            recorded = skip_by.stored_machines(conn, self.asked, [source]).get(source)
        if (why := skip_by.machine_differs(recorded, self.probe(sorted(recorded or {})))) is not None:
            self.notes[commit.sha] = f"not copied from {source[:10]}: {why}"
            return False
        report = copy_run(self.engine, source, commit.git(), self.plan.suite["hash"], self.plan.backend,
                          self.asked, reason=reason, tree_hash=tree_hash)
        if report is None:
            return False
        copied(CommitOutcome(commit, report.status, ingest_seconds=time.monotonic() - st, run_id=report.run_id,
                             copied_from=source, copy_reason=reason))
        self._learn(commit.sha)  # the copy read what its source read
        self._settled(commit.sha)
        return True

    def _learn(self, sha: str) -> None:
        with self.engine.connect() as conn:
            found = skip_by.stored_inputs(conn, self.asked, [sha])
        if sha in found:
            self.inputs[sha] = self.latest = found[sha]

    def _settled(self, sha: str) -> None:
        """`sha` is stored (or failed): the commits waiting for it are looked at again, first."""
        self.open.discard(sha)
        self.pending.extendleft(reversed(self.waiting.pop(f"commit:{sha}", [])))

    def extracted(self, outcome: CommitOutcome) -> None:
        """A commit came back: its package's waiting commits are copied from it if it is ok, else extracted; so are
        the commits waiting for it as their parent."""
        sha = outcome.commit.sha
        key = self.keys.get(sha)
        if key is None:
            return
        self.leading.discard(key)
        if outcome.status in ("ok", "skipped"):
            self.stored[key] = sha
            self._learn(sha)
        self.pending.extendleft(reversed(self.waiting.pop(f"package:{key}", [])))
        self._settled(sha)


def sweep(engine: Engine, repo: Path, commits: list[Commit], plan: ExtractionPlan, *, jobs: int = 1,
          force: bool = False, reporter: Reporter | None = None,
          on_ingested: Callable[[CommitOutcome], None] | None = None, workers: Workers | None = None,
          skip: bool = True) -> SweepSummary:
    """Extract and ingest `commits` of `repo` (see the module docstring); `jobs` extractions run at once here, or as
    many as `workers` (a Dask cluster) runs; ingestion happens in the calling thread. Never raises for a commit's
    failure: it is in the summary (and, when tinygrad failed, stored as a failed run to be retried by the next
    sweep)."""
    started = time.monotonic()
    reporter = reporter or Reporter()
    summary = SweepSummary()
    clean_stale_worktrees(repo)
    found = Stored() if force else stored_commits(engine, plan)
    skipped = [CommitOutcome(c, "skipped", note=found.done[c.sha]) for c in commits if c.sha in found.done]
    local = LocalWorkers(repo, jobs) if workers is None else None
    runner: Workers = local or workers  # type: ignore[assignment]
    queue = CommitQueue(engine, repo, plan, [c for c in commits if c.sha not in found.done], set(found.done),
                        skip=skip, probe=runner.identify)
    summary.outcomes += skipped
    reporter.start(len(commits), skipped)
    in_flight: dict[Future, tuple[Commit, Path, int]] = {}  # ... and the processes its extraction runs cases in
    cores = default_workers() if local is not None else 1  # a Dask worker is one process

    def stored(outcome: CommitOutcome) -> None:
        notes = [found.lacking.get(outcome.commit.sha), queue.notes.get(outcome.commit.sha)]
        outcome.note = "; ".join(n for n in notes if n) or None
        summary.outcomes.append(outcome)
        reporter.finished(outcome)
        if on_ingested is not None:
            on_ingested(outcome)

    with tempdirs.owned("sweep") as tmp:
        def submit_next() -> None:
            # only `width` commits in flight: a resumed sweep redoes at most those, and bundles wait nowhere
            batch: list[Commit] = []
            while len(in_flight) + len(batch) < runner.width and (commit := queue.next_to_extract(stored)) is not None:
                batch.append(commit)
            # the cores the extractions in flight leave idle, shared by those starting now: a commit that waits for
            # its parent (history/skip.py) leaves one extraction running alone, which then uses them all
            idle = cores - sum(workers for _c, _w, workers in in_flight.values())
            for i, commit in enumerate(batch):
                share = max(1, idle // (len(batch) - i))
                idle -= share
                workdir = Path(tmp) / commit.sha
                in_flight[runner.submit(commit, replace(plan, workers=share), workdir)] = (commit, workdir, share)

        try:
            submit_next()
            while in_flight:
                reporter.running([c for c, _w, _n in in_flight.values()])
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    commit, workdir, _workers = in_flight.pop(future)
                    outcome = _ingest_one(engine, commit, runner, future, workdir, plan, force)
                    shutil.rmtree(workdir, ignore_errors=True)
                    stored(outcome)
                    queue.extracted(outcome)
                    submit_next()
        except BaseException:
            # Ctrl-C or a database error: stop starting commits, end the extractions in flight, keep what is ingested
            summary.interrupted = True
            runner.stop()
            raise
        finally:
            if local is not None and not summary.interrupted:
                local.close()
            summary.seconds = time.monotonic() - started
    return summary


def _ingest_one(engine: Engine, commit: Commit, runner: Workers, future: Future, workdir: Path, plan: ExtractionPlan,
                force: bool) -> CommitOutcome:
    try:
        described, result, checkout_seconds = runner.result(future, workdir)
    except SweepStopped:
        raise
    except (SweepError, OSError, WorkerLost) as exc:
        return _failed(engine, commit, plan, exc)
    st = time.monotonic()
    report = ingest_result(engine, result, described, plan, force=force)
    after_store.stored(engine, [report])  # e.g. the Svod runs of its cases: their parity with it, decided
    outcome = CommitOutcome(commit, report.status, result.seconds, time.monotonic() - st, checkout_seconds,
                            report.run_id, report.new_case_results)
    if described.get("missing_paths") and report.run_id is not None and not report.skipped:
        needed = skip_by.record_missing_paths(engine, report.run_id, described["missing_paths"])
        if needed:
            outcome.status = "failed"
            outcome.error = f"untestable: it could have read {needed[0]}, which the clone lacks"
            return outcome
    if report.skipped and not report.timed:  # another sweep stored it meanwhile (a re-timing adds to the run)
        outcome.status = "skipped"
    elif report.status in FAILED:
        outcome.error = f"extraction {result.status} (exit code {result.returncode}): {_last_line(result.stderr)}"
    return outcome


def _failed(engine: Engine, commit: Commit, plan: ExtractionPlan, exc: Exception) -> CommitOutcome:
    """A commit whose checkout failed or whose worker was lost: a failed run, retried by the next sweep."""
    lines = str(exc).splitlines()
    if len(lines) > 4:  # git names every file it could not write; the first and last lines say enough
        lines = [*lines[:2], f"... ({len(lines) - 3} more lines)", lines[-1]]
    error = f"{'worker lost' if isinstance(exc, WorkerLost) else 'checkout failed'}: {chr(10).join(lines)}"
    described = {"path": None, "version": None, "tree_hash": "", "git": commit.git()}
    report = record_failure(engine, described, plan, ExtractionOutcome("failed", None, str(exc)), error)
    return CommitOutcome(commit, report.status, run_id=report.run_id, error=error)
