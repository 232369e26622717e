"""The named SQL queries in `queries/*.sql`: discovery, header parsing, and running them with parameters.

Each file starts with a header of `-- key: value` comment lines (continued by `--` lines indented further):

    -- title: Kernels changed between two commits
    -- description: one or two lines
    -- parameters: a (commit sha or version), b (optional: ...)

followed by one SQL statement using `:name` parameters, which both sqlite3 and Datasette canned queries accept. A
parameter whose description starts with "optional" defaults to the empty string, which the SQL treats as "any".
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection

from tgstore.resources import QUERIES_DIR
from tgstore.store.commit_names import resolve_commit

_HEADER_LINE = re.compile(r"^--\s?(\w+):\s*(.*)$")
_CONTINUATION = re.compile(r"^--\s{2,}(\S.*)$")
# What derive_named_parameters in Datasette strips before looking for :names; we do the same so both agree.
_STRIP = [re.compile(r"--.*"), re.compile(r"/\*.*?\*/", re.DOTALL), re.compile(r"'(?:''|[^'])*'"),
          re.compile(r'"(?:""|[^"])*"')]
_NAMED_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class QueryError(Exception):
    """An unknown query, a missing parameter, or a malformed query file; the message says what to do."""


@dataclass(frozen=True)
class Parameter:
    name: str
    description: str = ""

    @property
    def optional(self) -> bool:
        return self.description.lower().startswith("optional")


@dataclass(frozen=True)
class Query:
    name: str  # the file stem
    path: Path
    title: str
    description: str
    parameters: tuple[Parameter, ...]
    sql: str  # the whole file, header comments included (sqlite3 and Datasette ignore them)
    extra: dict[str, str] = field(default_factory=dict)  # other header keys, kept for callers

    @property
    def parameter_names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def bind(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The values to execute with: `params` checked against the declared parameters, optional ones defaulted."""
        unknown = sorted(set(params) - set(self.parameter_names))
        if unknown:
            raise QueryError(f"query {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                             f"it takes {self.signature()}")
        values: dict[str, Any] = {}
        missing = []
        for p in self.parameters:
            if p.name in params and params[p.name] is not None:
                values[p.name] = params[p.name]
            elif p.optional:
                values[p.name] = ""
            else:
                missing.append(p)
        if missing:
            need = ", ".join(f"-p {p.name}=... ({p.description})" if p.description else f"-p {p.name}=..."
                             for p in missing)
            raise QueryError(f"query {self.name!r} needs {need}")
        return values

    def signature(self) -> str:
        if not self.parameters:
            return "no parameters"
        return ", ".join(f"[{p.name}]" if p.optional else p.name for p in self.parameters)


def sql_parameters(sql: str) -> list[str]:
    """The distinct `:name` parameters an SQL text uses, in order of first use (comments and strings ignored)."""
    for pattern in _STRIP:
        sql = pattern.sub("", sql)
    return list(dict.fromkeys(_NAMED_PARAM.findall(sql)))


def _split_parameters(text: str) -> list[Parameter]:
    """'a (x, y), b' -> [Parameter('a', 'x, y'), Parameter('b')]: commas inside parentheses do not split."""
    if text.strip().lower() in ("", "none", "-"):
        return []
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    params = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        match = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\((.*)\))?", part, re.DOTALL)
        if not match:
            raise ValueError(f"cannot read parameter {part!r}; write `name (description)`")
        params.append(Parameter(match.group(1), (match.group(2) or "").strip()))
    return params


def parse_query(path: Path) -> Query:
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        stripped = line.rstrip()
        if not stripped.startswith("--"):
            break
        continued = _CONTINUATION.match(stripped)
        if continued and key is not None:
            header[key] = f"{header[key]} {continued.group(1).strip()}".strip()
            continue
        match = _HEADER_LINE.match(stripped)
        if match:
            key = match.group(1).lower()
            header[key] = match.group(2).strip()
        else:
            key = None
    if "title" not in header:
        raise QueryError(f"{path}: the header has no `-- title:` line")
    try:
        parameters = _split_parameters(header.get("parameters", ""))
    except ValueError as exc:
        raise QueryError(f"{path}: {exc}") from None
    used = sql_parameters(text)
    declared = [p.name for p in parameters]
    if set(used) != set(declared):
        raise QueryError(f"{path}: the header declares parameters {declared} but the SQL uses {used}")
    extra = {k: v for k, v in header.items() if k not in ("title", "description", "parameters")}
    return Query(name=path.stem, path=path, title=header["title"], description=header.get("description", ""),
                 parameters=tuple(parameters), sql=text, extra=extra)


def load_queries(directory: Path | None = None) -> dict[str, Query]:
    """Every `*.sql` in `directory` (default: the `queries/` folder beside the tgstore package), by name."""
    directory = directory or QUERIES_DIR
    if not directory.is_dir():
        raise QueryError(f"queries not found at {directory}; reinstall tgstore")
    return {path.stem: parse_query(path) for path in sorted(directory.glob("*.sql"))}


def get_query(name: str, directory: Path | None = None) -> Query:
    queries = load_queries(directory)
    if name.endswith(".sql"):
        name = name[:-4]
    if name not in queries:
        close = [n for n in queries if name.lower() in n.lower()]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise QueryError(f"no query named {name!r}.{hint} Available: {', '.join(queries)}")
    return queries[name]


@dataclass
class QueryResult:
    query: Query
    params: dict[str, Any]
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def run_query(conn: Connection | sqlite3.Connection, query: Query | str, params: Mapping[str, Any] | None = None,
              directory: Path | None = None) -> QueryResult:
    """Run a named query (or a loaded `Query`) on a SQLAlchemy connection or a plain sqlite3 connection.

    The SQL goes to the driver as written (not through SQLAlchemy's text(), which would misread `:` in strings)."""
    if isinstance(query, str):
        query = get_query(query, directory)
    values = query.bind(params or {})
    if isinstance(conn, sqlite3.Connection):
        cursor = conn.execute(query.sql, values)
        columns = [d[0] for d in cursor.description or []]
        rows = [tuple(row) for row in cursor.fetchall()]
    else:
        result = conn.exec_driver_sql(query.sql, values)
        columns = list(result.keys())
        rows = [tuple(row) for row in result]
    return QueryResult(query=query, params=values, columns=columns, rows=rows)


def parse_param_options(options: list[str] | None) -> dict[str, str]:
    """`["a=abc", "b=0.14.0"]` -> `{"a": "abc", "b": "0.14.0"}` (the CLI's -p key=value)."""
    params = {}
    for option in options or []:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise QueryError(f"parameter {option!r} is not key=value")
        params[key.strip()] = value
    return params


def is_commit_parameter(parameter: Parameter) -> bool:
    """A tinygrad commit: the description starts "commit" or "tinygrad commit" (not "optional", not "a Svod commit")."""
    return parameter.description.lower().startswith(("commit", "tinygrad commit"))


def resolve_commit_params(conn: Connection | sqlite3.Connection, query: Query, params: Mapping[str, Any]
                          ) -> dict[str, Any]:
    """`params` with every tinygrad commit parameter (see is_commit_parameter) replaced by the full sha it names,
    so the CLI reports an unknown or ambiguous commit instead of returning no rows. Raises CommitNotFound."""
    resolved = dict(params)
    for parameter in query.parameters:
        value = resolved.get(parameter.name)
        if is_commit_parameter(parameter) and isinstance(value, str):
            if not value.strip():
                raise QueryError(f"parameter {parameter.name} is empty; give a sha, sha prefix or version")
            resolved[parameter.name] = resolve_commit(conn, value).sha
    return resolved
