"""What every answer shares: `Answer.to_json()`, the one way a library value becomes JSON."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import PurePath
from typing import Any


def jsonable(value: Any) -> Any:
    """A value as JSON-ready data: answers and dataclasses field by field (an `Answer` through its own `to_json`),
    enums by value, paths as text, tuples and sets as lists (sets sorted), mappings with text keys."""
    if isinstance(value, Answer):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_json = getattr(value, "to_json", None)
        if callable(to_json):
            return to_json()
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


@dataclasses.dataclass
class Answer:
    """Base of every answer. Subclasses are dataclasses; override `to_json` only where a field must not be JSON
    (say, a cached graph), and keep the keys the same whether the answer is empty or full."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
