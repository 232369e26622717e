"""Which kernel of a case at another commit is "the same kernel": matched by AST (its hash, then its hash in one
spelling across tinygrad eras), else by kernel name (its `n1` suffix aside); among several candidates the one nearest
the same position; else, where the case has as many kernels at both commits, by position.
A kernel with no match has no counterpart there: pages link to a kernel at another commit only through this, so
no link leads to a kernel that does not exist (a kernel only 0.14.0 has is not "kernel 3 at 0.13.0")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tgstore.compare.spelled import ast_spelling
from tgstore.compare.sql import AnyConnection, rows

DEDUP_SUFFIX = re.compile(r"n\d+$")
KERNELS_SQL = """
SELECT si.position, kn.name, kn.hash FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
WHERE rc.run_id = :run AND k.name = :case ORDER BY si.position"""


@dataclass(frozen=True)
class KernelRow:
    position: int
    name: str | None
    hash: str


@dataclass(frozen=True)
class Match:
    position: int
    how: str  # "AST", "AST in one spelling", "name"


def case_kernels(conn: AnyConnection, run: int, case: str) -> list[KernelRow]:
    return [KernelRow(r["position"], r["name"], r["hash"]) for r in rows(conn, KERNELS_SQL, run=run, case=case)]


def match_kernel(conn: AnyConnection, kernel: KernelRow, others: list[KernelRow], by_position: bool = False
                 ) -> Match | None:
    """`kernel`'s counterpart among `others` (another commit's kernels of the same case), or None. With
    `by_position` (the caller saw as many kernels at both commits), a kernel no AST or name matches is the one at
    its place in the schedule (an optimization renamed it: r_16_16 -> r_16_16_4)."""
    def nearest(found: list[KernelRow]) -> int:
        return min(found, key=lambda k: (abs(k.position - kernel.position), k.position)).position

    same = [k for k in others if k.hash == kernel.hash]
    if same:
        return Match(nearest(same), "AST")
    spelled = ast_spelling(conn, kernel.hash)
    alike = [k for k in others if spelled is not None and ast_spelling(conn, k.hash) == spelled]
    if alike:
        return Match(nearest(alike), "AST in one spelling")
    named = [k for k in others if kernel.name and base_name(k.name) == base_name(kernel.name)]
    if named:
        return Match(nearest(named), "name")
    if by_position:  # the same schedule, kernel by kernel: its place in it
        same_place = [k for k in others if k.position == kernel.position]
        if same_place:
            return Match(kernel.position, "position (same number of kernels)")
    return None


def base_name(name: str | None) -> str | None:
    """A kernel's name without the suffix tinygrad adds to tell same-named kernels apart (`r_4_16n1` is r_4_16's
    second kernel): eras number them differently."""
    return DEDUP_SUFFIX.sub("", name) if name else name


def counterparts(conn: AnyConnection, case: str, run: int, other_run: int) -> dict[int, Match]:
    """Every kernel of `case` in `run` that has a counterpart in `other_run`: its position -> the match."""
    kernels, theirs = case_kernels(conn, run, case), case_kernels(conn, other_run, case)
    found = {k.position: match_kernel(conn, k, theirs, len(kernels) == len(theirs)) for k in kernels}
    return {position: match for position, match in found.items() if match is not None}


def counterpart(conn: AnyConnection, case: str, run: int, position: int, other_run: int) -> Match | None:
    """The kernel at `position` of `case` in `run`, found in `other_run` (None: it has no counterpart there)."""
    kernels, theirs = case_kernels(conn, run, case), case_kernels(conn, other_run, case)
    mine = next((k for k in kernels if k.position == position), None)
    if mine is None:
        return None
    return match_kernel(conn, mine, theirs, len(kernels) == len(theirs))
