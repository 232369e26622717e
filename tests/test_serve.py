"""`tgstore serve`: a real Datasette subprocess on a real ingested db, fetched over HTTP (and screenshotted)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sample_bundles import SHA_A, SHA_B, bundle_b, is_svod_query, query_params, write_bundle
from web_server import Server, chromium_available, screenshot, serve_sample, stop_server, text_of

from tgstore.bundle import read_bundle
from tgstore.db import open_engine, upgrade
from tgstore.queries import load_queries, run_query
from tgstore.serve import TABLES, build_metadata
from tgstore.store.ingest import ingest_bundle


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = serve_sample(tmp_path_factory.mktemp("serve"))
    yield running
    stop_server(running)


def test_metadata_has_every_query_and_table_titles(tmp_path: Path) -> None:
    metadata = build_metadata(tmp_path / "x.db")
    database = metadata["databases"]["x"]
    queries = load_queries()
    assert set(database["queries"]) == set(queries)
    for name, canned in database["queries"].items():
        assert canned["title"] == queries[name].title and canned["description"] == queries[name].description
        assert canned["params"] == queries[name].parameter_names and canned["sql"] == queries[name].sql
    assert database["tables"]["v_runs"]["facets"] and database["tables"]["v_runs"]["sort_desc"] == "history_rank"
    # the views with a row per case, kernel, program, pass or rule of every run: a default sort or facets would
    # cost seconds on a thousand commits
    for view in ("v_run_cases", "v_kernels", "v_sources", "v_commit_patterns", "v_passes", "v_pattern_matches",
                 "run_cases"):
        assert database["tables"][view]["title"] and database["tables"][view]["description"]
        assert not {"facets", "sort", "sort_desc"} & set(database["tables"][view]), view
    with sqlite3.connect(tmp_path / "x.db") as conn:  # the metadata does not touch the file
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_index_and_database_pages(server: Server) -> None:
    assert server.db.path.stem in server.get("/").text
    page = server.get(f"/{server.db.path.stem}").text
    for name, query in load_queries().items():
        assert f'href="/{server.db.path.stem}/{name}"' in page
        assert query.title in page
    assert "v_kernels" in page and "tinygrad_commits" in page
    css = server.get("/-/tgstore/tgstore.css")
    assert css.headers["content-type"].startswith("text/css") and "pre.tgstore-code" in css.text
    assert '<link rel="stylesheet" href="/-/tgstore/tgstore.css">' in page
    assert ".tgstore-code .kt" in server.get("/-/tgstore/pygments.css").text  # Pygments' token colours


def test_table_and_view_pages(server: Server) -> None:
    db = server.db.path.stem
    page = server.get(f"/{db}/tinygrad_commits").text
    assert "tinygrad commits" in page and SHA_A in page and "older: scalar matmul" in page
    rows = server.get(f"/{db}/tinygrad_commits.json", _shape="array").json()
    assert {r["sha"] for r in rows} == {SHA_A, SHA_B, server.db.sha_c}
    page = server.get(f"/{db}/v_sources", case="matmul", renderer="C").text
    assert TABLES["v_sources"]["title"] in page
    # code columns are preformatted, highlighted as C (Pygments' token classes), whole
    assert '<pre class="tgstore-code"><span class="kt">void</span><span class="w"> </span><span class="nf">r_16_16_4' \
        in page
    assert "acc0 += *((float4*)(data1 + k*4)) * *((float4*)(data2 + k*4));" in text_of(page)
    assert 'class="facet-info' in server.get(f"/{db}/v_runs").text  # the configured facets
    rows = server.get(f"/{db}/v_sources.json", case="matmul", renderer="C", _shape="array").json()
    assert len(rows) == 6 and {r["kernel_name"] for r in rows} == {"r_16_16", "r_16_16_4", "E_16"}
    page = server.get(f"/{db}/blobs/1").text  # a row page
    assert '<pre class="tgstore-code">' in page
    page = server.get(f"/{db}/v_commit_patterns", function_name="<lambda>").text
    assert "UPat(Ops.MUL, src=(UPat.var('x'), UPat.const(1)))" in text_of(page)


@pytest.mark.parametrize("name", sorted(n for n in load_queries() if not is_svod_query(n)))
def test_canned_query(server: Server, name: str) -> None:
    """Each canned query's page and JSON, with the parameters the query tests use: the same rows as run_query."""
    db = server.db.path.stem
    params = query_params(server.db)[name]
    page = server.get(f"/{db}/{name}", **params).text
    query = load_queries()[name]
    assert query.title in page
    with sqlite3.connect(f"file:{server.db.path}?mode=ro", uri=True) as conn:
        expected = run_query(conn, query, params).dicts()
    assert expected, f"{name} returns no rows on the sample: a weak check"
    got = server.get(f"/{db}/{name}.json", _shape="array", **params).json()
    assert got == expected
    for value in params.values():
        if value:
            assert f'value="{value}"' in page  # the form shows the parameters
    if "source" in expected[0]:
        assert '<pre class="tgstore-code">' in page
    empty = server.get(f"/{db}/{name}.json", _shape="array").json()  # blank form: no error
    assert isinstance(empty, list)


def test_serves_read_only_while_an_ingest_writes(server: Server, tmp_path: Path) -> None:
    db = server.db.path.stem
    response = httpx.post(f"{server.url}", data={"sql": "DELETE FROM cases"}, timeout=10)
    assert response.status_code in (400, 403, 405)
    assert httpx.get(f"{server.url}.json", params={"sql": "DELETE FROM cases"}, timeout=10).status_code == 400
    before = len(server.get(f"/{db}/tinygrad_commits.json", _shape="array").json())
    records = bundle_b()
    records[0] = {**records[0], "tinygrad": {**records[0]["tinygrad"], "version": "0.15.0",
                                             "git": {**records[0]["tinygrad"]["git"], "sha": "f6" * 20,
                                                     "date": "2026-04-01T12:00:00+00:00"}}}
    engine = open_engine(server.db.path)
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "new.jsonl", records)))
    engine.dispose()
    rows = server.get(f"/{db}/tinygrad_commits.json", _shape="array").json()
    assert len(rows) == before + 1 and "f6" * 20 in {r["sha"] for r in rows}
    assert server.get(f"/{db}/commits.json", _shape="array").json()[0]["version"] == "0.15.0"


@pytest.mark.slow  # headless Chromium
def test_screenshot_of_a_source_page(server: Server, tmp_path: Path) -> None:
    if not chromium_available():
        pytest.skip("chromium is not installed")
    url = f"{server.url}/case_at_commit?commit={SHA_B[:8]}&case_name=matmul&renderer=C"
    data = screenshot(url, tmp_path / "case_at_commit.png", tmp_path / "profile", "1280,900")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a rendered page, not a blank one


def test_every_table_option_names_a_column_that_exists(tmp_path: Path) -> None:
    """Facets, sorts and label columns in TABLES name real columns of the migrated schema (a stale one is a 400)."""
    engine = open_engine(tmp_path / "schema.db")
    upgrade(engine)
    engine.dispose()
    with sqlite3.connect(tmp_path / "schema.db") as conn:
        for table, spec in TABLES.items():
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info('{table}')")}
            assert columns, f"{table} is not in the schema"
            named = [*spec.get("facets", []), *(spec[k] for k in ("sort", "sort_desc", "label_column") if k in spec)]
            assert set(named) <= columns, (table, set(named) - columns)
