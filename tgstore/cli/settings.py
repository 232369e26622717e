"""The extraction settings every extracting command takes (`ingest`, `sweep`, `capture`, `extract`): defined once,
handed to the command as one value, shown as one section ("Extraction settings") of each command's --help."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from tgstore.cli.common import (
    DEFAULT_REWRITES,
    BackendOption,
    CompileTimesOption,
    DebugOption,
    RenderersOption,
    RewritesOption,
    StagesOption,
    TimeOption,
    TimeoutOption,
    TimeRunsOption,
    make_plan,
)


@dataclass(frozen=True)
class ExtractionSettings:
    """What an extraction records and how (the options of the same names)."""

    backend: str = "CPU"
    renderers: str | None = None
    stages: str | None = None
    rewrites: int = DEFAULT_REWRITES
    debug: int = 4
    timeout: float = 900.0
    time: bool = False
    time_runs: int | None = None
    compile_times: bool = False

    def plan(self, cases: list[Path] | None, *, suite: str | None = None, capture: list[str] | None = None,
             capture_cwd: Path | None = None):
        """The extraction plan these settings ask for (a one-line error where the input cannot be planned)."""
        plan = make_plan(cases, self.backend, self.renderers, self.debug, self.timeout, self.stages, self.rewrites,
                         suite=suite, capture=capture, capture_cwd=capture_cwd)
        return with_timing(plan, self.time, self.time_runs, self.compile_times)


def with_timing(plan, time: bool, time_runs: int | None, compile_times: bool = False):
    """The plan, timing kernels if asked (--time-runs alone asks too), and compile times (implied by --time)."""
    plan.time, plan.time_runs = bool(time or time_runs), time_runs
    plan.compile_times = plan.time or compile_times
    return plan


OPTIONS = {"backend": BackendOption, "renderers": RenderersOption, "stages": StagesOption, "rewrites": RewritesOption,
           "debug": DebugOption, "timeout": TimeoutOption, "time": TimeOption, "time_runs": TimeRunsOption,
           "compile_times": CompileTimesOption}
PARAMETERS = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=OPTIONS[f.name])
              for f in fields(ExtractionSettings)]


def extraction_settings(command: Callable[..., Any]) -> Callable[..., Any]:
    """A command with a `settings: ExtractionSettings` parameter gets the settings' options on its command line
    (Typer reads the signature this gives it) and is called with them as one value."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "settings"]

    @functools.wraps(command)
    def with_settings(*args: Any, **kwargs: Any) -> Any:
        settings = ExtractionSettings(**{p.name: kwargs.pop(p.name) for p in PARAMETERS})
        return command(*args, settings=settings, **kwargs)

    with_settings.__signature__ = signature.replace(parameters=kept + PARAMETERS)  # type: ignore[attr-defined]
    return with_settings
