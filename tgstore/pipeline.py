"""Extract one tinygrad in a child process and ingest its bundle: the unit of work of `ingest` and of sweeps."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tgstore import tempdirs
from tgstore.cases import case_names
from tgstore.extract import child
from tgstore.extract.runner import BUILTIN_CASES, Echo, ExtractionResult, run_extraction

if TYPE_CHECKING:  # the database side is imported where it is used: `extract` alone never opens a database
    from sqlalchemy import Connection, Engine

    from tgstore.bundle import Bundle
    from tgstore.store.runs import ExtractionOutcome, IngestReport


class CaseFileError(ValueError):
    """A case file that cannot be read or parsed."""


def read_case_names(case_files: list[Path]) -> list[str]:
    """The case names defined in case files (cases.case_names), or a CaseFileError naming the file that failed."""
    names = []
    for path in case_files:
        try:
            names += case_names(path)
        except (OSError, SyntaxError, ValueError) as exc:
            raise CaseFileError(f"cannot read the case file {path}: {exc}") from None
    return names


MAX_DEFAULT_WORKERS = 4  # each worker holds its own copy of tinygrad's working set


def default_workers() -> int:
    """The processes one extraction uses unless told: the cores this process may run on, at most 4."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return max(1, min(usable, MAX_DEFAULT_WORKERS))


@dataclass
class ExtractionPlan:
    """What to extract, besides which tinygrad: shared by every commit of a sweep."""

    case_files: list[Path] = field(default_factory=lambda: [BUILTIN_CASES])
    backend: str = "CPU"
    renderers: list[str] | None = None  # None: the extractor's default set
    debug_level: int = 4
    timeout: float = 900.0
    suite_name: str | None = None
    stages: str | None = None  # renderers whose passes are recorded: "C,LLVM", "all", "none"; None: the default
    rewrites: int = 0  # rewrite steps recorded per pass (0: none)
    capture: list[str] | None = None  # capture mode: the command whose lowered kernels are stored
    capture_cwd: Path | None = None  # where the command runs; None: the tinygrad root (a sweep's checkout)
    time: bool = False  # also time every kernel (tgstore/extract/child/timing.py)
    time_runs: int | None = None  # timed runs per kernel; None: the child's adaptive default
    compile_times: bool = False  # record scheduling and lowering times per pass (implied by `time`)
    workers: int = 1  # processes one extraction runs its cases in (the bundle is the same; timing runs in one)

    @property
    def suite(self) -> dict:
        if self.capture is not None:
            return child.capture_identity(self.capture)
        return child.suite_identity(self.case_files, self.suite_name)

    @property
    def timings_asked(self) -> str | None:
        """The timings the plan asks for, in a few words (what a stored commit without them lacks)."""
        if self.time:
            return "this machine's timings" + (f" of {self.time_runs} runs a kernel" if self.time_runs else "")
        return "this machine's compile times" if self.compile_times else None

    @property
    def effective_renderers(self) -> list[str]:
        return list(self.renderers or child.DEFAULT_RENDERERS)

    @property
    def settings(self) -> dict:
        """The settings an extraction for this plan records (extract/child/settings.py), computed as the child
        computes them: what a stored run must hold to make the extraction unneeded."""
        renderers = child.selected_renderers(",".join(self.renderers) if self.renderers else None,
                                             child.DEFAULT_RENDERERS)
        stages = [r for r in child.selected_renderers(self.stages, child.DEFAULT_STAGE_RENDERERS) if r in renderers]
        return child.run_settings(suite_hash=self.suite["hash"], backend=self.backend, renderers=renderers,
                                  stages=stages, rewrites=self.rewrites, debug=self.debug_level)

    def child_args(self, tinygrad_root: Path) -> list[str]:
        """The extraction child's command-line options for this plan (child/__main__.py)."""
        args = ["--backend", self.backend, "--debug", str(self.debug_level)]
        if self.capture is not None:
            args += ["--capture-json", json.dumps(self.capture), "--cwd", str(self.capture_cwd or tinygrad_root)]
        else:
            for path in self.case_files:
                args += ["--cases", str(Path(path).resolve())]
        if self.renderers:
            args += ["--renderers", ",".join(self.renderers)]
        if self.suite_name:
            args += ["--suite-name", self.suite_name]
        if self.stages is not None:
            args += ["--stages", self.stages]
        if self.rewrites:
            args += ["--rewrites", str(self.rewrites)]
        if self.time:
            args += ["--time"] + (["--time-runs", str(self.time_runs)] if self.time_runs else [])
        elif self.compile_times:
            args += ["--compile-times"]
        if self.workers > 1:
            args += ["--jobs", str(self.workers)]
        return args


def extract_bundle(tinygrad_root: Path, out: Path, plan: ExtractionPlan, *, git: dict | None = None,
                   on_case: Callable[[str], None] | None = None, echo: Echo | None = None) -> ExtractionResult:
    """Run the extraction child over `tinygrad_root` for `plan`, writing the bundle to `out`; `echo` gets the
    child's output line by line (capture mode: the command's own)."""
    return run_extraction(tinygrad_root, out, plan.child_args(tinygrad_root), timeout=plan.timeout, git=git,
                          on_case=on_case, echo=echo)


class ExtractionFailed(Exception):
    """An extraction that did not give a whole bundle (the child failed, crashed or hung, or wrote no bundle)."""


def read_result(result: ExtractionResult) -> tuple[Bundle | None, str | None]:
    """The bundle an extraction left (complete or truncated) and None, or None and why there is none."""
    from tgstore.bundle import BundleError, read_bundle

    try:
        bundle = read_bundle(result.bundle_path) if result.bundle_path.exists() else None
    except BundleError as exc:
        return None, str(exc)
    return (bundle, None) if bundle else (None, "the extractor wrote no bundle")


def extract_to_bundle(tinygrad_root: Path, out: Path, plan: ExtractionPlan, *, git: dict | None = None) -> Bundle:
    """Extract `tinygrad_root` for `plan` into `out` and read the bundle back: the way a tree becomes a bundle for
    what does not store it as a run (the CI gate, its timing, a confirmation's re-timing). ExtractionFailed, with
    one line saying why, unless the extraction was ok."""
    result = extract_bundle(tinygrad_root, out, plan, git=git)
    if result.status != "ok":
        last = result.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ExtractionFailed(f"extracting {tinygrad_root} {result.status} (exit code {result.returncode}): "
                               f"{last[0]}")
    bundle, error = read_result(result)
    if bundle is None:
        raise ExtractionFailed(f"extracting {tinygrad_root}: {error}")
    return bundle


def extract_and_ingest(engine: Engine, tinygrad_root: Path, plan: ExtractionPlan, *, force: bool = False,
                       keep_bundle: Path | None = None, git: dict | None = None,
                       on_case: Callable[[str], None] | None = None, echo: Echo | None = None) -> IngestReport:
    """Run the extractor over `tinygrad_root` and store what it produced; a crash or hang is stored as a failed run.

    `git` ({sha, date, subject, position}) names the commit when the caller knows it better than the checkout does.
    """
    from tgstore.store.commits import commit_key
    from tgstore.store.runs import IngestReport, find_run

    described = child.describe_tinygrad(tinygrad_root, git)
    sha = commit_key(described)
    if not force:
        with engine.connect() as conn:
            found = find_run(conn, sha, plan.suite["hash"], plan.backend)
        if found is not None and found.covers(plan.settings) and not (
                (plan.time or plan.compile_times) and not timed(engine, sha, plan)):
            return IngestReport(found.id, sha, "ok", 0, 0, 0, skipped=True)
    with tempdirs.owned("bundle") as tmp:
        out = keep_bundle or Path(tmp) / "bundle.jsonl"
        result = extract_bundle(tinygrad_root, out, plan, git=git, on_case=on_case, echo=echo)
        return ingest_result(engine, result, described, plan, force=force)


def timed(engine: Engine, sha: str, plan: ExtractionPlan) -> bool:
    """Whether the commit holds the timings the plan asks for on this machine (timed_shas)."""
    with engine.connect() as conn:
        return sha in timed_shas(conn, plan)


def timed_shas(conn: Connection, plan: ExtractionPlan) -> set[str]:
    """The commits holding the timings the plan asks for on this machine: a session that timed the kernels with at
    least its --time-runs, or, for a plan asking only for compile times, one that recorded them."""
    from tgstore.store.timings import this_machine, timed_commits

    return timed_commits(conn, plan.suite["hash"], plan.backend, this_machine(plan.backend),
                         compile_only=not plan.time, runs=plan.time_runs)


def ingest_result(engine: Engine, result: ExtractionResult, described: dict, plan: ExtractionPlan, *,
                  force: bool = False) -> IngestReport:
    """Store what an extraction left: its bundle (complete or truncated), else a failed run saying why."""
    from tgstore.store.ingest import ingest_bundle
    from tgstore.store.runs import ExtractionOutcome

    outcome = ExtractionOutcome(result.status, result.returncode, result.stderr)
    bundle, error = read_result(result)
    if bundle is not None:
        return ingest_bundle(engine, bundle, outcome=outcome, force=force)
    return record_failure(engine, described, plan, outcome, f"extraction {result.status}: {error}")


def record_failure(engine: Engine, described: dict, plan: ExtractionPlan, outcome: ExtractionOutcome,
                   error: str) -> IngestReport:
    """A failed run of the tinygrad `described` (child.describe_tinygrad's form) for this plan."""
    from tgstore.store.commits import commit_key
    from tgstore.store.runs import record_failed_run

    suite = plan.suite
    return record_failed_run(engine, sha=commit_key(described), tree_hash=described.get("tree_hash") or "",
                             version=described.get("version"), git=described.get("git") or {},
                             suite_name=suite["name"], suite_hash=suite["hash"], backend=plan.backend,
                             renderers=plan.effective_renderers, outcome=outcome, error=error)
