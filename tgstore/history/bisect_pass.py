"""Bisect by pass: the first commit of good..bad (first-parent line) where one pass's output changed for a case,
extracting only that case, with passes recorded for one renderer, at each commit the database cannot answer.

A commit is answered by any current run holding the case with that renderer's passes (the sweep's, or an earlier
bisection's one-case run). Otherwise the case alone is extracted: a case file of its own (one function calling
the case's, its docstring and context kept) is a suite of its own, so its runs never stand in for the whole
suite's. The pass is compared per kernel by its output graph, in one spelling across eras unless asked raw; the
signature of a commit is every kernel's outputs of that pass, in schedule order (a kernel added or removed changes
it too)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import Engine

from tgstore import tempdirs
from tgstore.cases import case_names
from tgstore.compare.spelled import Speller
from tgstore.compare.sql import rows
from tgstore.git import Commit
from tgstore.history.bisect import BisectError, bisect_line, extract_and_store, narrow
from tgstore.pipeline import ExtractionPlan

WHAT_PREFIX = "pass:"
SIGNATURE_SQL = """
SELECT p.run_id, p.position, p.pass_position, p.graph_hash FROM v_passes p JOIN runs r ON r.id = p.run_id
WHERE p.sha = :sha AND p."case" = :case AND p.renderer = :renderer AND p.pass_name = :pass AND p.scope = 'lower'
  AND r.is_current AND r.status IN ('ok', 'partial') AND r.backend = :backend
ORDER BY p.run_id, p.position, p.pass_position"""
RUN_HAS_CASE_SQL = """
SELECT rc.run_id FROM v_run_cases rc JOIN runs r ON r.id = rc.run_id
WHERE rc.sha = :sha AND rc."case" = :case AND r.is_current AND r.status IN ('ok', 'partial') AND r.backend = :backend
ORDER BY rc.run_id"""


@dataclass
class PassBisect:
    first: Commit
    good: Commit
    bad: Commit
    commits: int  # commits in good..bad
    extractions: int  # one-case extractions made
    looked_at: list[tuple[Commit, str]]
    untestable_before: list[Commit]
    pass_name: str
    renderer: str


def one_case_file(case_files: list[Path], case: str, into: Path) -> Path:
    """A case file holding only `case`, calling the function of the file that defines it (its docstring and its
    context kept); named by what it wraps, so two bisections of one case share its runs."""
    source = next((p for p in case_files if case in case_names(p)), None)
    if source is None:
        raise BisectError(f"unknown case {case!r}")
    source = Path(source).resolve()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    text = f'''"""One case of {source.name} for tgstore bisect --what pass: ({digest[:16]})."""

import importlib.util as _util
import sys as _sys

_spec = _util.spec_from_file_location("tgstore_bisected_{digest[:12]}", {str(source)!r})
_cases = _util.module_from_spec(_spec)
_sys.modules[_spec.name] = _cases
_spec.loader.exec_module(_cases)


def case_{case}():
    return _cases.case_{case}()


case_{case}.__doc__ = _cases.case_{case}.__doc__
if hasattr(_cases.case_{case}, "context"):
    case_{case}.context = _cases.case_{case}.context
'''
    path = into / f"bisect_{case}_{digest[:12]}.py"
    path.write_text(text)
    return path


def pass_signature(engine: Engine, sha: str, case: str, pass_name: str, renderer: str, backend: str,
                   ignore_spelling: bool = True) -> tuple | None | str:
    """The case's outputs of `pass_name` per kernel at commit `sha` (from the first current run that recorded
    them), None when no stored run answers, "absent" when a run holds the case without that pass's graphs (the
    pass does not exist at that commit: a signature too, unlike any with graphs)."""
    with engine.connect() as conn:
        found = rows(conn, SIGNATURE_SQL, sha=sha, case=case, renderer=renderer, backend=backend, **{"pass": pass_name})
        if not found:
            held = rows(conn, RUN_HAS_CASE_SQL, sha=sha, case=case, backend=backend)
            if not held:
                return None
            has_passes = rows(conn, "SELECT 1 FROM v_passes WHERE run_id = :run AND \"case\" = :case AND "
                                    "renderer = :renderer LIMIT 1", run=held[0]["run_id"], case=case,
                              renderer=renderer)
            return "absent" if has_passes else None
        run = found[0]["run_id"]
        speller = Speller(conn, ignore_spelling)
        return tuple((r["position"], speller.graph_key(r["graph_hash"])) for r in found if r["run_id"] == run)


def bisect_pass(engine: Engine, repo: Path, case: str, good: str, bad: str, plan: ExtractionPlan, pass_name: str, *,
                renderer: str = "C", ignore_spelling: bool = True, log: Callable[[str], None] = lambda _m: None
                ) -> PassBisect:
    """The first commit of good..bad where the case's `pass_name` output (see `pass_signature`) differs from
    good's, extracting the case alone where nothing stored answers. Assumes one change, as bisect does."""
    renderer = renderer.upper()
    good_sha, bad_sha, line = bisect_line(repo, good, bad)
    extractions = 0
    cache: dict[str, tuple | None | str] = {}
    with tempdirs.owned("bisect-pass") as tmp:
        one = replace(plan, case_files=[one_case_file(plan.case_files, case, tmp)], suite_name=None,
                      renderers=[renderer], stages=renderer)

        def signature(commit: Commit) -> tuple | None | str:
            nonlocal extractions
            if commit.sha in cache:
                return cache[commit.sha]
            sig = pass_signature(engine, commit.sha, case, pass_name, renderer, plan.backend, ignore_spelling)
            if sig is None:
                log(f"extracting {case} at {commit.sha[:10]} {commit.subject}")
                extractions += 1
                if extract_and_store(engine, repo, commit, one, log):
                    sig = pass_signature(engine, commit.sha, case, pass_name, renderer, plan.backend,
                                         ignore_spelling)
            cache[commit.sha] = sig
            return sig

        sig_good, sig_bad = signature(line[0]), signature(line[-1])
        for sig, name, sha in ((sig_good, good, good_sha), (sig_bad, bad, bad_sha)):
            if sig is None:
                raise BisectError(f"no usable run of {name} ({sha[:10]}) with case {case!r} and its {renderer} "
                                  "passes: its extraction failed")
        if sig_good == sig_bad:
            raise BisectError(f"pass {pass_name!r} of case {case!r} gives the same output at {bad} ({bad_sha[:10]}) "
                              f"as at {good} ({good_sha[:10]}): no difference to bisect")

        def probe(commit: Commit) -> tuple[bool | None, str]:
            sig = signature(commit)
            if sig is None:
                return None, "untestable"
            same = sig == sig_good
            log(f"{commit.sha[:10]} {'same as good' if same else 'differs'}  {commit.subject}")
            return not same, "same" if same else "differs"

        lo, hi, looked_at = narrow(line, probe)
    return PassBisect(line[hi], line[0], line[-1], len(line) - 1, extractions, looked_at,
                      [line[i] for i in range(lo + 1, hi)], pass_name, renderer)
