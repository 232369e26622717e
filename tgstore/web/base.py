"""What every tgstore page shares, as Datasette's BaseView is shared by its views: the database it reads, rendering
a template with the database named, the not-found page, a read-only SQLAlchemy engine for the library functions
that take one, and reading a request's small arguments. Pages import this; this imports no page."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from datasette.utils.asgi import Response

from tgstore.db.engine import open_engine


def database(datasette: Any) -> Any:
    return datasette.get_database()


async def render(datasette: Any, request: Any, template: str, context: dict[str, Any], status: int = 200) -> Response:
    db = database(datasette)
    html = await datasette.render_template(template, {"database": db.name, "db_url": datasette.urls.database(db.name),
                                                      **context}, request=request)
    return Response.html(html, status=status)


async def not_found(datasette: Any, request: Any, message: str) -> Response:
    return await render(datasette, request, "tgstore_message.html", {"title": "Not found", "message": message}, 404)


async def bad_request(datasette: Any, request: Any, message: str) -> Response:
    return await render(datasette, request, "tgstore_message.html", {"title": "Cannot show that", "message": message},
                        400)


@lru_cache(maxsize=4)
def reader_engine(path: str) -> Any:
    """A read-only engine on the served file, for library code written against SQLAlchemy (diff, stages, steps)."""
    return open_engine(Path(path), writer=False)


def int_arg(request: Any, name: str, default: int | None = None) -> int | None:
    value = (request.args.get(name) or "").strip()
    return int(value) if value.lstrip("-").isdigit() else default


def short_sha(sha: str) -> str:
    return sha[:17] if sha.startswith("tree:") else sha[:12]


def commit_label(sha: str, version: str | None) -> str:
    """A commit as people name it: its version, else a short sha."""
    return version or short_sha(sha)
