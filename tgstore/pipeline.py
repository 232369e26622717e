"""Extract one tinygrad in a child process and ingest its bundle: the unit of work of `ingest` and of sweeps."""

from __future__ import annotations

import ast
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine

from tgstore.bundle import BundleError, read_bundle
from tgstore.extract import child
from tgstore.extract.runner import BUILTIN_CASES, ExtractionResult, run_extraction
from tgstore.ingest import (
    ExtractionOutcome,
    IngestReport,
    commit_key,
    find_run,
    ingest_bundle,
    record_failed_run,
)


class CaseFileError(ValueError):
    """A case file that cannot be read or parsed."""


def read_case_names(case_files: list[Path]) -> list[str]:
    """The case names defined in case files (module-level ``def case_<name>()``), read without running them."""
    names = []
    for path in case_files:
        try:
            tree = ast.parse(Path(path).read_text(), filename=str(path))
        except (OSError, SyntaxError, ValueError) as exc:
            raise CaseFileError(f"cannot read the case file {path}: {exc}") from None
        names += [node.name[len("case_"):] for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name.startswith("case_")]
    return names


@dataclass
class ExtractionPlan:
    """What to extract, besides which tinygrad: shared by every commit of a sweep."""

    case_files: list[Path] = field(default_factory=lambda: [BUILTIN_CASES])
    backend: str = "CPU"
    renderers: list[str] | None = None  # None: the extractor's default set
    debug_level: int = 4
    timeout: float = 900.0
    suite_name: str | None = None

    @property
    def suite(self) -> dict:
        return child.suite_identity(self.case_files, self.suite_name)

    @property
    def effective_renderers(self) -> list[str]:
        return list(self.renderers or child.DEFAULT_RENDERERS)


def already_ingested(engine: Engine, sha: str, plan: ExtractionPlan) -> bool:
    """An ok run of this commit, suite and backend that rendered at least the renderers asked for is stored."""
    with engine.connect() as conn:
        found = find_run(conn, sha, plan.suite["hash"], plan.backend)
    return found is not None and found.covers(plan.effective_renderers)


def extract_and_ingest(engine: Engine, tinygrad_root: Path, plan: ExtractionPlan, *, force: bool = False,
                       keep_bundle: Path | None = None, git: dict | None = None,
                       on_case: Callable[[str], None] | None = None) -> IngestReport:
    """Run the extractor over `tinygrad_root` and store what it produced; a crash or hang is stored as a failed run.

    `git` ({sha, date, subject}) names the commit when the caller knows it better than the checkout does.
    """
    described = child.describe_tinygrad(tinygrad_root, git)
    sha = commit_key(described)
    if not force and already_ingested(engine, sha, plan):
        return IngestReport(None, sha, "ok", 0, 0, 0, skipped=True)
    with tempfile.TemporaryDirectory(prefix="tgstore-bundle-") as tmp:
        out = keep_bundle or Path(tmp) / "bundle.jsonl"
        result = run_extraction(tinygrad_root, out, case_files=plan.case_files, backend=plan.backend,
                                renderers=plan.renderers, debug_level=plan.debug_level, timeout=plan.timeout,
                                suite_name=plan.suite_name, git=git, on_case=on_case)
        return ingest_result(engine, result, described, plan, force=force)


def ingest_result(engine: Engine, result: ExtractionResult, described: dict, plan: ExtractionPlan, *,
                  force: bool = False) -> IngestReport:
    outcome = ExtractionOutcome(result.status, result.returncode, result.stderr)
    try:
        bundle = read_bundle(result.bundle_path) if result.bundle_path.exists() else None
        error = None if bundle else "the extractor wrote no bundle"
    except BundleError as exc:
        bundle, error = None, str(exc)
    if bundle is not None:
        return ingest_bundle(engine, bundle, outcome=outcome, force=force)
    git = described.get("git") or {}
    suite = plan.suite
    return record_failed_run(engine, sha=commit_key(described), tree_hash=described["tree_hash"],
                             version=described.get("version"), committed_at=git.get("date"),
                             subject=git.get("subject"), suite_name=suite["name"], suite_hash=suite["hash"],
                             backend=plan.backend, renderers=plan.renderers or [], outcome=outcome,
                             error=f"extraction {result.status}: {error}")
