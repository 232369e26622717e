"""Scheduling: a case's tensors become kernel ASTs (schedule items)."""

from __future__ import annotations

from typing import Any

from .api import Tinygrad

# How tensors become a schedule, newest first: feature name -> the Tensor method.
SCHEDULERS = [
    ("schedule_linear", "schedule_linear"),  # 0.13+: a LINEAR of CALLs whose src[0] is the kernel AST
    ("tensor_schedule", "schedule"),  # <= 0.12: ScheduleItems / ExecItems with .ast
]
# Caches that let a structurally identical later schedule skip every scheduler pass: cleared before each case, so
# each case schedules as in a fresh process (0.13+ also gets SCACHE=0).
SCHEDULE_CACHES = [
    ("tinygrad.schedule", "schedule_cache"),  # 0.13+
    ("tinygrad.engine.schedule", "schedule_cache"),  # 0.12
]


class Scheduler:
    def __init__(self, tg: Tinygrad) -> None:
        self.tg = tg
        self.kind = next((kind for kind, method in SCHEDULERS if hasattr(tg.Tensor, method)), None)
        self.caches = [c for m, attr in SCHEDULE_CACHES if isinstance(c := tg.attr(m, attr), dict)]

    @property
    def features(self) -> dict[str, Any]:
        return {kind: self.kind == kind for kind, _ in SCHEDULERS}

    def clear_caches(self) -> None:
        for cache in self.caches:
            cache.clear()

    def kernel_asts(self, tensors: list[Any]) -> list[Any]:
        """The ASTs of the schedule items, in order."""
        if self.kind == "schedule_linear":
            linear = tensors[0].schedule_linear(*tensors[1:])
            return [c.src[0] if getattr(c.op, "name", "") == "CALL" and len(c.src) else c for c in linear.src]
        if self.kind == "tensor_schedule":
            return [si.ast for si in tensors[0].schedule(*tensors[1:])]
        raise RuntimeError("neither Tensor.schedule_linear nor Tensor.schedule in this tinygrad")
