"""What the database already holds of a sweep's commits: the commits whose current run holds everything a plan
asks for (a sweep skips them, saying so) and, for every other stored commit, what its run lacks (a sweep extracts
it again, saying what it adds). The settings compared are the table in extract/child/settings.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from tgstore.extract.child.settings import describe as settings_words
from tgstore.pipeline import ExtractionPlan, timed_shas
from tgstore.store.runs import stored_runs


@dataclass
class Stored:
    """What the database already holds of a sweep's commits: those whose current run holds everything the plan
    asks for (skipped, with the reason), and why each other stored commit is extracted again."""

    done: dict[str, str] = field(default_factory=dict)  # sha -> why it is skipped
    lacking: dict[str, str] = field(default_factory=dict)  # sha -> what its run lacks (it is extracted again)


def stored_commits(engine: Engine, plan: ExtractionPlan, shas: list[str] | None = None) -> Stored:
    """Which of `shas` (default: every commit) need no extraction: an ok current run of the plan's suite and backend
    that holds every setting the plan asks for (renderers, stages, rewrite steps, DEBUG level, the extractor's code:
    the table in extract/child/settings.py) and the timings it asks for: this machine's, of at least its --time-runs
    (or its compile times). A commit lacking only those is extracted again, and its run stays: the timings are
    added to it (store/ingest.keep_current_run)."""
    asked = plan.settings
    found = Stored()
    with engine.connect() as conn:
        runs = stored_runs(conn, asked["suite"], plan.backend, shas)
        timings = plan.timings_asked
        timed = timed_shas(conn, plan) if timings else None
    held = settings_words(asked) + (f", {timings}" if timings else "")
    for sha, run in runs.items():
        if run.status != "ok":
            found.lacking[sha] = f"its run {run.id} is {run.status}"
            continue
        gaps = run.lacking(asked)
        if timed is not None and sha not in timed:
            gaps.append(timings)
        if gaps:
            found.lacking[sha] = f"its run {run.id} lacked {'; '.join(gaps)}"
        else:
            found.done[sha] = f"its run {run.id} holds what was asked: {held}"
    return found
