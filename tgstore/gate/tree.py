"""A CI gate like tinygrad's process_replay: extract a working tree and compare its kernels with a stored commit.

The candidate is stored inside a transaction that is rolled back once compared, so the database is left as it was:
checking a PR's tree many times neither grows the database nor makes a version such as 0.14.0 ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from tgstore import tempdirs
from tgstore.compare.diff import CommitDiff, DiffError, diff_commits
from tgstore.extract import child
from tgstore.pipeline import ExtractionFailed, ExtractionPlan, extract_to_bundle
from tgstore.store.commits import CommitNotFound, CommitRow, commit_key, resolve_commit
from tgstore.store.ingest import store_bundle
from tgstore.store.runs import ExtractionOutcome


class CheckError(Exception):
    """The check could not compare (unknown REV, no stored run to compare with, the candidate failed to extract)."""


@dataclass
class CheckResult:
    against: CommitRow
    candidate: str  # the candidate tree's commit key
    diff: CommitDiff


def stored_run(engine: Engine, against: str, plan: ExtractionPlan) -> tuple[CommitRow, list[str]]:
    """REV's commit and the renderers of its run for the plan's suite and backend; CheckError if there is none."""
    suite = plan.suite
    with engine.connect() as conn:
        try:
            commit = resolve_commit(conn, against)
        except CommitNotFound as exc:
            raise CheckError(str(exc)) from None
        row = conn.exec_driver_sql(
            "SELECT r.renderers FROM runs r JOIN suites s ON s.id = r.suite_id WHERE r.commit_id = ? "
            "AND s.hash = ? AND r.backend = ? AND r.is_current AND r.status IN ('ok', 'partial')",
            (commit.id, suite["hash"], plan.backend)).first()
    if row is None and plan.capture is not None:
        raise CheckError(f"no stored capture of this command at {commit.describe()} on {plan.backend}; store it "
                         f"first: tgstore capture --tinygrad <checkout of {commit.sha[:12]}> -- "
                         f"{' '.join(plan.capture)}")
    if row is None:
        raise CheckError(f"no stored run of {commit.describe()} for suite {suite['name']!r} on {plan.backend}; "
                         f"store it first, e.g. tgstore sweep --repo TINYGRAD --rev {commit.sha[:12]} with the same "
                         f"--suite/--cases")
    return commit, [r for r in (row[0] or "").split(",") if r]


def check_tree(engine: Engine, tinygrad_root: Path, against: str, plan: ExtractionPlan, *,
               allow_names: bool = False) -> CheckResult:
    """Extract `tinygrad_root` with `plan` (its renderers default to those of REV's run) and diff it with REV."""
    commit, renderers = stored_run(engine, against, plan)
    if plan.renderers is None:
        plan.renderers = renderers
    described = child.describe_tinygrad(tinygrad_root)
    with tempdirs.owned("check") as tmp:
        try:
            bundle = extract_to_bundle(tinygrad_root, Path(tmp) / "bundle.jsonl", plan)
        except ExtractionFailed as exc:
            raise CheckError(str(exc)) from None
        with engine.connect() as conn:
            transaction = conn.begin()
            try:
                report = store_bundle(conn, bundle, outcome=ExtractionOutcome("ok", 0, ""))
                candidate = resolve_commit(conn, report.commit)
                diff = diff_commits(conn, commit.sha, candidate.sha, suite=plan.suite["hash"],
                                    backend=plan.backend, ignore_names=allow_names)
            except (DiffError, CommitNotFound) as exc:
                raise CheckError(str(exc)) from None
            finally:
                transaction.rollback()
    return CheckResult(commit, commit_key(described), diff)
