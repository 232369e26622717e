"""tgstore's pages in a real Datasette, on the real extraction of three tinygrad releases, loaded in headless
Chromium: the graph view, the diff view, charts, navigation links and highlighting. Screenshots are kept in
$TGSTORE_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
from releases_db import RELEASES
from tinygrad_releases import RELEASE_CACHE
from web_server import (
    Server,
    chromium_available,
    dom,
    install_datasette_1,
    screenshot,
    start_server,
    stop_server,
    text_of,
)

from tgstore.queries import load_queries, run_query

needs_chromium = pytest.mark.skipif(not chromium_available(), reason="chromium is not installed")


@pytest.fixture(scope="module")
def site(releases_db: Path, tmp_path_factory) -> Iterator[Server]:
    running = start_server(releases_db, tmp_path_factory.mktemp("web") / "serve.log")
    yield running
    stop_server(running)


def one(db: Path, sql: str, *params) -> tuple:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return row


@needs_chromium
def test_graph_view_draws_every_node_of_a_kernel(site: Server, tmp_path: Path) -> None:
    digest, node_count, name = one(site.path, "SELECT kernel_hash, node_count, kernel_name FROM v_kernels "
                                              "WHERE \"case\" = 'matmul' AND version = '0.14.0' AND root_op = 'SINK'")
    url = f"{site.root}/-/graph/{digest}?fold=0"  # every node its own box (constants are folded by default)
    page = dom(url, tmp_path / "profile")
    assert len(re.findall(r'<g class="node[ "]', page)) == node_count
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        ops = [op for (op,) in conn.execute("SELECT op FROM uop_nodes JOIN kernels k ON k.id = kernel_id "
                                            "WHERE k.hash = ? ORDER BY idx", (digest,))]
    assert re.findall(r'<g class="node[^"]*" id="n\d+" data-op="([A-Z_0-9]+)"', page) == ops
    assert f"kernel {name}" in page
    # the script fitted the drawing into its box: the viewBox now has the box's aspect, not the drawing's
    assert 'width="100%"' in page
    data = screenshot(url, tmp_path / "graph.png", tmp_path / "profile")
    assert len(data) > 30_000


def test_graph_view_highlights_what_changed_between_two_pass_graphs(site: Server) -> None:
    """The first differing pass of a kernel between two releases: its graph at b with the changed nodes marked."""
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        pairs = conn.execute(
            "SELECT a.graph_hash, b.graph_hash FROM v_passes a JOIN v_passes b ON b.\"case\" = a.\"case\" "
            "AND b.position = a.position AND b.renderer = a.renderer AND b.pass_name = a.pass_name "
            "WHERE a.version = '0.12.0' AND b.version = '0.14.0' AND a.\"case\" = 'add' AND a.renderer = 'C' "
            "AND a.graph_hash <> b.graph_hash ORDER BY a.pass_position LIMIT 1").fetchall()
    assert pairs, "0.12.0 and 0.14.0 lower add's kernel differently"
    graph_a, graph_b = pairs[0]
    page = site.get(f"/-/graph/{graph_b}", vs=graph_a, fold="0", spelling="raw").text
    marked = len(re.findall(r'<g class="node (changed|added|removed)"', page))  # removed ones drawn as ghosts
    assert marked > 0
    assert f'<strong class="tgstore-changed-count">{marked}</strong> node{"s differ" if marked > 1 else " differs"}' \
        in page
    same = site.get(f"/-/graph/{graph_b}", vs=graph_b).text
    assert not re.search(r'<g class="node (changed|added|removed)"', same)
    svg = site.get(f"/-/graph/{graph_b}.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.text.startswith("<svg")


def test_a_program_graph_links_its_linearized_uops(site: Server) -> None:
    """The last pass (linearize/render) is the PROGRAM as a graph; its page links the program's linearized UOps."""
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        digest, linear_count = conn.execute(
            "SELECT pe.graph_hash, l.uop_count FROM v_passes pe JOIN schedule_items si ON si.position = pe.position "
            "JOIN programs p ON p.schedule_item_id = si.id AND p.renderer = pe.renderer "
            "JOIN linears l ON l.id = p.linear_id JOIN pass_entries e ON e.pass_list_id = p.pass_list_id "
            "AND e.graph_id = pe.graph_id WHERE pe.version = '0.14.0' AND pe.pass_name = 'linearize/render' "
            "AND pe.renderer = 'C' LIMIT 1").fetchone()
    page = site.get(f"/-/graph/{digest}").text
    found = re.search(r'class="tgstore-linear" href="([^"]+)"', page)
    assert found, "no link to the linearized UOps"
    path, query = found.group(1).replace("&amp;", "&").split("?", 1)
    params = dict(part.split("=", 1) for part in query.split("&"))
    table = site.get(path + ".json", **params, _shape="array", _size="max").json()
    assert {row["linear_id"] for row in table} == {int(params["linear_id"])}
    assert len(table) == linear_count > 0


@needs_chromium
def test_diff_view_of_two_releases_shows_the_changed_line_side_by_side(site: Server, tmp_path: Path) -> None:
    url = f"{site.root}/-/diff?a=0.12.0&b=0.14.0&case=add"
    page = dom(url, tmp_path / "profile")
    # 0.14 dropped the CPU kernels' core_id parameter: the old line on the left, the new one on the right
    cells = [re.findall(r'<td class="code ([a-z]*)">(.*?)</td>', row, re.S) for row in page.split("<tr")]
    pairs = [(text_of(row[0][1]), text_of(row[1][1])) for row in cells
             if len(row) == 2 and (row[0][0], row[1][0]) == ("del", "add")]
    params = "float* restrict data0_256, float* restrict data1_256, float* restrict data2_256"
    assert (f"void E_64_4({params}, int core_id) {{", f"void E_64_4({params}) {{") in pairs
    assert '<span class="kt">void</span>' in page  # highlighted as C
    assert "passes: first difference at" in page  # the pass graphs, with links to the graph view
    assert re.search(r'href="/-/graph/[0-9a-f]{64}\?vs=[0-9a-f]{64}&amp;sides=1"', page)  # both, side by side
    data = screenshot(url, tmp_path / "diff.png", tmp_path / "profile", "1400,1600")
    assert len(data) > 50_000


def test_diff_view_says_why_it_cannot_compare(site: Server) -> None:
    import httpx

    response = httpx.get(f"{site.root}/-/diff", params={"a": "0.12.0", "b": "deadbeef"}, timeout=30)
    assert response.status_code == 400
    assert re.search(r'<p class="message-error">[^<]*deadbeef', response.text)


@needs_chromium
def test_chart_has_one_point_per_stored_commit(site: Server, tmp_path: Path) -> None:
    url = f"{site.root}/-/chart?metric=kernels&case=softmax"
    page = dom(url, tmp_path / "profile")
    points = re.findall(r'<circle[^>]*class="dot', page)
    assert len(points) == len(RELEASES)
    labels = re.findall(r'<desc class="x_label">([^<]+)</desc>', page)
    assert [label.split()[0] for label in labels] == RELEASES  # git (history) order: oldest first
    counts = [int(v) for v in re.findall(r'<desc class="value">(\d+)</desc>', page)]
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        stored = [n for (n,) in conn.execute("SELECT kernel_count FROM v_run_cases WHERE \"case\" = 'softmax' "
                                             "ORDER BY history_rank")]
    assert counts == stored
    data = screenshot(url, tmp_path / "chart.png", tmp_path / "profile")
    assert len(data) > 20_000
    passes = site.get("/-/chart", metric="pass_nodes", case="softmax").text
    # small multiples: one small chart (or one line saying it never changed) per pass, scheduler and codegen apart
    assert "<h2>Scheduler passes</h2>" in passes and "<h2>Codegen passes (C)</h2>" in passes
    assert passes.index("Scheduler passes") < passes.index("Codegen passes")
    codegen = passes[passes.index("Codegen passes"):]
    assert 'series=codegen%3A+expander"' in codegen and "series=scheduler" not in codegen
    panels = re.findall(r'<a class="tgstore-panel" href="([^"]+)"', passes)
    assert len(panels) == passes.count('class="tgstore-spark"') > 1
    one = httpx.get(site.root + unescape(panels[0]), timeout=30).text  # one pass alone: one series, a point a commit
    assert set(re.findall(r'class="series serie-(\d+)', one)) == {"0"}
    assert 0 < len(re.findall(r'<circle[^>]*class="dot', one)) <= len(RELEASES)


def test_navigation_from_a_commit_to_its_kernels_sources_passes_and_graph(site: Server) -> None:
    db = site.path.stem
    sha, run_id = one(site.path, "SELECT sha, run_id FROM v_runs WHERE version = '0.14.0'")
    runs = site.get(f"/{db}/v_runs").text
    assert f'href="/{db}/v_runs?sha={sha.replace(":", "%3A")}" title="{sha}">{sha[:17]}</a>' in runs
    assert f'href="/{db}/v_run_cases?run_id={run_id}"' in runs
    cases = site.get(f"/{db}/v_run_cases", run_id=str(run_id)).text
    assert f'href="/{db}/v_kernels?run_id={run_id}&amp;case=matmul"' in cases
    kernels = site.get(f"/{db}/v_kernels", run_id=str(run_id), case="matmul").text
    links = dict((label, href.replace("&amp;", "&")) for href, label in
                 re.findall(r'<a class="tgstore-link" href="([^"]+)"[^>]*>(source|passes|graph)</a>', kernels))
    assert set(links) == {"source", "passes", "graph"}
    sources = site.get(links["source"]).text
    assert "<span class=\"kt\">void</span>" in sources  # the C source, highlighted
    passes = site.get(links["passes"]).text
    assert "expander" in passes and "/-/graph/" in passes
    assert "kernel r_" in site.get(links["graph"]).text


def test_the_biggest_views_are_served_without_counting_every_row(site: Server) -> None:
    db = site.path.stem
    kernels = one(site.path, "SELECT count(*) FROM kernels")[0]
    assert re.search(rf"<h3>{kernels:,} rows", site.get(f"/{db}/kernels").text)  # a table is counted
    for view in ("v_passes", "v_pattern_matches", "v_kernels", "v_sources", "v_run_cases", "run_cases"):
        page = site.get(f"/{db}/{view}").text
        assert not re.search(r"<h3>[\d,]+ rows", page) and 'class="rows-and-columns' in page, view


def test_index_leads_with_views_and_questions(site: Server) -> None:
    page = site.get("/").text
    headings = re.findall(r"<h2>([^<]+)</h2>", page)
    assert headings[:3] == ["Views", "Questions (canned queries)", "Charts"] and headings[-1] == "Tables"
    assert page.index("v_kernels") < page.index("kernels_changed") < page.index("tinygrad_commits")
    assert f"{len(RELEASES)} commits" in page


def test_history_queries_link_to_charts_and_diffs(site: Server) -> None:
    db = site.path.stem
    page = site.get(f"/{db}/source_history", case_name="add", renderer="C").text
    assert 'href="/-/chart?metric=uops&amp;case=add&amp;renderer=C"' in page
    assert re.search(r'href="/-/diff\?a=[^"]+&amp;b=[^"]+&amp;case=add"', page)
    page = site.get(f"/{db}/kernels_changed", a="0.12.0", b="0.14.0").text
    assert 'href="/-/diff?a=0.12.0&amp;b=0.14.0&amp;case=add"' in page
    assert re.search(r'href="/-/graph/[0-9a-f]{64}"', page)


def test_the_datasette_1_line_serves_the_same_pages(releases_db: Path, tmp_path: Path) -> None:
    """Datasette 1.0 reads canned queries and table options from configuration, not metadata: every canned query,
    view option and tgstore page must work there too."""
    server = start_server(releases_db, tmp_path / "serve.log", install_datasette_1(RELEASE_CACHE.parent))
    try:
        assert server.get("/-/versions.json").json()["datasette"]["version"].startswith("1.0")
        db = releases_db.stem
        params = {"a": "0.12.0", "b": "0.14.0"}
        with sqlite3.connect(f"file:{releases_db}?mode=ro", uri=True) as conn:
            expected = run_query(conn, "kernels_changed", params).dicts()
        assert expected and server.get(f"/{db}/kernels_changed.json", _shape="array", **params).json() == expected
        with sqlite3.connect(f"file:{releases_db}?mode=ro", uri=True) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        for name, query in load_queries().items():
            page = server.get(f"/{db}/{name}").text
            if name not in tables:  # a query named as a table (svod_runs) is the table's page on the 1.0 line
                assert f"<title>{query.title} · {db}</title>" in page  # titled by its title, not its SQL
        assert 'class="facet-info' in server.get(f"/{db}/v_runs").text  # table options from configuration
        assert ">passes</a>" in server.get(f"/{db}/v_kernels", case="matmul").text  # links
        sources = server.get(f"/{db}/v_sources", case="add", renderer="C").text
        assert re.search(r'<pre class="tgstore-code( tgstore-short)?"><span class="k">typedef</span>', sources)
        assert "core_id" in text_of(server.get("/-/diff", a="0.12.0", b="0.14.0", case="add").text)
        digest, = one(releases_db, "SELECT kernel_hash FROM v_kernels WHERE \"case\" = 'add' AND version = '0.14.0'")
        assert '<g class="node"' in server.get(f"/-/graph/{digest}").text
    finally:
        stop_server(server)


def test_side_by_side_rows_are_lexed_as_one_text_with_every_cell_closed() -> None:
    from tgstore.web.sidebyside import table

    unified = ["@@ -1,3 +1,3 @@", " /* a comment", "    over two lines */", "-int x = 1;", "+long x = 1;"]
    html = str(table(unified, "C"))
    cells = re.findall(r'<td class="code ?[a-z]*">(.*?)</td>', html, re.S)
    assert len(cells) == 6 and all(c.count("<span") == c.count("</span>") for c in cells)
    # the comment's second line is still a comment: lexed with the first, not on its own
    assert cells[2] == cells[3] == '<span class="cm">   over two lines */</span>'
    # the changed word is marked within its highlighted token
    assert '<span class="kt"><mark class="tgstore-intra">int</mark></span>' in cells[4]
    assert '<span class="kt"><mark class="tgstore-intra">long</mark></span>' in cells[5]
