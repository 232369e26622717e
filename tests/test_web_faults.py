"""The web under bad requests (issue 19, item 5): unmatched routes answer 404, writes 405, and a crawl of every page
and link of a real database (real extractions, a Svod log) through a real `tgstore serve` finds no 500."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest
from web_server import start_server, stop_server

HREF = re.compile(r'(?:href|src)="([^"]+)"')
CRAWL_CAP = 3000
PER_PATTERN = 15  # far above what the database below has; reaching it fails the test (pages would be unbounded)


@pytest.fixture(scope="module")
def server(tmp_path_factory, real_bundles: dict[str, Path]):
    from svod_fixtures import worked_example_log

    where = tmp_path_factory.mktemp("web-faults")
    db = where / "crawl.db"
    for bundle in (real_bundles["c_llvm"], real_bundles["ptx"]):
        proc = subprocess.run([sys.executable, "-m", "tgstore", "ingest", "--db", str(db), "--bundle", str(bundle)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    log = where / "svod.log"
    log.write_text(worked_example_log())
    proc = subprocess.run([sys.executable, "-m", "tgstore", "ingest-svod", str(log), "--case", "sum_rows", "--db",
                           str(db)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    running = start_server(db, where / "serve.log")
    yield running
    stop_server(running)


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/-/graph/../../etc/passwd", 404),
    ("GET", "/-/graph/nonexistent", 404),
    ("GET", "/-/static-plugins/tgstore/..%2f..%2f..%2fetc%2fpasswd", 404),
    ("GET", "/no/such/page/here", 404),
    ("GET", "/crawl/no_such_table", 404),
    ("POST", "/crawl/runs/-/insert", 405),
    ("POST", "/crawl", 405),
    ("PUT", "/crawl/runs", 405),
    ("DELETE", "/crawl/runs/1", 405),
])
def test_unmatched_routes_and_writes(server, method: str, path: str, status: int) -> None:
    response = httpx.request(method, server.root + path, timeout=60, follow_redirects=True)
    assert response.status_code == status, (path, response.status_code, response.text[:300])
    assert "root:x:0:0" not in response.text  # /etc/passwd's first line: no path reaches the file


def test_a_crawl_of_every_page_and_link_finds_no_500(server) -> None:
    root = server.root
    todo, seen, failures, per_pattern = ["/", "/crawl"], set(), [], {}
    with httpx.Client(timeout=120) as client:
        while todo:
            path = todo.pop()
            # every page, and every kind of link on it: one URL per path and set of query parameter names (sort,
            # facet and page links combine without end; each combination of values is the same code)
            parts = urlsplit(path)
            kind = (parts.path, tuple(sorted({p.split("=")[0] for p in parts.query.split("&") if p})))
            # rows and content-addressed pages (/db/table/17, /-/graph/<hash>): up to PER_PATTERN of each pattern
            pattern = (re.sub(r"/(\d+|[0-9a-f]{16,}|[^/]*%[^/]*|[^/]*,[^/]*)(?=/|$)", "/*", kind[0]), kind[1])
            if kind in seen or per_pattern.get(pattern, 0) >= PER_PATTERN:
                continue
            seen.add(kind)
            per_pattern[pattern] = per_pattern.get(pattern, 0) + 1
            assert len(seen) < CRAWL_CAP, "the crawl did not end: pages link to unboundedly many pages"
            response = client.get(root + path)
            if response.status_code >= 500:
                failures.append((path, response.status_code, response.text[:200]))
                continue
            if "html" not in response.headers.get("content-type", ""):
                continue
            for link in HREF.findall(response.text):
                url = urldefrag(urljoin(root + path, unescape(link)))[0]
                parts = urlsplit(url)
                # .json and .csv are renderings of the HTML page's query (the same code), .db the file itself
                if url.startswith(root) and not parts.path.endswith((".csv", ".json", ".db")):
                    todo.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    assert not failures, failures[:10]
    assert len(seen) > 50, len(seen)  # it did crawl: tables, views, queries, graphs, diffs, charts
