"""Svod's canonical UOp JSON (schema v7) for tinygrad graphs: placeholder until the serializer lands."""

from __future__ import annotations

from typing import Any


class CanonicalCapture:
    def __init__(self, tg: Any, recorder: Any) -> None:
        self.tg, self.recorder = tg, recorder

    def kernel_documents(self, ast: Any, passes: list[dict[str, Any]], lowered: Any) -> dict[str, Any]:
        return {}
