"""A Datasette plugin for browsing tgstore: code columns (sources, ASTs, DEBUG output, tracebacks) shown as
monospaced, scrollable <pre> blocks instead of one long truncated line. `tgstore serve` registers it."""

from __future__ import annotations

from typing import Any

from datasette import hookimpl
from datasette.utils.asgi import Response
from markupsafe import Markup, escape

# Columns that always hold code or program output, in tables, views and canned queries alike.
CODE_COLUMNS = frozenset({"source", "code", "pyrender", "ast_text", "debug", "stderr", "case_traceback", "upat"})
# Columns that hold code in some places (blob text, tracebacks) and short words elsewhere: only multi-line values.
MULTILINE_COLUMNS = frozenset({"text", "error", "reason", "arg"})
WRAPPED_COLUMNS = frozenset({"upat"})  # one long line each: wrap rather than scroll

CSS = """
pre.tgstore-code {
  font-family: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.82rem;
  line-height: 1.4;
  white-space: pre;
  background: #f6f8fa;
  color: #1f2328;
  border: 1px solid #d0d7de;
  border-radius: 4px;
  padding: 0.4em 0.6em;
  margin: 0;
  max-height: 28em;
  max-width: 90ch;
  min-width: 20ch;
  overflow: auto;
  text-align: left;
}
pre.tgstore-code.tgstore-wrap { white-space: pre-wrap; word-break: break-all; max-width: 60ch; }
body.row pre.tgstore-code, body.query pre.tgstore-code { max-height: 60em; }
td.col-source, td.col-pyrender, td.col-ast_text, td.col-debug, td.col-text, td.col-stderr { vertical-align: top; }
"""


def is_code(value: Any, column: str | None, table: str | None) -> bool:
    if not isinstance(value, str) or not column:
        return False
    if column in CODE_COLUMNS:
        return True
    return column in MULTILINE_COLUMNS and "\n" in value


@hookimpl
def render_cell(value: Any, column: str, table: str | None) -> Markup | None:
    if not is_code(value, column, table):
        return None
    classes = "tgstore-code tgstore-wrap" if column in WRAPPED_COLUMNS else "tgstore-code"
    return Markup(f'<pre class="{classes}">{escape(value)}</pre>')


async def _stylesheet() -> Response:
    return Response(CSS, content_type="text/css; charset=utf-8", headers={"Cache-Control": "max-age=300"})


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return [(r"^/-/tgstore\.css$", _stylesheet)]


@hookimpl
def extra_css_urls(datasette: Any) -> list[str]:
    return [datasette.urls.path("/-/tgstore.css")]
