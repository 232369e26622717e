"""tgstore's URLs: one line per page. A new page is one new module in tgstore/web/pages, one line here and one
builder in tgstore/web/urls.py. Every page also answers at its path + `.json` (its JSON twin, base.render)."""

from __future__ import annotations

from typing import Any

from tgstore.web import urls
from tgstore.web.pages import (
    blob,
    chart,
    diff,
    graph,
    index,
    kernel,
    parity,
    passdiff,
    regressions,
    rewrites,
    slowdowns,
    static,
)

HASH = "(?P<hash>[0-9a-f]{64})"


def page(path: str, handler: Any, formats: str = "json") -> tuple[str, Any]:
    """The route of a page at `path` (a regular expression without anchors), with its `.json` twin."""
    return rf"^{path}(\.(?P<format>{formats}))?$", handler


ROUTES: list[tuple[str, Any]] = [
    (r"^/$", index.index),
    (r"^/-/index\.(?P<format>json)$", index.index),
    page(urls.KERNEL, kernel.kernel),
    page(rf"{urls.GRAPH}/{HASH}", graph.graph, "svg|json"),
    page(urls.REWRITES, rewrites.rewrites),
    page(rf"{urls.BLOB}/{HASH}", blob.blob),
    page(urls.DIFF, diff.diff),
    page(urls.PASSDIFF, passdiff.passdiff),
    page(urls.PARITY, parity.parity_page),
    page(urls.CHART, chart.chart),
    page(urls.REGRESSIONS, regressions.regressions),
    page(urls.SLOWDOWNS, slowdowns.slowdowns),
    (rf"^{urls.STATIC}/(?P<name>[A-Za-z0-9_.-]+)$", static.static),
]
