"""Bisect: the first commit of a range where a case's output changed, by binary search over stored runs,
extracting (and ingesting) only the commits the database lacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, text

from tgstore import tempdirs
from tgstore.compare.names import masked_hash
from tgstore.git import Commit, is_ancestor, line_of, single, verify_rev
from tgstore.history.skip import record_missing_paths
from tgstore.history.sweep import SweepError, extract_commit
from tgstore.pipeline import CaseFileError, ExtractionPlan, ingest_result, read_case_names
from tgstore.store import after_store
from tgstore.store.rows import FAILED
from tgstore.store.runs import find_run


class BisectError(Exception):
    """Bisect cannot start or finish (unknown case, bad range, no difference); a one-line message."""



def bisect_line(repo: Path, good: str, bad: str) -> tuple[str, str, list[Commit]]:
    """good's and bad's shas and the first-parent line from good (at 0) to bad (at the end); a BisectError where
    they are one commit or good is not bad's ancestor."""
    good_sha, bad_sha = verify_rev(repo, good), verify_rev(repo, bad)
    if good_sha == bad_sha:
        raise BisectError(f"{good} and {bad} are the same commit")
    if not is_ancestor(repo, good_sha, bad_sha):
        raise BisectError(f"{good} ({good_sha[:10]}) is not an ancestor of {bad} ({bad_sha[:10]})")
    return good_sha, bad_sha, [single(repo, good_sha), *line_of(repo, good_sha, bad_sha)]


def narrow(line: list[Commit], probe: Callable[[Commit], tuple[bool | None, str]]
           ) -> tuple[int, int, list[tuple[Commit, str]]]:
    """Binary search of `line` (good at 0, bad at the end) for the first bad commit. `probe(commit)` says whether a
    commit is bad (None: it cannot be tested, and is stepped around) and a label for it. Returns (last good index,
    first bad index, the commits looked at with their labels); untestable commits may lie between the two."""
    looked_at: list[tuple[Commit, str]] = []
    lo, hi = 0, len(line) - 1
    untestable: set[int] = set()
    while True:
        between = [i for i in range(lo + 1, hi) if i not in untestable]
        if not between:
            return lo, hi, looked_at
        mid = min(between, key=lambda i: (abs(2 * i - lo - hi), i))
        bad, label = probe(line[mid])
        looked_at.append((line[mid], label))
        if bad is None:
            untestable.add(mid)
        elif bad:
            hi = mid
        else:
            lo = mid

def extract_and_store(engine: Engine, repo: Path, commit: Commit, plan: ExtractionPlan,
                      log: Callable[[str], None]) -> bool:
    """Extract `commit` and store its run; False (said in `log`) when git cannot check its package out, or the
    extraction could have read a file missing from the clone (as in tinygrad's own history, history/skip.py): that
    commit is untestable, not the end of a bisect. Files it could not have read are left out and noted on the run."""
    with tempdirs.owned("bisect") as tmp:
        try:
            described, result = extract_commit(repo, commit, plan, tmp)
        except SweepError as exc:
            log(f"{commit.sha[:10]} cannot be checked out, so it is untestable: {exc}")
            return False
        report = ingest_result(engine, result, described, plan)
    after_store.stored(engine, [report])  # e.g. the Svod runs of its cases: their parity with it, decided
    if described.get("missing_paths") and report.run_id is not None and not report.skipped:
        needed = record_missing_paths(engine, report.run_id, described["missing_paths"])
        if needed:  # extracted from what the clone holds, but it could have read what it lacks
            log(f"{commit.sha[:10]} is untestable: it could have read {needed[0]}, which the clone lacks")
            return False
    return True


def case_names(case_files: list[Path]) -> list[str]:
    try:
        return read_case_names(case_files)
    except CaseFileError as exc:
        raise BisectError(str(exc)) from None


@dataclass
class BisectResult:
    first: Commit  # the first commit whose signature differs from good's
    good: Commit
    bad: Commit
    commits: int  # commits in good..bad
    extractions: int
    looked_at: list[tuple[Commit, str]]  # (commit, "same" | "differs" | "untestable") in the order tested
    untestable_before: list[Commit]  # skipped commits just before `first`, any of which may be the change


def case_signature(engine: Engine, sha: str, plan: ExtractionPlan, case: str, what: str,
                   renderer: str, ignore_names: bool = False) -> tuple | None | str:
    """What bisect compares for one commit: the case's status and its per-kernel source hashes for `renderer`
    (what='source') or kernel AST hashes (what='ast'), with kernel names masked if `ignore_names`. None: no usable
    run stored; "absent": the run lacks the case."""
    with engine.connect() as conn:
        found = find_run(conn, sha, plan.suite["hash"], plan.backend)
        if found is None or found.status in FAILED:
            return None
        run_id = found.id
        status = conn.execute(text('SELECT status FROM v_run_cases WHERE run_id = :r AND "case" = :c'),
                              {"r": run_id, "c": case}).scalar()
        if status is None:
            return "absent"
        if what == "source":
            rows = conn.execute(text(
                'SELECT position, source_hash, error, kernel_name, source FROM v_sources WHERE run_id = :r '
                'AND "case" = :c AND renderer = :renderer ORDER BY position, kernel_name, source_hash'),
                {"r": run_id, "c": case, "renderer": renderer}).all()
            if ignore_names:
                return (status, tuple((p, masked_hash(src, name), err) for p, _h, err, name, src in rows))
            return (status, tuple((p, h, err) for p, h, err, _name, _src in rows))
        rows = conn.execute(text('SELECT position, kernel_hash, kernel_name, coalesce(pyrender, ast_text) '
                                 'FROM v_kernels WHERE run_id = :r AND "case" = :c ORDER BY position'),
                            {"r": run_id, "c": case}).all()
        if ignore_names:
            return (status, tuple((p, masked_hash(ast, name)) for p, _h, name, ast in rows))
        return (status, tuple((p, h) for p, h, _name, _ast in rows))


def bisect_case(engine: Engine, repo: Path, case: str, good: str, bad: str, plan: ExtractionPlan, *,
                what: str = "source", renderer: str = "C", ignore_names: bool = False,
                log: Callable[[str], None] = lambda _msg: None) -> BisectResult:
    """Binary search along good..bad (first-parent, like a sweep) for the first commit where the case's signature
    (see case_signature) differs from good's, extracting and ingesting only the commits the database lacks.
    Assumes one change: if the output changes and changes back, it finds a change, not necessarily the first."""
    if what not in ("source", "ast"):
        raise BisectError(f"--what must be source or ast, not {what!r}")
    known = case_names(plan.case_files)
    if case not in known:
        raise BisectError(f"unknown case {case!r}; the suite's cases are: {', '.join(known)}")
    if what == "source" and plan.renderers is not None and renderer not in plan.renderers:
        raise BisectError(f"renderer {renderer} is not among the renderers extracted ({','.join(plan.renderers)})")
    good_sha, bad_sha, line = bisect_line(repo, good, bad)
    extractions = 0
    cache: dict[str, tuple | None | str] = {}

    def signature(commit: Commit) -> tuple | None | str:
        nonlocal extractions
        if commit.sha in cache:
            return cache[commit.sha]
        sig = case_signature(engine, commit.sha, plan, case, what, renderer, ignore_names)
        if sig is None:
            log(f"extracting {commit.sha[:10]} {commit.subject}")
            extractions += 1
            if not extract_and_store(engine, repo, commit, plan, log):
                cache[commit.sha] = None
                return None
            sig = case_signature(engine, commit.sha, plan, case, what, renderer, ignore_names)
        cache[commit.sha] = sig
        return sig

    sig_good = signature(line[0])
    if not isinstance(sig_good, tuple):
        raise BisectError(f"no usable run of {good} ({good_sha[:10]}) for case {case!r}: "
                          + ("its extraction failed" if sig_good is None else "the run does not have the case"))
    if what == "source" and not sig_good[1]:
        raise BisectError(f"the run of {good} ({good_sha[:10]}) has no {renderer} source for case {case!r} "
                          f"(case status {sig_good[0]}; was it extracted with that renderer?)")
    sig_bad = signature(line[-1])
    if not isinstance(sig_bad, tuple):
        raise BisectError(f"no usable run of {bad} ({bad_sha[:10]}) for case {case!r}: "
                          + ("its extraction failed" if sig_bad is None else "the run does not have the case"))
    label = f"{renderer} source" if what == "source" else "kernel ASTs"
    if sig_bad == sig_good:
        raise BisectError(f"case {case!r} has the same {label} at {bad} ({bad_sha[:10]}) as at {good} "
                          f"({good_sha[:10]}): no difference to bisect")
    def probe(commit: Commit) -> tuple[bool | None, str]:
        sig = signature(commit)
        if not isinstance(sig, tuple):
            return None, "untestable"
        same = sig == sig_good
        log(f"{commit.sha[:10]} {'same as good' if same else 'differs'}  {commit.subject}")
        return not same, "differs" if not same else "same"

    lo, hi, looked_at = narrow(line, probe)
    return BisectResult(first=line[hi], good=line[0], bad=line[-1], commits=len(line) - 1, extractions=extractions,
                        looked_at=looked_at, untestable_before=[line[i] for i in range(lo + 1, hi)])
