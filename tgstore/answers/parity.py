"""`parity`: Svod against tinygrad for a case, kernel by kernel and stage by stage (or, with rules, rule activity
per pass). The verdicts are svod/parity.py's and svod/rules.py's; this is the question's one entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tgstore.answers.base import Answer, Reader, Unanswerable


@dataclass
class ParityAnswer(Answer):
    report: Any  # svod.parity.ParityReport, or svod.rules.RulesReport with rules
    rules: bool = False

    @property
    def failing(self) -> bool:
        """A stage differs (rules: an op is matched on one side only): the CLI's exit status 1."""
        return bool(self.report.one_sided if self.rules else self.report.differs)

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()


def parity(db: Reader, case: str, commit: str | None = None, svod_run: int | None = None,
           renderer: str | None = None, rules: bool = False) -> ParityAnswer:
    """Svod against tinygrad for a case (default: the newest Svod run of it against the newest tinygrad commit
    holding it), stage by stage: equal, differs (with the aligned tree diff there), or missing on a side, the
    schedule stages and canonical documents included; rules=True compares rule activity per pass instead."""
    from tgstore.db.read import as_sqlalchemy
    from tgstore.store.commit_names import CommitNotFound
    from tgstore.svod.parity import ParityError, parity_report
    from tgstore.svod.rules import rules_report

    build = rules_report if rules else parity_report
    try:
        with as_sqlalchemy(db) as conn:
            report = build(conn, case, svod_run=svod_run, commit=commit, renderer=renderer)
    except (ParityError, CommitNotFound) as exc:
        raise Unanswerable(str(exc)) from None
    return ParityAnswer(report, rules)
