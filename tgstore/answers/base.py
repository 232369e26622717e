"""What every answer shares: `Answer.to_json()`, the one way a library value becomes JSON."""

from __future__ import annotations

import dataclasses
import enum
import sqlite3
from pathlib import PurePath
from typing import Any

# What every question reads: a sqlite3 connection, read-only (db/read.open_reader for the CLI and `tgstore mcp`,
# Datasette's own connection for the pages). A question's first parameter is `db: Reader`.
Reader = sqlite3.Connection


class Unanswerable(Exception):
    """The question cannot be answered as asked (an unknown case, commit, query or metric): the message is one line
    saying why and what to ask instead. The CLI prints it as its error, the MCP tool as its error, a page as 400."""


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


@dataclasses.dataclass
class CommitRef:
    """A tinygrad commit as an answer names it."""

    sha: str
    version: str | None = None
    committed_at: str | None = None
    subject: str | None = None

    @classmethod
    def of(cls, row: Any) -> CommitRef:
        """From a stored commit row (store.commit_names.CommitRow)."""
        return cls(row.sha, row.version, row.committed_at, row.subject)

    def describe(self) -> str:
        bits = [self.sha[:17] if self.sha.startswith("tree:") else self.sha[:12]]
        bits += [b for b in (self.version, (self.committed_at or "")[:10]) if b]
        if self.subject:
            bits.append(repr(self.subject[:60]))
        return " ".join(bits)
