"""What every tgstore page shares, as Datasette's BaseView is shared by its views: the database it reads, rendering
a template with the database named and the URL builder at hand (`tg` in templates), the not-found page, and
reading a request's small arguments. Pages read through Datasette's own connection (`read`), never a second engine.

Every page has a JSON twin (Datasette's `.json` habit): the route's path with `.json` (routes.py gives every route
the suffix), answered by `render` with the page's data instead of its HTML. A page gives that data as `data=`
(a dict, e.g. a report's `as_json()`); without it, the template's context is turned into JSON (`jsonable`):
dataclasses and objects with `to_json()` become dicts, markup becomes its text, functions are left out. Pages
import this; this imports no page."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from datasette.utils.asgi import Response
from markupsafe import Markup

from tgstore.web.urls import as_json

JSON_TEXT_LIMIT = 20_000  # markup (an SVG drawing, a highlighted table) longer than this is left out of the twin
LEFT_OUT = frozenset({"database", "db_url", "request", "json_url"})


def database(datasette: Any) -> Any:
    return datasette.get_database()


async def read(datasette: Any, fn: Callable[[Any], Any]) -> Any:
    """`fn(conn)` on Datasette's own read connection (a sqlite3 connection, in its thread)."""
    return await database(datasette).execute_fn(fn)


def wants_json(request: Any) -> bool:
    return (request.url_vars or {}).get("format") == "json"


def jsonable(value: Any, depth: int = 0) -> Any:
    """A page's context as JSON values (see the module's docstring); None for what has no JSON form."""
    if depth > 12:
        return None
    if isinstance(value, Markup):
        return str(value.striptags()) if len(value) <= JSON_TEXT_LIMIT else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "to_json") and callable(value.to_json):
        return jsonable(value.to_json(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if str(k) in LEFT_OUT or callable(v) and not hasattr(v, "to_json"):
                continue
            out[str(k)] = jsonable(v, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v, depth + 1) for v in value), key=str)
    return None


async def render(datasette: Any, request: Any, template: str, context: dict[str, Any], status: int = 200,
                 data: Any = None) -> Response:
    """The page: the template rendered, or (its JSON twin) `data`, else the context, as JSON. `data` may be a
    function making it: it is then called for the JSON twin only."""
    if wants_json(request):
        if callable(data):
            data = data()
        found = jsonable(data if data is not None else context)
        if isinstance(found, dict) and status >= 400:
            found = {"ok": False, "status": status, **found}
        return Response.json(found, status=status)
    db = database(datasette)
    query = f"?{request.query_string}" if request.query_string else ""
    html = await datasette.render_template(template, {
        "database": db.name, "db_url": datasette.urls.database(db.name),
        "json_url": as_json(request.path + query), **context}, request=request)
    return Response.html(html, status=status)


async def not_found(datasette: Any, request: Any, message: str) -> Response:
    return await render(datasette, request, "tgstore_message.html", {"title": "Not found", "message": message}, 404,
                        data={"error": message})


async def bad_request(datasette: Any, request: Any, message: str) -> Response:
    return await render(datasette, request, "tgstore_message.html", {"title": "Cannot show that", "message": message},
                        400, data={"error": message})


def int_arg(request: Any, name: str, default: int | None = None) -> int | None:
    value = (request.args.get(name) or "").strip()
    return int(value) if value.lstrip("-").isdigit() else default


def str_arg(request: Any, name: str) -> str | None:
    """A text argument, stripped; None when absent or empty."""
    return (request.args.get(name) or "").strip() or None


def ignore_spelling(request: Any) -> bool:
    """Comparisons are spelling-blind unless the page is asked for `spelling=raw` (tgstore/spelling/eras.py)."""
    return request.args.get("spelling", "ignore") != "raw"


def short_sha(sha: str) -> str:
    return sha[:17] if sha.startswith("tree:") else sha[:12]


def commit_label(sha: str, version: str | None) -> str:
    """A commit as people name it: its version, else a short sha."""
    return version or short_sha(sha)
