"""Issue 28 walked in a real headless Chromium, keys pressed and links clicked over the DevTools protocol (tests/
browser.py), on a real `tgstore serve` of three tinygrad releases' core cases plus a Svod log: from `/` to matmul's
kernel 0 workbench and through every pass by keyboard, the pass-by-pass diff of two releases, the Svod parity page
of a case with its verdicts, X86 machine code as assembly; and the diff summary ranked, with spelling ignored.
Screenshots are kept in $TGSTORE_SCREENSHOT_DIR when it is set (docs/screenshots/ holds them)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser import Browser
from cli import rows, tgstore
from web_server import Server, chromium_available, start_server, stop_server

from tgstore.compare.rewrite_steps import case_steps
from tgstore.db import open_engine
from tgstore.pipeline import ExtractionPlan, extract_and_ingest

needs_chromium = pytest.mark.skipif(not chromium_available(), reason="chromium is not installed")
pytestmark = pytest.mark.slow  # three releases extracted (the session's releases_db)
PAGE_LIMIT = 1_000_000
SVOD_CASE = "sum_rows"
MATMUL = '''
from tinygrad import Tensor


def case_matmul():
    """(16,16) @ (16,16) in float32, as the core suite's matmul."""
    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)
'''


@pytest.fixture(scope="module")
def bench_db(releases_db: Path, tmp_path_factory, tinygrad_release) -> Path:
    """The three releases' database with the worked example's Svod log ingested for sum_rows."""
    from svod_fixtures import worked_example_log

    where = tmp_path_factory.mktemp("workbench")
    db = where / "bench.db"
    with sqlite3.connect(f"file:{releases_db}?mode=ro", uri=True) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    log = where / "svod.log"
    log.write_text(worked_example_log())
    proc = tgstore("ingest-svod", log, "--case", SVOD_CASE, "--db", db)
    assert proc.returncode == 0, proc.stderr
    # matmul again at 0.14.0 with its rewrite steps recorded (releases_db records none): the newest run of matmul
    (where / "matmul.py").write_text(MATMUL)
    engine = open_engine(db)
    report = extract_and_ingest(engine, tinygrad_release("0.14.0"), ExtractionPlan(
        case_files=[where / "matmul.py"], renderers=["C", "LLVM", "X86"], stages="C,LLVM", rewrites=20))
    engine.dispose()
    assert report.status == "ok", report
    return db


def newest_run(db: Path, case: str, version: str) -> int:
    """The run the workbench shows for `case` at `version`: the newest holding it."""
    return rows(db, "SELECT max(run_id) FROM v_run_cases WHERE \"case\" = ? AND version = ?", case, version)[0][0]


@pytest.fixture(scope="module")
def site(bench_db: Path, tmp_path_factory) -> Iterator[Server]:
    running = start_server(bench_db, tmp_path_factory.mktemp("workbench-web") / "serve.log")
    yield running
    stop_server(running)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    opened = Browser(tmp_path / "profile")
    yield opened
    opened.close()


def page_bytes(b: Browser) -> int:
    return b.js("new TextEncoder().encode(document.documentElement.outerHTML).length")


def pass_rows(b: Browser) -> list[list[str]]:
    """The workbench's pass list as shown: [position, name, node count] per row."""
    return b.js("Array.from(document.querySelectorAll('.tgstore-pass-list tbody tr')).map(r => "
                "Array.from(r.cells).slice(0, 3).map(c => c.textContent.trim()))")


def query_arg(b: Browser, name: str) -> str | None:
    return b.js(f"new URLSearchParams(location.search).get({name!r})")


@needs_chromium
def test_matmul_kernel_0_from_home_in_one_click_then_every_pass_and_rewrite_by_keyboard(
        site: Server, browser: Browser, tmp_path: Path) -> None:
    run = newest_run(site.path, "matmul", "0.14.0")
    expected = rows(site.path, "SELECT pass_position, pass_name, node_count FROM v_passes WHERE \"case\" = 'matmul' "
                               "AND run_id = ? AND renderer = 'C' AND scope = 'lower' AND position = 0 "
                               "ORDER BY pass_position", run)
    (name,), = rows(site.path, "SELECT kernel_name FROM v_kernels WHERE \"case\" = 'matmul' AND run_id = ? "
                               "AND position = 0", run)
    assert len(expected) > 20
    browser.open(site.root + "/")
    browser.click('table.tgstore-cases a.tgstore-case[href*="case=matmul&"]')  # click 1
    assert browser.js("document.title") == f"matmul · kernel 0 {name} · C · 0.14.0 · tgstore"
    assert pass_rows(browser) == [[str(p), n, "" if c is None else str(c)] for p, n, c in expected]
    assert int(query_arg(browser, "pass") or expected[0][0]) == expected[0][0]
    # the list's fold has a sign: the passes it hides below, by number, at its visible bottom (issue 46)
    hidden = browser.js("(() => { const l = document.querySelector('.tgstore-pass-list'), m = l.querySelector("
                        "'.tgstore-pass-more'), b = l.getBoundingClientRect().bottom - m.offsetHeight + 1; return "
                        "Array.from(l.querySelectorAll('tbody tr')).filter(r => r.getBoundingClientRect().bottom > b)"
                        ".map(r => r.cells[0].textContent.trim()); })()")
    sign = browser.js("document.querySelector('.tgstore-pass-more').textContent")
    marker_bottom = browser.js("(() => { const l = document.querySelector('.tgstore-pass-list'); return Math.round("
                               "l.getBoundingClientRect().bottom - l.querySelector('.tgstore-pass-more')"
                               ".getBoundingClientRect().bottom); })()")
    assert hidden and hidden[-1] == str(expected[-1][0]), (hidden, sign)  # 1000 px: the list is longer than that
    assert sign == f"▼ {len(hidden)} more below (#{hidden[0]}–#{hidden[-1]})", sign
    assert abs(marker_bottom) <= 2, marker_bottom  # at the list's visible bottom, not after its last row
    sizes = [page_bytes(browser)]
    for position, pass_name, _count in expected[1:]:  # every pass, by the right arrow alone
        browser.press("ArrowRight")
        assert query_arg(browser, "pass") == str(position)
        selected = browser.js("document.querySelector('.tgstore-pass-list tr.selected').cells[1].textContent.trim()")
        here = browser.js("document.querySelector('.tgstore-pass-stepper .tgstore-here strong').textContent")
        assert selected == pass_name and here == f"#{position} {pass_name}"
        sizes.append(page_bytes(browser))
    assert browser.js("document.querySelector('.tgstore-pass-stepper a[rel=next]')") is None  # the last pass
    browser.press("ArrowLeft")
    assert query_arg(browser, "pass") == str(expected[-2][0])
    assert max(sizes) < PAGE_LIMIT, max(sizes)

    # rewrite steps: the first pass with two or more recorded steps, stepped with the down and up arrows
    engine = open_engine(site.path, writer=False)
    with engine.connect() as conn:
        recorded = [p for position, _n, _c in expected for k in case_steps(
            conn, run, "matmul", kernel=0, renderer="C", pass_position=position, trace_of=position) for p in k.passes]
    engine.dispose()
    stepped = next(p for p in recorded if len(p.steps) >= 2)
    browser.click(f'.tgstore-pass-list a.tgstore-pass[href*="pass={stepped.position}&"], '
                  f'.tgstore-pass-list a.tgstore-pass[href$="pass={stepped.position}"]')
    assert query_arg(browser, "pass") == str(stepped.position)
    for key, step in (("ArrowDown", 0), ("ArrowDown", 1), ("ArrowUp", 0)):
        browser.press(key)
        assert query_arg(browser, "step") == str(step)
        assert browser.js("document.querySelector('.tgstore-workbench').dataset.tab") == "steps"
        rule = browser.js("document.querySelector('.tgstore-step-stepper .tgstore-here code').textContent")
        assert rule == f"{stepped.steps[step].file}:{stepped.steps[step].line}"
    assert browser.js("document.querySelectorAll('#steps .tgstore-subgraph svg').length") == 2  # before, after
    browser.open(site.root + f"/-/kernel?case=matmul&kernel=0&pass={expected[12][0]}")
    browser.screenshot(tmp_path / "workbench.png")


@needs_chromium
def test_pass_by_pass_diff_of_two_releases(site: Server, browser: Browser, tmp_path: Path) -> None:
    def passes(version: str) -> list[tuple]:
        return rows(site.path, "SELECT pass_position, pass_name, node_count, graph_hash FROM v_passes WHERE "
                               "\"case\" = 'matmul' AND run_id = ? AND renderer = 'C' AND scope = 'lower' AND "
                               "position = 0 ORDER BY pass_position", newest_run(site.path, "matmul", version))

    old, new = passes("0.12.0"), passes("0.14.0")
    assert old and new
    browser.open(site.root + "/")
    browser.click('table.tgstore-cases a.tgstore-case[href*="case=matmul&"]')
    browser.click("a.tgstore-passdiff-link")  # the neighbour commit in history: 0.12.0
    assert query_arg(browser, "a") == "0.12.0" and query_arg(browser, "b") == "0.14.0"
    # unchanged and spelling-only passes are folded away by default, said so, with a toggle that lists every pass
    folded = browser.js("Array.from(document.querySelectorAll('table.tgstore-passdiff tbody tr')).map(r => "
                        "r.className)")
    assert not any("kind-same" in c or "kind-spelling" in c for c in folded)
    assert "hidden" in browser.js("document.querySelector('.tgstore-quiet-toggle').textContent")
    browser.click("a.tgstore-show-quiet")
    assert query_arg(browser, "all") == "1"
    shown = browser.js("Array.from(document.querySelectorAll('table.tgstore-passdiff tbody tr')).map(r => ["
                       "r.className, Array.from(r.cells).map(c => c.textContent.trim())])")
    # each side's passes in order, with their node counts; a row pairs passes of one name
    side_a, side_b = [], []
    for _cls, cells in shown:
        if cells[0] != "—":
            side_a.append((int(cells[0]), cells[1], int(cells[2])))
            cells = cells[3:]
        else:
            cells = cells[1:]
        if cells[0] != "—":
            side_b.append((int(cells[0]), cells[1], int(cells[2].split()[0])))
    assert side_a == [(p, n, c) for p, n, c, _h in old] and side_b == [(p, n, c) for p, n, c, _h in new]
    paired = [cells for _cls, cells in shown if cells[0] != "—" and len(cells) == 7]
    assert paired and all(cells[1] == cells[4] for cells in paired)  # a row pairs passes of one name
    # the first difference is the first row both releases ran whose graphs differ in one spelling across eras (the
    # page's default): never a pass one side lacks
    from tgstore.spelling.eras import spelling_hash

    hashes_a, hashes_b = {p: h for p, _n, _c, h in old}, {p: h for p, _n, _c, h in new}
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        def spelled(digest: str) -> str:
            return spelling_hash(json.loads(conn.execute("SELECT nodes FROM graphs WHERE hash = ?", (digest,))
                                            .fetchone()[0]))
        first = next((cls for cls, cells in shown if len(cells) == 7
                      and spelled(hashes_a[int(cells[0])]) != spelled(hashes_b[int(cells[3])])), None)
    marked = [cls for cls, _cells in shown if "first-difference" in cls]
    assert first is not None and marked == [first] and "kind-changed" in first
    assert "First pass whose output differs" in browser.js("document.querySelector('.tgstore-first-difference')"
                                                            ".textContent")
    browser.screenshot(tmp_path / "passdiff.png")
    # a changed row opens that pass's graphs at both releases, side by side
    browser.click("a.tgstore-pass-graph-diff")
    assert re.search(r"/-/graph/[0-9a-f]{64}\?vs=[0-9a-f]{64}", browser.url)
    assert int(browser.js("document.querySelector('.tgstore-changed-count').textContent")) > 0
    assert browser.js("document.querySelectorAll('.tgstore-sides svg').length") == 2


@needs_chromium
def test_svod_parity_from_home_with_coloured_verdicts(site: Server, browser: Browser, tmp_path: Path) -> None:
    sql = (Path(__file__).resolve().parent.parent / "queries" / "parity_matrix.sql").read_text()
    with sqlite3.connect(f"file:{site.path}?mode=ro", uri=True) as conn:
        found = conn.execute(sql, {"case_name": SVOD_CASE, "svod_run": "", "commit": ""})
        names = [d[0] for d in found.description]
        matrix = [dict(zip(names, r, strict=True)) for r in found.fetchall()]
    assert matrix and {r["verdict"] for r in matrix} & {"equal", "differs", "equal (node count)",
                                                         "differs (node count)"}
    browser.open(site.root + "/")
    browser.click(f'a.tgstore-parity-link[href*="case={SVOD_CASE}"]')  # click 1
    assert browser.js("document.title").startswith(f"Svod parity: {SVOD_CASE}")
    cells = browser.js("Array.from(document.querySelectorAll('table.tgstore-parity td.verdict')).map(c => "
                       "[c.dataset.kernel, c.dataset.commit, c.className, c.childNodes[0].textContent.trim(), "
                       "c.dataset.stage])")
    shown = {(int(kernel), commit, stage): (cls, verdict) for kernel, commit, cls, verdict, stage in cells}
    for r in matrix:
        cls, verdict = shown[(r["kernel_index"], r["version"] or r["sha"][:12], r["stage"])]
        assert verdict == r["verdict"]
        colour = {"equal": "verdict-equal", "differs": "verdict-differs", "not decided": "verdict-undecided"}.get(
            verdict.split(" (")[0], "verdict-missing")
        assert colour in cls
    assert len([c for c in cells if c[3] != "not in this log"]) == len(matrix)
    browser.screenshot(tmp_path / "parity.png")
    # each cell opens that stage as text, Svod's tree compared with tinygrad's graph in parity's spelling: equal
    # marks no node
    links = browser.js("Array.from(document.querySelectorAll('table.tgstore-parity td.verdict a')).map(a => "
                       "[a.textContent, a.href])")
    assert links
    for verdict, href in links:
        marked = re.search(r'tgstore-differ-count">(\d+)<', httpx.get(href, timeout=60).text)
        if marked:  # a stage Svod printed as a tree (a count alone has no nodes to mark)
            assert (int(marked.group(1)) == 0) == verdict.startswith("equal"), (verdict, href)
    # Svod's tables link a Svod run number to the Svod run, never to tinygrad's run of the same number
    stages = httpx.get(f"{site.url}/v_svod_stages", timeout=60).text
    runs = re.findall(r'<td class="col-run_id[^"]*"[^>]*><a [^>]*href="([^"]+)"', stages)
    assert runs and all(href.startswith("/-/parity?case=sum_rows&amp;svod_run=") for href in runs)
    assert "v_run_cases?run_id" not in stages


@needs_chromium
def test_x86_machine_code_is_shown_as_assembly(site: Server, browser: Browser, tmp_path: Path) -> None:
    (hex_code,), = rows(site.path, "SELECT source FROM v_sources WHERE \"case\" = 'matmul' AND run_id = ? "
                                   "AND position = 0 AND renderer = 'X86'", newest_run(site.path, "matmul", "0.14.0"))
    assert re.fullmatch(r"[0-9a-f]+", hex_code)  # what tinygrad's X86 renderer gives: machine code in hex
    browser.open(site.root + "/-/kernel?case=matmul&kernel=0&commit=0.14.0")
    browser.click('.tgstore-renderer-tabs a[href*="renderer=X86"]')
    browser.js("document.querySelector('a[data-tab=source]').click()")
    assert browser.js("document.querySelector('.tgstore-workbench').dataset.tab") == "source"
    text = browser.js("document.querySelector('#source pre').textContent")
    lines = text.splitlines()
    parsed = [re.fullmatch(r"\.([0-9a-f]{4,}):\s+(\w+)(?: (.*?))?\s*; ((?:[0-9a-f]{2} ?)+)", line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m][:3]
    assert "".join(m.group(4).replace(" ", "") for m in parsed) == hex_code  # every byte, once, in order
    offsets = [int(m.group(1), 16) for m in parsed]
    assert offsets == sorted(offsets) and offsets[0] == 0
    assert parsed[-1].group(2) == "ret"
    assert browser.js("getComputedStyle(document.querySelector('#source pre')).overflowX") == "auto"  # scrolls
    browser.screenshot(tmp_path / "x86.png")


def test_diff_summary_ranks_cases_and_can_ignore_spelling(site: Server) -> None:
    every = httpx.get(site.root + "/-/diff", params={"a": "0.12.0", "b": "0.14.0", "spelling": "raw"},
                      timeout=120).text
    spelled = httpx.get(site.root + "/-/diff", params={"a": "0.12.0", "b": "0.14.0"}, timeout=120).text  # default

    def listed(page: str) -> list[tuple[str, int]]:
        return [(case, int(size)) for case, size in re.findall(
            r'<tr><td><a href="/-/diff\?a=0.12.0&amp;b=0.14.0&amp;case=(\w+)(?:&amp;spelling=raw)?">\w+</a></td>'
            r"<td>(\d+)</td>", page)]

    all_cases, kept = listed(every), listed(spelled)
    assert all_cases and [s for _c, s in all_cases] == sorted((s for _c, s in all_cases), reverse=True)
    assert [s for _c, s in kept] == sorted((s for _c, s in kept), reverse=True)
    assert {c for c, _s in kept} <= {c for c, _s in all_cases}
    hidden = int(re.search(r"(\d+) cases? whose every difference is one of spelling", spelled).group(1))
    assert hidden == len(all_cases) - len(kept)
    assert len(every) < PAGE_LIMIT and len(spelled) < PAGE_LIMIT
