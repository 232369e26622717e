"""tgstore as tinygrad's VIZ across commits, on real extractions of 0.12.0 and 0.14.0 (the core cases and
`transcendental`, with rewrite steps) served by a real Datasette and loaded in headless Chromium: the rewrite page of
a matmul pass, pass stepping with what each pass changed, the 2,258-node graph with search, the all-cases compare
page, Datasette's table pages with tgstore's navigation; and `tgstore rewrites` on the command line.
Screenshots are kept in $TGSTORE_SCREENSHOT_DIR when it is set (docs/ holds two of them)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
from cli import tgstore
from releases_db import CORE_CASES
from web_server import Server, chromium_available, dom, screenshot, start_server, stop_server, text_of

from tgstore.compare.matching import compare
from tgstore.db import open_engine, upgrade
from tgstore.pipeline import ExtractionPlan, extract_and_ingest
from tgstore.web.diffpage import SECTION_PAGE_ROWS
from tgstore.web.pages.blob import BLOB_LINES
from tgstore.web.sidebyside import MAX_ROWS

needs_chromium = pytest.mark.skipif(not chromium_available(), reason="chromium is not installed")
TRANSCENDENTAL = '''
from tinygrad import Tensor


def case_transcendental():
    """sin, cos, sqrt, exp2, log2, reciprocal on (64,): the ops tinygrad rewrites into polynomials."""
    x = Tensor.empty(64)
    return x.sin() + x.cos() * x.sqrt() + x.exp2() - x.log2() + x.reciprocal()
'''


@pytest.fixture(scope="module")
def viz_db(tmp_path_factory, tinygrad_release) -> Path:
    """0.12.0 and 0.14.0 over the core cases and transcendental, C and LLVM passes, up to 100 steps a pass."""
    root = tmp_path_factory.mktemp("viz")
    (root / "transcendental.py").write_text(TRANSCENDENTAL)
    db = root / "viz.db"
    engine = open_engine(db)
    upgrade(engine)
    for version in ("0.12.0", "0.14.0"):
        plan = ExtractionPlan(case_files=[CORE_CASES, root / "transcendental.py"], renderers=["C", "LLVM"],
                              stages="C,LLVM", rewrites=100)
        report = extract_and_ingest(engine, tinygrad_release(version), plan)
        assert report.status == "ok", (version, report)
    engine.dispose()
    return db


@pytest.fixture(scope="module")
def site(viz_db: Path, tmp_path_factory) -> Iterator[Server]:
    running = start_server(viz_db, tmp_path_factory.mktemp("viz-web") / "serve.log")
    yield running
    stop_server(running)


def rows(db: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql, params).fetchall()


def matmul_pass(db: Path, name: str) -> tuple[int, int, str]:
    """(run id, pass position, graph hash) of matmul's kernel 0 C pass `name` at 0.14.0."""
    (found,) = rows(db, "SELECT run_id, pass_position, graph_hash FROM v_passes WHERE \"case\" = 'matmul' AND "
                        "version = '0.14.0' AND renderer = 'C' AND position = 0 AND pass_name = ? AND depth = 0",
                    name)
    return found


# ---------------------------------------------------------------- command line


def test_rewrites_prints_each_step_with_its_rule_and_nodes(viz_db: Path) -> None:
    proc = tgstore("rewrites", "matmul", "--commit", "0.14.0", "--pass", "expander", "--json", "--db", viz_db)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"case", "commit", "kernels"} and out["case"] == "matmul"
    (kernel,) = out["kernels"]
    assert kernel["index"] == 0 and [p["name"] for p in kernel["passes"]] == ["expander"]
    steps = kernel["passes"][0]["steps"]
    assert steps and [s["index"] for s in steps] == list(range(len(steps)))
    for step in steps:
        pattern = step["pattern"]
        assert pattern["file"].startswith("tinygrad/") and pattern["line"] > 0
        assert "UPat" in pattern["upat"]  # the rule's source, as VIZ prints it
        for node in (step["before"], step["after"]):
            assert set(node) == {"op", "dtype", "arg", "hash"} and re.fullmatch(r"[0-9a-f]{64}", node["hash"])
        assert step["before"]["hash"] != step["after"]["hash"]
    # expander's rule for REDUCE (expand_reduce) fired on matmul's reduction
    assert any(s["before"]["op"] == "REDUCE" and "expand_reduce" in s["pattern"]["upat"] for s in steps)
    table = tgstore("rewrites", "matmul", "--commit", "0.14.0", "--pass", "expander", "--db", viz_db)
    assert table.returncode == 0 and "tinygrad/codegen/" in table.stdout and "1 pass" in table.stderr
    unknown = tgstore("rewrites", "matmull", "--db", viz_db)
    assert unknown.returncode == 1 and "matmul" in unknown.stderr and "transcendental" in unknown.stderr


def test_what_a_pass_changed_marks_the_rewrite_not_its_ancestors(viz_db: Path) -> None:
    """expander at 0.14.0 replaces matmul's UNROLL range by a STACK and the reduce's output by a RESHAPE: those
    are marked; the STORE, END and SINK above them are not (hash-of-subtree ancestry marked all of them)."""
    (before, after), = rows(viz_db, "SELECT (SELECT nodes FROM graphs g JOIN v_passes p ON p.graph_id = g.id WHERE "
                                    "p.\"case\" = 'matmul' AND p.version = '0.14.0' AND p.renderer = 'C' AND "
                                    "p.pass_name = 'postopt symbolic'), (SELECT nodes FROM graphs g JOIN v_passes p "
                                    "ON p.graph_id = g.id WHERE p.\"case\" = 'matmul' AND p.version = '0.14.0' AND "
                                    "p.renderer = 'C' AND p.pass_name = 'expander')")
    old, new = json.loads(before), json.loads(after)
    result = compare(old, new)
    ops = {i: new[i][0] for i in range(len(new))}
    assert {"STACK", "RESHAPE"} <= {ops[i] for i in result.added}
    assert "REDUCE" in {ops[i] for i in result.changed}
    assert "RANGE" in {old[i][0] for i in result.removed}
    unmarked = set(range(len(new))) - result.added - result.changed
    assert {"SINK", "END", "STORE"} <= {ops[i] for i in unmarked}
    same = compare(new, new)
    assert not same.added and not same.changed and not same.removed


# ---------------------------------------------------------------- pages


@needs_chromium
def test_rewrite_page_of_a_matmul_pass(site: Server, tmp_path: Path) -> None:
    run, position, graph = matmul_pass(site.path, "expander")
    url = f"{site.root}/-/rewrites?run={run}&case=matmul&kernel=0&renderer=C&pass={position}&step=1"
    page = dom(url, tmp_path / "profile")
    text = text_of(page)
    assert "Rewrite steps in #" in text and "expander" in text
    assert re.search(r"tinygrad/codegen/[\w/]+\.py:\d+", text)  # each step's rule with file:line
    assert "expand_reduce" in text
    # the selected step: before and after drawn, the rewritten node marked in each
    assert len(re.findall(r'<svg[^>]*class="tgstore-graph"', page)) == 2
    assert len(re.findall(r'<g class="node changed"', page)) == 2
    assert f"/-/graph/{graph}?" in page  # back to the pass's graph
    data = screenshot(url, tmp_path / "rewrite-page.png", tmp_path / "profile", "1400,900")
    assert len(data) > 30_000


@needs_chromium
def test_pass_graph_page_steps_to_the_previous_and_next_pass(site: Server, tmp_path: Path) -> None:
    run, position, graph = matmul_pass(site.path, "expander")
    url = f"{site.root}/-/graph/{graph}?run={run}&case=matmul&kernel=0&renderer=C&pass={position}"
    page = dom(url, tmp_path / "profile")
    nxt = re.search(r'<a class="tgstore-next" rel="next" href="([^"]+)">#(\d+) ([^<]+?) →', page)
    prev = re.search(r'<a class="tgstore-prev" rel="prev" href="([^"]+)">← #(\d+) ([^<]+)</a>', page)
    assert nxt and prev, "previous and next links"
    assert int(prev.group(2)) < position < int(nxt.group(2))
    # "what this pass changed": added and changed nodes marked, removed ones ghosted, the SINK unmarked
    assert re.search(r'<g class="node added"[^>]*data-op="STACK"', page)
    assert re.search(r'<g class="node changed"[^>]*data-op="REDUCE"', page)
    assert re.search(r'<g class="node removed"[^>]*data-op="RANGE"', page)
    assert re.search(r'<g class="node" id="n\d+" data-op="SINK"', page)
    assert "rewrite steps" in text_of(page)
    # the next link works: it opens the next pass, whose own previous link leads back here
    following = dom(site.root + nxt.group(1).replace("&amp;", "&"), tmp_path / "profile")
    assert f"#{nxt.group(2)} {nxt.group(3)}" in text_of(following)
    back = re.search(r'<a class="tgstore-prev" rel="prev" href="([^"]+)">', following)
    assert back and f"pass={position}" in back.group(1) and graph in back.group(1)
    data = screenshot(url, tmp_path / "pass-stepping.png", tmp_path / "profile", "1400,900")
    assert len(data) > 30_000


@needs_chromium
def test_the_biggest_graph_opens_readable_and_search_finds_a_node(site: Server, tmp_path: Path) -> None:
    ((digest, count),) = rows(site.path, "SELECT hash, node_count FROM graphs ORDER BY node_count DESC LIMIT 1")
    assert count > 2000, count  # transcendental's late passes at 0.14.0: 2,258 nodes
    page = dom(f"{site.root}/-/graph/{digest}?find=CMPLT&changes=0", tmp_path / "profile")  # the graph alone
    drawn = len(re.findall(r'<g class="node[ "]', page))
    folded = int(re.search(r'data-folded-count="(\d+)"', page).group(1))
    assert drawn + folded == count and folded > 0  # constants folded into their users' labels
    found = re.search(r'tgstore-found">(\d+) found', page)
    assert found and int(found.group(1)) > 0
    assert len(re.findall(r'<g class="node[^"]* found"', page)) == int(found.group(1))
    assert re.search(r'data-start="(root|change)"', page)  # not fitted into an unreadable hairball
    unfolded = dom(f"{site.root}/-/graph/{digest}?fold=0&changes=0", tmp_path / "profile")
    assert len(re.findall(r'<g class="node[ "]', unfolded)) == count


def test_comparing_two_releases_without_a_case_is_a_summary_under_a_megabyte(site: Server) -> None:
    response = site.get("/-/diff", a="0.12.0", b="0.14.0")
    assert len(response.content) < 1_000_000
    text = text_of(response.text)
    assert "cases compared" in text
    links = re.findall(r'href="/-/diff\?a=0.12.0&amp;b=0.14.0&amp;case=(\w+)"', response.text)
    assert "matmul" in links and "add" in links
    case = site.get("/-/diff", a="0.12.0", b="0.14.0", case="add")
    assert "tgstore-intra" in case.text  # the characters that changed within a line are marked
    assert "message-info" not in case.text or "only at tree:" not in case.text


def test_a_case_diff_draws_each_section_bounded_and_pages_through_the_rest(site: Server) -> None:
    summary = site.get("/-/diff", a="0.12.0", b="0.14.0").text
    cases = re.findall(r'href="/-/diff\?a=0.12.0&amp;b=0.14.0&amp;case=(\w+)"', summary)
    long_section = None
    for case in cases:
        page = site.get("/-/diff", a="0.12.0", b="0.14.0", case=case)
        assert len(page.content) < 1_000_000, case
        tables = re.findall(r'<table class="tgstore-diff">(.*?)</table>', page.text, re.S)
        assert all(t.count("<tr") <= MAX_ROWS for t in tables), case
        found = re.search(r'rows 1–(\d+) of (\d+) · <a class="tgstore-section-link" href="([^"]+)">', page.text)
        if found:
            long_section = (int(found.group(1)), int(found.group(2)), unescape(found.group(3)))
            break
    assert long_section, "some source diff between 0.12.0 and 0.14.0 is longer than a section shows"
    shown, total, url = long_section
    assert shown < total
    own = httpx.get(site.root + url, timeout=60).text  # the section on a page of its own, paged
    first = re.search(rf"rows 1–(\d+) of {total}", text_of(own))
    assert first and shown <= int(first.group(1)) <= SECTION_PAGE_ROWS
    following = re.search(r'<a class="tgstore-next" href="([^"]+)">next rows', own)
    assert bool(following) == (int(first.group(1)) < total)
    if following:
        second = httpx.get(site.root + unescape(following.group(1)), timeout=60).text
        assert f"rows {int(first.group(1)) + 1}–" in text_of(second)
    fragment = httpx.get(site.root + url + "&fragment=1", timeout=60).text  # what a closed section loads
    assert fragment.startswith('<table class="tgstore-diff">') and "all of it, page by page" in fragment


def test_passes_c_and_llvm_share_are_one_row_naming_both(site: Server) -> None:
    shared = httpx.get(f"{site.root}/viz/passes_at_commit.json", params={
        "commit": "0.14.0", "case_name": "matmul", "kernel": "0", "_shape": "objects"}, timeout=60).json()["rows"]
    both = [r for r in shared if r["renderers"] == "C,LLVM"]
    assert both and {r["renderers"] for r in shared} <= {"C", "LLVM", "C,LLVM", None}
    per_renderer = rows(site.path, "SELECT renderer, graph_hash FROM v_passes WHERE \"case\" = 'matmul' AND "
                                   "version = '0.14.0' AND scope = 'lower' AND position = 0 AND pass_position = ?",
                        both[0]["pass_position"])
    assert sorted(per_renderer) == [("C", both[0]["graph_hash"]), ("LLVM", both[0]["graph_hash"])]
    lowered = rows(site.path, "SELECT count(*) FROM v_passes WHERE \"case\" = 'matmul' AND version = '0.14.0' AND "
                              "scope = 'lower' AND position = 0")[0][0]
    assert len([r for r in shared if r["scope"] == "lower"]) == lowered - len(both)
    page = site.get("/viz/passes_at_commit", commit="0.14.0", case_name="matmul", kernel="0").text
    assert re.search(r'href="/-/rewrites\?run=\d+&amp;case=matmul&amp;kernel=0&amp;renderer=C&amp;pass=\d+"', page)


@needs_chromium
def test_a_node_collapses_its_exclusive_sources_and_expands_again(site: Server, tmp_path: Path) -> None:
    run, position, graph = matmul_pass(site.path, "expander")
    url = f"{site.root}/-/graph/{graph}?changes=0"
    page = site.get(f"/-/graph/{graph}", changes="0").text
    sources = {m.group(1): (m.group(2) or "").split() for m in re.finditer(
        r'<g class="node[^"]*" id="n(\d+)" data-op="\w+"(?: data-src="([\d ]*)")?', page)}
    users: dict[str, list[str]] = {}
    for node, srcs in sources.items():
        for s in srcs:
            users.setdefault(s, []).append(node)

    def exclusive(node: str) -> set[str]:  # its source tree's nodes used only inside that tree
        tree, queue = set(), list(sources[node])
        while queue:
            if (s := queue.pop()) not in tree:
                tree.add(s)
                queue += sources[s]
        inside: set[str] = set()
        for s in sorted(tree, key=int, reverse=True):
            if all(u == node or u in inside for u in users.get(s, [])):
                inside.add(s)
        return inside

    node = max((n for n in sources if len(exclusive(n)) < len(sources) - 1), key=lambda n: len(exclusive(n)))
    hidden = exclusive(node)
    assert 2 <= len(hidden) < len(sources) - 1
    collapsed = dom(f"{url}&collapse=n{node}", tmp_path / "profile")
    away = set(re.findall(r'<g class="node[^"]*collapsed-away[^"]*" id="n(\d+)"', collapsed))
    assert away == hidden
    assert re.search(rf'<g class="node[^"]*collapsed[^"]*" id="n{node}"[^>]*data-hides="{len(hidden)}"', collapsed)
    assert f">+{len(hidden)}</text>" in collapsed  # the toggle says how many it hides
    assert len(re.findall(r'<g class="toggle"', collapsed)) == len([n for n in sources if sources[n]])
    expanded = dom(f"{url}&collapse=n{node},n{node}", tmp_path / "profile")  # clicked twice: all shown again
    assert "collapsed-away" not in expanded and 'data-hidden="0"' in expanded


def test_a_long_stored_text_is_shown_a_page_at_a_time(site: Server) -> None:
    ((digest, whole),) = rows(site.path, "SELECT hash, text FROM blobs ORDER BY length(text) - "
                                         "length(replace(text, char(10), '')) DESC LIMIT 1")  # the most lines
    total = len(whole.splitlines())
    assert total > BLOB_LINES, total  # the longest DEBUG output or source runs to more than a page
    shown, url, pages = [], f"/-/blob/{digest}", 0
    while url:
        page = httpx.get(site.root + url, timeout=60).text
        pages += 1
        assert re.search(rf"lines {len(shown) + 1}–\d+ of {total}", text_of(page))
        body = re.search(r'<pre class="tgstore-code">(.*?)</pre>', page, re.S).group(1)
        shown += text_of(body).splitlines()
        following = re.search(r'<a class="tgstore-next" href="([^"]+)">', page)
        url = unescape(following.group(1)) if following else None
    assert shown == whole.splitlines() and pages >= -(-total // BLOB_LINES)  # every line once, in order


def test_datasette_table_pages_carry_tgstore_navigation(site: Server) -> None:
    for path in ("/viz/v_passes", "/viz/v_kernels", "/viz"):
        page = site.get(path).text
        nav = re.search(r'<p class="crumbs tgstore-nav tgstore-datasette-nav">(.*?)</p>', page, re.S)
        assert nav, path
        assert 'href="/-/diff"' in nav.group(1) and 'href="/-/chart"' in nav.group(1)
    passes = site.get("/viz/v_passes", case="matmul", pass_name="expander").text
    assert re.search(r'href="/-/rewrites\?run=\d+&amp;case=matmul&amp;kernel=0&amp;renderer=C&amp;pass=\d+"', passes)
    kernels = site.get("/viz/v_kernels", case="transcendental").text
    assert "tgstore-more" in kernels and 'href="/-/blob/' in kernels  # long pyrender cut, linked whole
