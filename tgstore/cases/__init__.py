"""The built-in case suites: one case file each (the format is described in builtin.py)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CASES_DIR = Path(__file__).resolve().parent
# name -> (file, what it is for)
SUITES: dict[str, tuple[str, str]] = {
    "builtin": ("builtin.py", "small programs covering what tinygrad users run (the default)"),
    "models": ("models.py", "whole model forwards from Tensor.empty weights: a small GPT-2, ResNet-18"),
}


class UnknownSuite(ValueError):
    """A suite name that is not built in."""


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    path: Path
    description: str
    cases: list[str]


def suite_file(name: str) -> Path:
    if name not in SUITES:
        raise UnknownSuite(f"no built-in suite {name!r}; the suites are: {', '.join(SUITES)} (or pass --cases FILE)")
    return CASES_DIR / SUITES[name][0]


def case_names(path: Path) -> list[str]:
    """The case names a case file defines (module-level ``def case_<name>()``), read without running it."""
    tree = ast.parse(Path(path).read_text(), filename=str(path))
    return [node.name[len("case_"):] for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("case_")]


def suites() -> list[SuiteInfo]:
    return [SuiteInfo(name, CASES_DIR / file, description, case_names(CASES_DIR / file))
            for name, (file, description) in SUITES.items()]
