"""The rules whose matches inside one pass differ between two commits: from each side's recorded rewrite steps
(compare/rewrite_steps.py), grouped by rule (its file and UPat source: a line number moves with every edit above
it), each rule's step count and what its steps produced compared. A rule appeared, disappeared, matched more or
fewer times, or matched as often but rewrote to something else. The case's whole match counts of that rule
(pattern_matches) are read beside it, as the extraction counted them across every pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgstore.compare.rewrite_steps import PassSteps, Step
from tgstore.compare.sql import AnyConnection, rows

STATUSES = ("appeared", "disappeared", "count changed", "matched differently", "same")
MATCH_COUNTS_SQL = """
SELECT matcher, function_name, file, line, upat, matches, tries FROM v_pattern_matches
WHERE run_id = :run AND "case" = :case"""


@dataclass
class RuleSide:
    """A rule at one commit: where it is, how often it matched in the pass (steps) and in the whole case."""

    file: str | None
    line: int | None
    upat: str | None
    steps: int
    matcher: str | None = None
    function: str | None = None
    case_matches: int | None = None  # across the case's every pass (pattern_matches), None: not counted

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "upat": self.upat, "steps": self.steps,
                "matcher": self.matcher, "function": self.function, "case_matches": self.case_matches}


@dataclass
class RuleChange:
    key: tuple[str | None, str | None]  # (file, UPat source): what identifies a rule across commits
    status: str  # one of STATUSES
    a: RuleSide | None
    b: RuleSide | None
    first_step_a: int | None = None  # the first of its steps whose result differs (matched differently)
    first_step_b: int | None = None
    truncated: bool = False  # a side recorded only the pass's first steps: the counts may be short

    @property
    def delta(self) -> int:
        return (self.b.steps if self.b else 0) - (self.a.steps if self.a else 0)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "file": self.key[0], "upat": self.key[1], "delta": self.delta,
                "a": self.a.to_json() if self.a else None, "b": self.b.to_json() if self.b else None,
                "first_step_a": self.first_step_a, "first_step_b": self.first_step_b, "truncated": self.truncated}


@dataclass
class PassRuleDiff:
    changes: list[RuleChange] = field(default_factory=list)  # rules whose matches differ (status not "same")
    same: int = 0  # rules that matched alike on both sides
    truncated: bool = False
    recorded: bool = True  # both sides have steps recorded


def _key(step: Step) -> tuple[str | None, str | None]:
    return (step.file, (step.upat or "").strip() or (f"line {step.line}" if step.line is not None else None))


def _result(step: Step) -> tuple[Any, Any]:
    return ((step.before or {}).get("hash"), (step.after or {}).get("hash"))


def _group(steps: list[Step]) -> dict[tuple, list[Step]]:
    out: dict[tuple, list[Step]] = {}
    for s in steps:
        out.setdefault(_key(s), []).append(s)
    return out


def match_counts(conn: AnyConnection, run: int, case: str) -> dict[tuple[str | None, int | None], dict[str, Any]]:
    """The case's match counts per rule at one run, by (file, line)."""
    return {(r["file"], r["line"]): r for r in rows(conn, MATCH_COUNTS_SQL, run=run, case=case)}


def _side(steps: list[Step], counts: dict[tuple, dict[str, Any]]) -> RuleSide:
    first = steps[0]
    counted = counts.get((first.file, first.line), {})
    return RuleSide(first.file, first.line, first.upat, len(steps), counted.get("matcher"),
                    counted.get("function_name"), counted.get("matches"))


def rule_diff(a: PassSteps | None, b: PassSteps | None, counts_a: dict[tuple, dict[str, Any]],
              counts_b: dict[tuple, dict[str, Any]]) -> PassRuleDiff:
    """The rules whose steps in the pass differ between side a and side b (either may lack the pass), most steps
    changed first within each status."""
    steps_a, steps_b = (a.steps if a else []), (b.steps if b else [])
    truncated = any(p is not None and p.total is not None and p.limit is not None and p.total > len(p.steps)
                    for p in (a, b))
    found = PassRuleDiff(truncated=truncated, recorded=all(p is None or p.has_trace for p in (a, b)))
    ga, gb = _group(steps_a), _group(steps_b)
    for key in dict.fromkeys([*ga, *gb]):
        sa, sb = ga.get(key, []), gb.get(key, [])
        side_a = _side(sa, counts_a) if sa else None
        side_b = _side(sb, counts_b) if sb else None
        first_a = first_b = None
        if not sa:
            status = "appeared"
        elif not sb:
            status = "disappeared"
        elif len(sa) != len(sb):
            status = "count changed"
        else:
            differ = next((i for i, (x, y) in enumerate(zip(sa, sb, strict=True)) if _result(x) != _result(y)), None)
            status = "same" if differ is None else "matched differently"
            if differ is not None:
                first_a, first_b = sa[differ].index, sb[differ].index
        if status == "same":
            found.same += 1
            continue
        found.changes.append(RuleChange(key, status, side_a, side_b, first_a, first_b, truncated))
    found.changes.sort(key=lambda c: (STATUSES.index(c.status), -abs(c.delta)))
    return found
