"""The target tinygrad's core objects, wherever this era keeps them. Imported only in the extraction child."""

from __future__ import annotations

import contextlib
import importlib
import sys
from types import ModuleType
from typing import Any

# Where UOp, Ops, UPat, PatternMatcher and graph_rewrite live, newest first.
OPS_MODULES = [
    "tinygrad.uop.ops",  # 0.11+
    "tinygrad.ops",  # 0.10
]


class Tinygrad:
    """Handles on the imported target tinygrad."""

    def __init__(self) -> None:
        import tinygrad  # noqa: F401  (the target, found on PYTHONPATH)
        from tinygrad import Tensor

        self.Tensor = Tensor
        self.ops: ModuleType = self._first(OPS_MODULES)
        self.ops_module = self.ops.__name__
        self.helpers = importlib.import_module("tinygrad.helpers")
        self.UOp, self.Ops, self.UPat = self.ops.UOp, self.ops.Ops, self.ops.UPat
        self.PatternMatcher = self.ops.PatternMatcher
        self.Context = self.helpers.Context

    @staticmethod
    def _first(names: list[str]) -> ModuleType:
        errors = []
        for name in names:
            try:
                return importlib.import_module(name)
            except ImportError as e:
                errors.append(f"{name}: {e}")
        raise ImportError("; ".join(errors))

    @staticmethod
    def module(name: str) -> ModuleType | None:
        """An importable tinygrad module, or None."""
        with contextlib.suppress(Exception):
            return importlib.import_module(name)
        return None

    @staticmethod
    def loaded_modules() -> list[tuple[str, ModuleType]]:
        """The tinygrad modules imported so far, by name."""
        return sorted((n, m) for n, m in list(sys.modules.items())
                      if m is not None and (n == "tinygrad" or n.startswith("tinygrad.")))

    def attr(self, module: str, *path: str) -> Any:
        """module.path[0].path[1]... or None."""
        obj: Any = self.module(module)
        for part in path:
            obj = getattr(obj, part, None)
        return obj
