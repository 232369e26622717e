"""tgstore's Datasette plugin: graph, diff and chart pages, an index that leads with the views and queries,
navigation links and highlighted code in tables. `tgstore serve` registers it (tgstore.serve)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datasette import hookimpl
from markupsafe import Markup

from tgstore.web.cells import CellRenderer
from tgstore.web.pages import ROUTES

TEMPLATES = Path(__file__).resolve().parent / "templates"


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
