"""Comparing like a compiler engineer (issue 40), walked in a real headless Chromium with real key presses and clicks
(tests/browser.py) on a real `tgstore serve` of tinygrad 0.13.0 and 0.14.0 (tests/two_releases_db.py):

1. spelling-blind by default with a visible switch: softmax pass by pass names a first difference that is a pass both
   releases ran and whose outputs differ in one spelling across eras; the release summary with spelling ignored
   includes matmul (its generated source changed);
2. text diffs: a rewrite step's unified diff, a pass's output diff, both releases' graphs side by side; the step
   view fits 1280 px;
3. Svod parity as text: the differing nodes in a table whose counts add up, the renderer in the title, the Svod
   log line of the stage;
4. speed reachable from `/`: regressions, the two-commit slowdowns page, time charts by kernel name, total apart;
5. no link to a kernel that does not exist.
Screenshots are kept in $TGSTORE_SCREENSHOT_DIR when it is set (docs/screenshots/ holds them)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser import Browser
from web_server import Server, chromium_available, start_server, stop_server

from tgstore.compare.graphs import structural_diff
from tgstore.compare.kernel_match import case_kernels, match_kernel
from tgstore.compare.rewrite_steps import case_steps
from tgstore.compare.summary import summarize
from tgstore.compare.uop_text import uop_diff
from tgstore.spelling.eras import normalized, spelling_hash

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not chromium_available(), reason="chromium is not installed")]
A, B = "0.13.0", "0.14.0"


@pytest.fixture(scope="module")
def site(two_releases_db: Path, tmp_path_factory) -> Iterator[Server]:
    running = start_server(two_releases_db, tmp_path_factory.mktemp("compare-web") / "serve.log")
    yield running
    stop_server(running)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    opened = Browser(tmp_path / "profile", width=1280, height=900)
    yield opened
    opened.close()


def db(site: Server) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{site.path}?mode=ro", uri=True)


def graph_nodes(site: Server, digest: str) -> list:
    import json
    with db(site) as conn:
        return json.loads(conn.execute("SELECT nodes FROM graphs WHERE hash = ?", (digest,)).fetchone()[0])


def newest_run(site: Server, case: str, version: str) -> int:
    with db(site) as conn:
        return conn.execute('SELECT max(run_id) FROM v_run_cases WHERE "case" = ? AND version = ?',
                            (case, version)).fetchone()[0]


def passdiff_rows(b: Browser) -> list[dict]:
    return b.js("Array.from(document.querySelectorAll('table.tgstore-passdiff tbody tr')).map(r => ({cls: r.className,"
                " cells: Array.from(r.cells).map(c => c.textContent.trim())}))")


def test_softmax_pass_by_pass_names_a_real_first_difference(site: Server, browser: Browser, tmp_path: Path) -> None:
    browser.open(site.root + "/")
    browser.click('table.tgstore-cases a.tgstore-case[href*="case=softmax&"]')
    assert browser.js("document.title").startswith(f"softmax · kernel 0 r_4_16 · C · {B}")
    browser.click("a.tgstore-passdiff-link")
    assert browser.js("new URLSearchParams(location.search).get('a')") == A
    # the switch is visible and on: spelling ignored
    assert browser.js("document.querySelector('.tgstore-spelling-switch input[value=ignore]').checked") is True
    first = browser.js("document.querySelector('.tgstore-first-difference code').textContent")
    rows = passdiff_rows(browser)
    marked = [r for r in rows if "first-difference" in r["cls"]]
    assert len(marked) == 1 and "kind-changed" in marked[0]["cls"]  # present at both, not an added pass
    added = browser.js("Array.from(document.querySelectorAll('.tgstore-added-passes code')).map(c => c.textContent)")
    assert "multi_pm" in added and first != "multi_pm" and first not in added
    # the outputs there differ in one spelling across eras; every shared pass before it is the same or spelling
    data = httpx.get(site.root + "/-/passdiff.json", params={"case": "softmax", "a": A, "b": B}, timeout=60).json()
    ours = data["first_difference"]
    assert ours["a"]["name"] == first == ours["b"]["name"]
    older, newer = graph_nodes(site, ours["a"]["graph_hash"]), graph_nodes(site, ours["b"]["graph_hash"])
    assert spelling_hash(older) != spelling_hash(newer)
    before = data["rows"][:next(i for i, r in enumerate(data["rows"]) if r == ours)]
    shared = [r for r in before if r["a"] and r["b"]]
    assert shared and all(r["kind"] in ("same", "spelling") for r in shared)
    for r in shared:  # what the page calls spelling is equal in one spelling, and differs as stored
        ga, gb = graph_nodes(site, r["a"]["graph_hash"]), graph_nodes(site, r["b"]["graph_hash"])
        assert spelling_hash(ga) == spelling_hash(gb) and (ga != gb) == (r["kind"] == "spelling")
    assert any(r["kind"] == "spelling" for r in shared)
    browser.screenshot(tmp_path / "passdiff-spelling.png")
    # the switch: compared as stored, the first shared pass is the first difference
    browser.click("a.tgstore-spelling-toggle")
    assert browser.js("new URLSearchParams(location.search).get('spelling')") == "raw"
    raw_first = browser.js("document.querySelector('.tgstore-first-difference code').textContent")
    assert raw_first == shared[0]["a"]["name"] != first
    # real keys: a new pair typed into the form, Enter
    browser.focus("form.tgstore-form input[name=a]")
    browser.type(B)
    browser.press("Enter")
    assert browser.js("new URLSearchParams(location.search).get('a')") == B
    assert "Every pass both commits ran gave the same output" in browser.js(
        "document.querySelector('.tgstore-first-difference').textContent")


def test_the_release_summary_ignoring_spelling_includes_matmul(site: Server, browser: Browser, tmp_path: Path
                                                               ) -> None:
    browser.open(site.root + "/")
    browser.focus("form.tgstore-form input[name=a]")
    browser.type(A)
    browser.focus("form.tgstore-form input[name=b]")
    browser.type(B)
    browser.press("Enter")
    assert browser.js("location.pathname") == "/-/diff"
    assert "Spelling ignored" in browser.js("document.querySelector('.tgstore-spelling-note').textContent")
    listed = browser.js("Array.from(document.querySelectorAll('table.tgstore-diff-summary tbody tr')).map(r => "
                        "Array.from(r.cells).map(c => c.textContent.trim()))")
    matmul = next(r for r in listed if r[0] == "matmul")
    assert "C" in matmul[4] or "LLVM" in matmul[4]  # listed for its generated source, whose change is real
    with db(site) as conn:
        expected = summarize(conn, A, B)
    assert [r[0] for r in listed] == [c.case for c in expected.cases]
    got = next(c for c in expected.cases if c.case == "matmul")
    assert got.sources and got.ast == 0 and got.spelling_only == 1  # its AST differs in spelling only
    browser.screenshot(tmp_path / "diff-summary.png")


def test_a_rewrite_step_as_a_unified_diff_fits_1280_px(site: Server, browser: Browser, tmp_path: Path) -> None:
    run = newest_run(site, "matmul", B)
    with db(site) as conn:
        passes = [p for k in case_steps(conn, run, "matmul", kernel=0, renderer="C") for p in k.passes]
        stepped = next(p for p in passes if p.total and p.total >= 2)
        steps = case_steps(conn, run, "matmul", kernel=0, renderer="C", pass_position=stepped.position,
                           trace_of=stepped.position)[0].passes[0].steps
    browser.open(site.root + f"/-/kernel?case=matmul&kernel=0&commit={B}&pass={stepped.position}")
    browser.press("ArrowDown")
    browser.press("ArrowDown")
    assert browser.js("new URLSearchParams(location.search).get('step')") == "1"
    shown = browser.js("document.querySelector('.tgstore-step-diff pre').textContent").rstrip("\n").split("\n")
    expected = uop_diff(steps[1].before["graph"], steps[1].after["graph"], "before", "after")
    assert shown == expected and shown[0] == "--- before" and any(line.startswith("+UOp(") for line in shown)
    assert browser.js("document.documentElement.scrollWidth") <= 1280  # the step view fits
    browser.screenshot(tmp_path / "step-diff.png")


def test_a_passs_output_as_text_and_both_graphs_side_by_side(site: Server, browser: Browser, tmp_path: Path
                                                             ) -> None:
    browser.open(site.root + f"/-/passdiff?case=matmul&kernel=0&a={A}&b={B}")
    # a row's id names its place among the aligned passes (unchanged ones are folded away, not renumbered)
    row = browser.js("(() => { const r = Array.from(document.querySelectorAll('table.tgstore-passdiff tbody tr'))"
                     ".find(r => r.classList.contains('kind-changed') && !r.classList.contains('first-difference'));"
                     " return r ? Number(r.id.replace('pass-row-', '')) : -1; })()")
    assert row >= 0
    browser.click(f"#pass-row-{row} a.tgstore-row-diff")
    assert browser.js("new URLSearchParams(location.search).get('row')") == str(row)
    data = httpx.get(site.root + "/-/passdiff.json", params={"case": "matmul", "kernel": 0, "a": A, "b": B,
                                                               "row": row}, timeout=60).json()
    r = data["rows"][row]
    lines = structural_diff(normalized(graph_nodes(site, r["a"]["graph_hash"])),
                            normalized(graph_nodes(site, r["b"]["graph_hash"])),
                            f"{A} #{r['a']['position']} {r['a']['name']}",
                            f"{B} #{r['b']['position']} {r['b']['name']}")
    assert data["diff"] == "\n".join(lines) and len(lines) > 3
    assert browser.js("document.querySelectorAll('#pass-diff table.tgstore-diff td.del, #pass-diff table.tgstore-diff "
                      "td.add').length") > 0
    browser.click("#pass-diff a.tgstore-pass-graph-diff")
    assert browser.js("document.querySelectorAll('.tgstore-sides .tgstore-graph-box svg').length") == 2
    title = browser.js("document.title")
    assert r["b"]["name"] in title and A in title and B in title
    assert browser.js("document.documentElement.scrollWidth") <= 1280
    browser.screenshot(tmp_path / "graphs-side-by-side.png")


def test_svod_parity_as_text_with_counts_that_add_up(site: Server, browser: Browser, tmp_path: Path) -> None:
    browser.open(site.root + "/")
    browser.click('a.tgstore-parity-link[href*="case=sum_rows"]')
    cells = browser.js("Array.from(document.querySelectorAll('a.tgstore-parity-cell')).map(a => [a.textContent, "
                       "a.href])")
    assert cells
    for verdict, href in cells:  # every cell's page names the renderer it compared with, and adds up
        data = httpx.get(href.replace("/-/parity?", "/-/parity.json?"), timeout=60).json()
        assert f"({data['renderer']})" in data["title"] and data["verdict"] == verdict
        if data["counts"]:
            c = data["counts"]
            assert c["differ"] == c["added"] + c["changed"] + c["removed"] == len(data["nodes"])
            assert (c["differ"] == 0) == verdict.startswith("equal")
            # a node that "differs" names what differs, and the stage's tree diff (as `tgstore parity`) is there
            assert all(n["what"] for n in data["nodes"] if n["kind"] == "changed")
            assert bool(data["tree_diff"]) == (c["differ"] > 0)
    # the page and its twin hold the schedule's stages and the canonical documents' verdicts `tgstore parity` reports
    grid = httpx.get(site.root + "/-/parity.json", params={"case": "sum_rows"}, timeout=60).json()
    other = [o for run in grid["parity"]["runs"] for o in run["other_rows"]]
    assert any(o["scope"] == "schedule" for o in other) and any(o["basis"] == "canonical" for o in other)
    assert browser.js("document.querySelectorAll('table.tgstore-parity-other tbody tr').length") == len(other)
    differing = next((h for v, h in cells if v.startswith("differs")), cells[0][1])
    browser.open(differing)
    rows = browser.js("document.querySelectorAll('table.tgstore-parity-nodes tbody tr').length")
    shown = int(browser.js("document.querySelector('.tgstore-differ-count').textContent"))
    assert rows == shown
    assert "(LLVM)" in browser.js("document.title")  # the worked example is Svod's llvm test
    browser.screenshot(tmp_path / "parity-cell.png")
    link = browser.js("document.querySelector('a.tgstore-svod-log-line').textContent")
    line_no = int(link.rsplit(":", 1)[1])
    browser.click("a.tgstore-svod-log-line")
    marked = browser.js("document.querySelector('span.tgstore-marked-line').id")
    assert marked == f"line-{line_no}"
    with db(site) as conn:
        text = conn.execute("SELECT b.text FROM svod_files f JOIN blobs b ON b.id = f.blob_id LIMIT 1").fetchone()[0]
    assert browser.js("document.querySelector('span.tgstore-marked-line').textContent") == \
        text.splitlines()[line_no - 1]


def test_speed_is_reachable_from_home(site: Server, browser: Browser, tmp_path: Path) -> None:
    browser.open(site.root + "/")
    assert browser.js("document.querySelector('nav a.tgstore-nav-regressions, .tgstore-nav a.tgstore-nav-regressions')"
                      " !== null")
    assert browser.js("document.querySelector('a.tgstore-regressions-link') !== null")
    browser.click("a.tgstore-slowdowns-link")
    assert browser.js("location.pathname") == "/-/slowdowns"
    rows = browser.js("Array.from(document.querySelectorAll('table.tgstore-slowdowns tbody tr')).map(r => "
                      "Array.from(r.cells).map(c => c.textContent.trim()))")
    assert rows and all(re.fullmatch(r"[\d,]+\.\d{3}", r[3]) and re.fullmatch(r"\d+\.\d{3}×", r[5]) for r in rows)
    assert all(re.match(r"\d+ \S+", r[2]) for r in rows)  # position and kernel name
    assert browser.js("document.querySelector('.tgstore-machine').textContent").strip()
    browser.screenshot(tmp_path / "slowdowns.png")
    browser.click("a.tgstore-kernel-diff")
    assert browser.js("location.pathname") == "/-/diff" and browser.js(
        "new URLSearchParams(location.search).get('case')") == rows[0][0]
    # the time chart: kernels by name in the legend, their total in a chart of its own, the machine named
    browser.open(site.root + "/-/chart?metric=time&case=softmax")
    legend = browser.js("Array.from(document.querySelectorAll('.tgstore-chart:not(.tgstore-total-chart) .legend text'))"
                        ".map(t => t.textContent)")
    with db(site) as conn:
        names = {f"#{p} {n}" for p, n in conn.execute(  # each kernel by its name at the newest commit
            "SELECT position, kernel_name FROM v_kernel_times WHERE \"case\" = 'softmax' AND history_rank = "
            "(SELECT max(history_rank) FROM v_kernel_times WHERE \"case\" = 'softmax')")}
    assert set(legend) == names and len(names) == 3  # by kernel name, the total not among them
    titles = browser.js("Array.from(document.querySelectorAll('.tgstore-chart .title')).map(t => t.textContent)")
    assert any("softmax" in t and " on " in t for t in titles)
    assert browser.js("document.querySelectorAll('.tgstore-total-chart svg').length") == 1
    assert browser.js("document.querySelector('input[name=renderer]')") is None  # no renderer box for times
    assert browser.js("document.querySelector('.tgstore-chart-machine').textContent").startswith("Timed on ")
    browser.screenshot(tmp_path / "time-chart.png")


def test_no_link_leads_to_a_kernel_that_does_not_exist(site: Server, browser: Browser) -> None:
    with db(site) as conn:
        newer, older = newest_run(site, "attention_manual", B), newest_run(site, "attention_manual", A)
        kb, ka = case_kernels(conn, newer, "attention_manual"), case_kernels(conn, older, "attention_manual")
        lonely = [k for k in kb if match_kernel(conn, k, ka, len(ka) == len(kb)) is None]
    assert lonely  # 0.14.0's kernel 0 (E_16_4): no kernel of 0.13.0 has its AST or name
    browser.open(site.root + f"/-/kernel?case=attention_manual&kernel={lonely[0].position}&commit={B}")
    assert browser.js("document.querySelector('a.tgstore-older')") is None
    assert browser.js("document.querySelector('a.tgstore-passdiff-link')") is None
    assert "no such kernel" in browser.js("document.querySelector('.tgstore-commits-nav').textContent")
    for href in browser.js("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"):
        if href.startswith(site.root + "/-/"):
            assert httpx.get(href, timeout=60).status_code == 200, href
