"""`queries` and `query`: the canned SQL questions in queries/*.sql, listed and run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgstore.answers.base import Answer, Reader, Unanswerable


@dataclass
class ParameterInfo:
    name: str
    description: str
    optional: bool


@dataclass
class QueryInfo:
    name: str
    title: str
    description: str
    parameters: list[ParameterInfo] = field(default_factory=list)

    def signature(self) -> str:
        """`a, b, [renderer]`: the parameters, optional ones bracketed (as queries.Query.signature)."""
        if not self.parameters:
            return "no parameters"
        return ", ".join(f"[{p.name}]" if p.optional else p.name for p in self.parameters)


@dataclass
class QueriesAnswer(Answer):
    queries: list[QueryInfo] = field(default_factory=list)


@dataclass
class QueryAnswer(Answer):
    query: str
    title: str
    params: dict[str, Any] = field(default_factory=dict)  # as bound: a commit parameter as the full sha it named
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def queries() -> QueriesAnswer:
    """The canned SQL questions (queries/*.sql): name, title, description and parameters of each."""
    from tgstore.queries import QueryError, load_queries

    try:
        found = load_queries()
    except QueryError as exc:
        raise Unanswerable(str(exc)) from None
    return QueriesAnswer([QueryInfo(q.name, q.title, q.description,
                                    [ParameterInfo(p.name, p.description, p.optional) for p in q.parameters])
                          for q in found.values()])


def query(db: Reader, name: str, params: dict[str, str] | None = None) -> QueryAnswer:
    """Run a canned query (see `queries`) with its parameters, e.g. name="kernels_changed",
    params={"a": "0.13.0", "b": "0.14.0"}; a commit parameter takes a sha, a unique sha prefix or a version."""
    named = checked_query(name, params)
    from tgstore.queries import QueryError, resolve_commit_params, run_query
    from tgstore.store.commit_names import CommitNotFound

    try:
        result = run_query(db, named, resolve_commit_params(db, named, params or {}))
    except (QueryError, CommitNotFound) as exc:
        raise Unanswerable(str(exc)) from None
    return QueryAnswer(named.name, named.title, dict(result.params), list(result.columns), result.dicts())


def checked_query(name: str, params: dict[str, str] | None):
    """The named query with `params` bound (unknown or missing parameters refused), before any database is read."""
    from tgstore.queries import QueryError, get_query

    try:
        named = get_query(name)
        named.bind(params or {})
    except QueryError as exc:
        raise Unanswerable(str(exc)) from None
    return named
