"""A standalone reproducer of a stored kernel at a commit: a script rebuilding its AST and running tinygrad's own
lowering (compare/repro.py)."""

from __future__ import annotations

from dataclasses import dataclass

from tgstore.answers.base import Answer, Unanswerable
from tgstore.compare.repro import repro_script
from tgstore.compare.sql import AnyConnection
from tgstore.compare.stage_diff import StageError, run_with_case


@dataclass
class ReproAnswer(Answer):
    case: str
    kernel: int
    kernel_name: str | None
    commit: str
    version: str | None
    renderer: str
    pass_name: str | None
    script: str  # the Python script, standard library and tinygrad only


def repro(db: AnyConnection, case: str, kernel: int, commit: str | None = None, pass_name: str | None = None,
          renderer: str = "C", occurrence: int = 1, script_name: str = "repro.py") -> ReproAnswer:
    """The reproducer of `case`'s kernel `kernel` at `commit` (default: the newest stored holding the case); run it
    with tinygrad at that commit; the script is in `script`."""
    try:
        row, run_id = run_with_case(db, case, commit)
        made = repro_script(db, run_id, row.sha, row.version, case, kernel, renderer, pass_name, occurrence,
                            script_name)
    except (StageError, LookupError) as exc:
        raise Unanswerable(str(exc)) from None
    return ReproAnswer(case, kernel, made.kernel_name, row.sha, row.version, made.renderer, pass_name, made.script)
