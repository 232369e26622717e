"""Every tgstore page as data, and canned queries that read well, on the sample database through a real `tgstore
serve`: each page's JSON twin (its path + .json) answers what the library answers; a canned query's page is titled by
its title, describes its parameters, shows the form without a result while one it needs is empty; commit hashes in a
result link to their runs and nanoseconds read as times; the slowdowns page names kernels, µs and ratios."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import httpx
import pytest
from sample_bundles import query_params
from web_server import Server, serve_sample, stop_server

from tgstore.compare.slowdowns import compare_times
from tgstore.compare.summary import summarize
from tgstore.queries import load_queries
from tgstore.web import urls


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = serve_sample(tmp_path_factory.mktemp("web-data"))
    yield running
    stop_server(running)


def get_json(server: Server, path: str, status: int = 200) -> dict:
    response = httpx.get(server.root + urls.as_json(path), timeout=60)
    assert response.status_code == status, (path, response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def readonly(server: Server) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{server.db.path}?mode=ro", uri=True)


def test_every_page_has_a_json_twin(server: Server) -> None:
    db = server.db
    first_graph = readonly(server).execute("SELECT hash FROM graphs LIMIT 1").fetchone()[0]
    for path in (urls.index(), urls.diff(), urls.diff(db.sha_a[:8], db.version_b),
                 urls.diff(db.sha_a[:8], db.version_b, "matmul"), urls.kernel("matmul", 0), urls.parity(),
                 urls.chart("uops", "matmul"), urls.slowdowns(), urls.regressions(), urls.graph(first_graph)):
        data = get_json(server, path)
        assert isinstance(data, dict) and data, path
    index = get_json(server, urls.index())
    assert {c["case"] for c in index["cases"]} >= {"matmul", "add"} and index["counts"]["commits"] == 3
    bench = get_json(server, urls.kernel("matmul", 0))
    assert bench["case"] == "matmul"
    # what the page's tabs show is in its twin: the source, the linearized UOps, the canonical documents
    assert bench["source"].strip()
    assert isinstance(bench["uops"], list) and len(bench["uops"]) <= bench["uop_total"]
    assert isinstance(bench["canonical"], list)
    missing = get_json(server, urls.kernel("no_such_case"), 404)
    assert missing["ok"] is False and "no run holds case 'no_such_case'" in missing["error"]


def test_the_diff_summarys_twin_is_the_comparisons_answer(server: Server) -> None:
    db = server.db
    with readonly(server) as conn:
        expected = summarize(conn, db.sha_a[:8], db.version_b).to_json()
        raw = summarize(conn, db.sha_a[:8], db.version_b, ignore_spelling=False).to_json()
    assert get_json(server, urls.diff(db.sha_a[:8], db.version_b)) == expected
    assert get_json(server, urls.diff(db.sha_a[:8], db.version_b, spelling="raw")) == raw
    assert expected["ignore_spelling"] is True and raw["ignore_spelling"] is False


def test_slowdowns_name_kernels_in_microseconds_with_ratios_and_links(server: Server) -> None:
    db = server.db
    with readonly(server) as conn:
        expected = compare_times(conn, db.version_a, db.sha_b[:8])
    slower = expected.slower
    assert slower and slower[0].case == "matmul" and slower[0].ratio > 2.5  # b's first matmul kernel: 3x slower
    page = httpx.get(server.root + urls.slowdowns(db.version_a, db.sha_b[:8]), timeout=60).text
    assert f"<code>{slower[0].kernel_b}</code>" in page and "µs at a" in page
    assert f"{slower[0].ratio:.3f}×" in page and f"{slower[0].us_b:,.3f}" in page
    assert 'class="tgstore-kernel-diff" href="/-/diff?' in page and "tgstore-machine" in page
    twin = get_json(server, urls.slowdowns(db.version_a, db.sha_b[:8]))  # the answer: comparison and timed commits
    assert {k: v for k, v in twin.items() if k not in ("timed_commits", "message")} == expected.to_json()
    assert [c["sha"] for c in twin["timed_commits"]] == [db.sha_b, db.sha_a] and twin["message"] is None
    blank = httpx.get(server.root + urls.slowdowns(), timeout=60).text  # the form, the newest two timed commits
    assert 'name="a"' in blank and "tgstore-why-empty" not in blank


@pytest.mark.parametrize("name", ["kernels_changed", "kernel_slowdowns", "source_history"])
def test_a_canned_query_reads_as_a_question(server: Server, name: str) -> None:
    query = load_queries()[name]
    stem = server.db.path.stem
    empty = httpx.get(f"{server.url}/{name}", timeout=60).text
    assert f"<title>{query.title} · {stem}</title>" in empty  # not the SQL
    assert 'tgstore-params-missing' in re.search(r"<body[^>]*>", empty).group(0)
    assert "Fill in" in empty and "no stored commit matches" not in re.sub(r"<[^>]+>", "", empty.split(
        "tgstore-fill-in")[0])
    for parameter in query.parameters:
        assert f"<code>{parameter.name}</code>" in empty and (parameter.description or parameter.name) in empty
    full = httpx.get(f"{server.url}/{name}", params=query_params(server.db)[name], timeout=60).text
    assert "tgstore-params-missing" not in re.search(r"<body[^>]*>", full).group(0)


def test_hashes_link_and_nanoseconds_read_as_times(server: Server) -> None:
    db = server.db
    page = httpx.get(f"{server.url}/kernel_slowdowns", params=query_params(db)["kernel_slowdowns"], timeout=60).text
    assert re.search(r'<td class="col-sha_a[^"]*"><a class="tgstore-sha" href="[^"]*v_runs\?sha=[0-9a-f]{40}"', page)
    times = re.findall(r'<span class="tgstore-ns" title="([\d,]+) ns">([^<]+)</span>', page)
    assert times and all(re.fullmatch(r"[\d.]+ (s|ms|us|ns)", shown) for _raw, shown in times)
