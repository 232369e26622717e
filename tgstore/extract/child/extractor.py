"""The extractor: imports the target tinygrad and assembles one adapter per surface (scheduling, lowering,
passes, canonical form, patterns). What a surface cannot provide in this era becomes a run-level `missing` record."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

from .api import Tinygrad
from .canonical_json import CanonicalCapture
from .case import PYRENDER, CaseRunner, Options
from .encode import Encoder
from .lower import Lowering
from .pass_recorder import PassRecorder
from .patterns import PatternRegistry, import_compiler_modules
from .schedule import Scheduler
from .step_log import StepLog
from .timing import KernelTimer


class Extractor:
    def __init__(self, root: pathlib.Path, write: Callable[[dict], None], renderers: list[str],
                 stage_renderers: list[str], rewrites: int, debug: int,
                 timing: tuple[str, int | None, float] | None = None, compile_times: bool = False) -> None:
        import tinygrad

        tg_file = pathlib.Path(tinygrad.__file__).resolve()
        if not tg_file.is_relative_to(root):
            raise ImportError(f"imported tinygrad from {tg_file}, not from {root}: check PYTHONPATH")
        self.tg = tg = Tinygrad()
        self.missing: list[dict[str, Any]] = []
        self.encoder = Encoder()
        # before the renderers: their constructors may build matchers
        steps = StepLog(rewrites) if rewrites else None
        self.patterns = PatternRegistry(tg, root, write, steps=steps)
        self.scheduler = Scheduler(tg)
        self.lowering = Lowering(tg, root)
        self.lowering.build_renderers(renderers)
        self.unimportable = import_compiler_modules(tg)
        self.recorder: PassRecorder | None = None
        if stage_renderers or compile_times:  # compile times: the passes timed, not described
            recorder = PassRecorder(tg, self.encoder, lambda digest, nodes: write(
                {"kind": "graph", "hash": digest, "nodes": nodes}), steps)
            if recorder.available:
                self.recorder = recorder
                if rewrites and stage_renderers and not self.patterns.counts:
                    self.add_missing("rewrites", "rewrite steps are recorded by counting matches, which this "
                                                 "tinygrad's PatternMatcher does not allow")
            elif stage_renderers:
                self.add_missing("passes", "this tinygrad's graph_rewrite takes no name: its passes are unnamed")
            else:
                self.add_missing("compile_passes", "this tinygrad's passes are unnamed: compile times are totals")
        canonical = None
        if self.recorder is not None and stage_renderers:
            canonical = CanonicalCapture(tg, self.recorder)
        self.timer: KernelTimer | None = None
        if timing is not None:
            self.timer = KernelTimer(tg, self.lowering, *timing)
            if self.timer.kind is None:
                self.add_missing("timing", self.timer.reason or "this tinygrad cannot time kernels")
        options = Options(renderers, stage_renderers if self.recorder else [], debug, compile_times)
        self.runner = CaseRunner(tg, options,
                                 self.lowering, self.scheduler, self.patterns, self.recorder, self.encoder,
                                 canonical, self.timer if self.timer and self.timer.kind else None)
        self.runner.graph_caches.scan()
        self.features = self._features(root, renderers)
        for name, reason in self.lowering.errors.items():
            self.add_missing(f"renderer:{name}", reason)
        if self.runner.pyrender is None:
            self.add_missing("pyrender", "no " + " or ".join(f"{m}.{a}" for m, a in PYRENDER))
        if self.scheduler.kind is None:
            self.add_missing("schedule", "neither Tensor.schedule_linear nor Tensor.schedule")
        if self.lowering.kind is None:
            self.add_missing("programs", "no known AST -> program lowering entry point")
        if not self.patterns.counts:
            self.add_missing("match_counts",
                             "tinygrad has no match_stats / TrackedPatternMatcher with TRACK_MATCH_STATS=1")

    def add_missing(self, feature: str, reason: str) -> None:
        self.missing.append({"feature": feature, "reason": reason})

    def _features(self, root: pathlib.Path, renderers: list[str]) -> dict[str, Any]:
        tg = self.tg
        return {
            "ops_module": tg.ops_module,
            "pyrender": self.runner.pyrender is not None,
            **self.scheduler.features,
            "lowering": self.lowering.kind,
            "match_stats": self.patterns.counts,
            "upat_location": self.patterns.has_location,
            "target": getattr(tg.helpers, "Target", None) is not None,
            "name_counter": self.runner.names.counter is not None,
            "passes": self.recorder is not None and bool(self.runner.options.stage_renderers),
            "graph_caches": ",".join(self.runner.graph_caches.names),
            "unimportable_modules": ",".join(self.unimportable),
            "device_env": ",".join(f"{k}={os.environ[k]}" for k in ("DEV", "CPU", "CLANG") if k in os.environ),
            **self.lowering.features,
            **(self.timer.features if self.timer else {}),
        }


def open_default_device(tg: Tinygrad) -> bool:
    """Open the device cases schedule for, before any case runs. tinygrad opens a device once per process, on first
    use, and says so in its DEBUG text with the process id ("opened device CLANG from pid:22832"): left to a case,
    that line (and the pid) would be in whichever case first used it, and absent from the same case after another.
    Not in capture mode: there the command opens it, and what tinygrad lowers then (the CPU runtime's own programs)
    is part of what the command did. A device that will not open is left to the cases (they record why)."""
    device = tg.attr("tinygrad.device", "Device")
    try:
        device[device.DEFAULT]
    except Exception:
        return False
    return True
