"""tgstore's static files (/-/tgstore/<name>): its CSS and JavaScript, and Pygments' token colours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datasette.utils.asgi import Response

from tgstore.web.highlight import stylesheet

STATIC = Path(__file__).resolve().parent.parent / "static"


async def static(datasette: Any, request: Any) -> Response:
    name = request.url_vars["name"]
    if name == "pygments.css":
        return Response(stylesheet(), content_type="text/css; charset=utf-8",
                        headers={"Cache-Control": "max-age=3600"})
    path = STATIC / name
    if "/" in name or not path.is_file():
        return Response.text("not found", status=404)
    kind = {"css": "text/css", "js": "text/javascript"}.get(path.suffix.lstrip("."), "application/octet-stream")
    return Response(path.read_text(), content_type=f"{kind}; charset=utf-8", headers={"Cache-Control": "max-age=3600"})
