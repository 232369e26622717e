"""tgstore's URLs: one line per page. A new page is one new module in tgstore/web/pages and one line here."""

from __future__ import annotations

from typing import Any

from tgstore.web.pages import blob, chart, diff, graph, index, kernel, parity, passdiff, regressions, rewrites, static

HASH = "(?P<hash>[0-9a-f]{64})"

ROUTES: list[tuple[str, Any]] = [
    (r"^/$", index.index),
    (r"^/-/kernel$", kernel.kernel),
    (rf"^/-/graph/{HASH}(\.(?P<format>svg))?$", graph.graph),
    (r"^/-/rewrites$", rewrites.rewrites),
    (rf"^/-/blob/{HASH}$", blob.blob),
    (r"^/-/diff$", diff.diff),
    (r"^/-/passdiff$", passdiff.passdiff),
    (r"^/-/parity$", parity.parity_page),
    (r"^/-/chart$", chart.chart),
    (r"^/-/regressions$", regressions.regressions),
    (r"^/-/tgstore/(?P<name>[A-Za-z0-9_.-]+)$", static.static),
]
