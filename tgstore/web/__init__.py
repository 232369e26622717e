"""tgstore's Datasette plugin: graph, diff and chart pages, an index that leads with the views and queries,
navigation links and highlighted code in tables. `tgstore serve` registers it (tgstore.serve)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from datasette import hookimpl
from markupsafe import Markup

from tgstore.queries import load_queries
from tgstore.web.cells import CellRenderer
from tgstore.web.errors import READ_METHODS, error_response, method_not_allowed
from tgstore.web.routes import ROUTES
from tgstore.web.urls import Bound

TEMPLATES = Path(__file__).resolve().parent / "templates"
# Views: their row count means running the whole view (every program, pass or case of every run), seconds at
# thousands of commits, so their pages are served without the count (Datasette's `_nocount`), paginated as usual.
# Every view of the schema is named v_* except run_cases.
UNCOUNTED_PREFIX = "v_"
UNCOUNTED_VIEWS = frozenset({"run_cases"})


def uncounted(scope: dict[str, Any]) -> dict[str, Any]:
    """The request, asking Datasette not to count the rows when it is a page of a view."""
    parts = scope.get("path", "").strip("/").split("/")
    query = scope.get("query_string", b"")
    name = parts[1].split(".")[0] if len(parts) == 2 else ""
    if (name.startswith(UNCOUNTED_PREFIX) or name in UNCOUNTED_VIEWS) and b"_nocount" not in query:
        return {**scope, "query_string": query + (b"&" if query else b"") + b"_nocount=1"}
    return scope


@hookimpl
def asgi_wrapper() -> Any:
    def wrap(app: Any) -> Any:
        async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope.get("type") == "http" and scope.get("method", "GET") not in READ_METHODS:
                await method_not_allowed(send)  # read-only: nothing that writes is routed
                return
            await app(uncounted(scope) if scope.get("type") == "http" else scope, receive, send)

        return wrapped

    return wrap


@hookimpl(tryfirst=True)
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    return error_response(datasette, request, exception)


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return ROUTES


@hookimpl
def render_cell(row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any
                ) -> Markup | None:
    renderer = CellRenderer(lambda name: datasette.urls.table(database, name), datasette.urls.path)
    return renderer.render(row, value, column, table)


@hookimpl
def extra_css_urls(datasette: Any) -> list[str]:
    return [datasette.urls.path("/-/tgstore/tgstore.css"), datasette.urls.path("/-/tgstore/pygments.css")]


@hookimpl
def extra_js_urls(datasette: Any) -> list[str]:
    return [datasette.urls.path("/-/tgstore/tgstore.js")]


@hookimpl
def prepare_jinja2_environment(env: Any, datasette: Any) -> None:
    # Datasette's templates indent every cell of a result row on a line of its own: on a 1,000-row query page that
    # whitespace was a third of its 1.2 MB. Lines holding only a block tag now leave nothing behind.
    env.trim_blocks = True
    env.lstrip_blocks = True
    env.globals["tg"] = Bound(datasette.urls.path)  # tgstore's URL builder (tgstore.web.urls) in every template
    env.globals["tg_query"] = query_info  # a canned query's title and parameters (templates/query.html)


@cache
def canned_queries() -> dict[str, Any]:
    return load_queries()  # read once per server: the files ship with tgstore


def query_info(name: str | None) -> dict[str, Any] | None:
    """A canned query's title, parameters (name -> what it means) and the ones it needs, or None (custom SQL)."""
    query = canned_queries().get(name or "")
    if query is None:
        return None
    return {"title": query.title, "parameters": {p.name: p.description or p.name for p in query.parameters},
            "required": [p.name for p in query.parameters if not p.optional]}
