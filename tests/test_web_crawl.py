"""No link to what does not exist (issue 40, point 5): a breadth-first crawl from `/` to depth 3 through a real
`tgstore serve` of two real releases (tests/two_releases_db.py: 0.13.0 and 0.14.0, timed, a case whose schedule
differs between them, a Svod log) finds no 404 and no 5xx. Every link to a tgstore page (`/-/...`: workbench,
diffs, graphs, parity, charts, slowdowns, their JSON twins) is followed once per page it names (its case, kernel,
commits, renderer; the selected pass, step or row of the same page aside); Datasette's own pages once per path and
set of parameter names (their sort, facet and page links combine without end, and are Datasette's code)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from urllib.parse import parse_qsl, urldefrag, urljoin, urlsplit

import httpx
import pytest
from web_server import Server, start_server, stop_server

HREF = re.compile(r'(?<![\w-])(?:href|src|data-svg|data-load)="([^"]+)"')
DEPTH = 3
# query parameters that select within a page (which pass, step, row, page of rows), not which page it is
WITHIN = frozenset({"pass", "step", "row", "start", "fold", "sides", "title", "changes", "collapse", "spelling",
                    "line", "fragment", "section", "series", "_sort", "_sort_desc", "_facet", "_next", "_size"})
PER_PATTERN = 12  # Datasette's pages: of each path pattern and set of parameter names


@pytest.fixture(scope="module")
def site(two_releases_db: Path, tmp_path_factory) -> Iterator[Server]:
    running = start_server(two_releases_db, tmp_path_factory.mktemp("crawl-web") / "serve.log")
    yield running
    stop_server(running)


def page_key(path: str) -> tuple:
    """What makes two links the same page for this crawl."""
    parts = urlsplit(path)
    params = parse_qsl(parts.query, keep_blank_values=True)
    if parts.path.startswith("/-/"):
        return parts.path, tuple(sorted((k, v) for k, v in params if k not in WITHIN))
    return parts.path, tuple(sorted({k for k, _v in params}))


def test_a_crawl_from_home_to_depth_3_finds_no_404_and_no_5xx(site: Server) -> None:
    root = site.root
    seen: set[tuple] = {page_key("/")}
    per_pattern: dict[tuple, int] = {}
    level, failures, fetched, tgstore_pages = ["/"], [], 0, 0
    with httpx.Client(timeout=180) as client:
        for depth in range(DEPTH + 1):
            following = []
            for path in level:
                response = client.get(root + path)
                fetched += 1
                if response.status_code == 404 or response.status_code >= 500:
                    failures.append((depth, path, response.status_code, response.text[:200]))
                    continue
                tgstore_pages += path.startswith("/-/")
                if depth == DEPTH or "html" not in response.headers.get("content-type", ""):
                    continue
                for link in HREF.findall(response.text):
                    url = urldefrag(urljoin(root + path, unescape(link)))[0]
                    parts = urlsplit(url)
                    if not url.startswith(root) or parts.path.endswith((".csv", ".db")):
                        continue
                    target = parts.path + (f"?{parts.query}" if parts.query else "")
                    key = page_key(target)
                    if key in seen:
                        continue
                    if not parts.path.startswith("/-/"):
                        pattern = (re.sub(r"/(\d+|[0-9a-f]{16,}|[^/]*%[^/]*|[^/]*,[^/]*)(?=/|$)", "/*", key[0]), key[1])
                        if per_pattern.get(pattern, 0) >= PER_PATTERN:
                            continue
                        per_pattern[pattern] = per_pattern.get(pattern, 0) + 1
                    seen.add(key)
                    following.append(target)
            level = following
    assert not failures, failures[:10]
    assert fetched > 300 and tgstore_pages > 150, (fetched, tgstore_pages)  # it did crawl, tgstore's pages most
