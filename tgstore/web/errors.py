"""Error pages without Datasette 0.65's exception printer: that printer calls rich's print_exception outside an
except block, which rich 14+ refuses with a ValueError, so every 404 became a 500. Here a 4xx is its status, a
500 is logged on one line, and a request that would write (tgstore serves read-only) is 405 before it is routed."""

from __future__ import annotations

import importlib
import sys
from typing import Any

from datasette import Response
from datasette.utils.asgi import Base400
from datasette.views.base import DatasetteError
from markupsafe import Markup

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def quiet_default_handler() -> None:
    """Every handle_exception hook runs (Datasette uses the first answer), so Datasette's own runs after ours and
    would still crash in rich: it is told rich is absent, as it is told when rich is not installed."""
    try:
        default = importlib.import_module("datasette.handle_exception")
    except ImportError:
        return
    if getattr(default, "rich", None) is not None:
        default.rich = None


async def method_not_allowed(send: Any) -> None:
    body = b"405 Method Not Allowed: tgstore serves the database read-only\n"
    await send({"type": "http.response.start", "status": 405,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"allow", b"GET, HEAD, OPTIONS"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def error_response(datasette: Any, request: Any, exception: Exception) -> Any:
    """The hook's answer: Datasette's own error page (or JSON), with the exception's status."""
    async def inner() -> Any:
        title = None
        if isinstance(exception, Base400):
            status, info, message = exception.status, {}, exception.args[0] if exception.args else ""
        elif isinstance(exception, DatasetteError):
            status, info, message = exception.status, dict(exception.error_dict), exception.message
            if exception.message_is_html:
                message = Markup(message)
            title = exception.title
        else:
            status, info, message = 500, {}, str(exception)
            print(f"tgstore serve: {request.path}: {type(exception).__name__}: {exception}", file=sys.stderr)
        info.update({"ok": False, "error": message, "status": status, "title": title})
        if request.path.split("?")[0].endswith(".json"):
            return Response.json(info, status=status)
        template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
        return Response.html(await template.render_async(dict(info, urls=datasette.urls,
                                                              app_css_hash=datasette.app_css_hash(),
                                                              menu_links=lambda: [])), status=status)

    return inner
