"""The bounded diff page's drawing (tgstore.web.diffpage, tgstore.web.sidebyside) on diffs far bigger than the
suite's: every page stays bounded, whatever the number of kernels, renderers and lines, and what is not drawn is
reachable. The served page itself: tests/test_viz.py."""

from __future__ import annotations

import difflib
import re

from tgstore.web import diffpage
from tgstore.web.sidebyside import MAX_BYTES, MAX_LINE, MAX_ROWS, bounded_table


def c_source(n: int, salt: str) -> list[str]:
    return [f"  float acc{i} = data0[{i}] * {salt}f + data1[(gidx*{i})+{i % 7}];  /* line {i} */" for i in range(n)]


def unified(old: list[str], new: list[str]) -> list[str]:
    return list(difflib.unified_diff(old, new, "a", "b", lineterm=""))


def test_a_long_diff_is_cut_at_its_rows_and_paged_without_gaps() -> None:
    lines = unified(c_source(2000, "1.0"), c_source(2000, "2.0"))
    first = bounded_table(lines, "C")
    assert first.start == 0 and 0 < first.shown <= MAX_ROWS and first.total > 2000 and not first.complete
    assert first.html.count("<tr") == first.shown and len(first.html) <= MAX_BYTES + 4096
    # pages of a section's own page follow on without gaps or overlaps until the last row
    start, seen = 0, 0
    while start < first.total:
        page = bounded_table(lines, "C", start=start, max_rows=diffpage.SECTION_PAGE_ROWS,
                             max_bytes=diffpage.SECTION_PAGE_BYTES)
        assert page.start == start and page.shown > 0
        seen += page.shown
        start += page.shown
    assert seen == first.total


def test_a_very_long_line_is_clipped() -> None:
    lines = unified(["x = " + "1 + " * 5000 + "1"], ["x = " + "2 + " * 5000 + "2"])
    html = str(bounded_table(lines, "C").html)
    text = re.sub(r"<[^>]+>", "", html)
    assert text.count("(19405 more characters)") == 2 and len(text) < 4 * MAX_LINE


def test_a_page_of_many_big_sections_stays_within_its_budget() -> None:
    old, new = c_source(600, "1.0"), c_source(600, "3.0")
    found = [diffpage.Section(k, key, f"kernel {k} {key}", unified(old, new), "C")
             for k in range(20) for key in ("ast", "source-C", "source-LLVM", "stage-C")]
    diffpage.draw(found)
    drawn = [s for s in found if s.table is not None]
    closed = [s for s in found if s.table is None]
    assert drawn and closed and drawn == found[:len(drawn)]  # in order, until the budget is spent
    assert sum(len(s.table.html) for s in drawn) <= diffpage.PAGE_BYTES + MAX_BYTES
    assert all(s.table.shown <= MAX_ROWS for s in drawn)
    base = {"a": "0.12.0", "b": "0.14.0", "case": "softmax"}
    url = diffpage.section_url(base, closed[0], fragment=True)
    assert re.search(rf"section={closed[0].position}%3A{closed[0].key}&fragment=1$", url)
    assert diffpage.one_section(found, closed[0].id, 0).table.shown > 0
    assert diffpage.one_section(found, "99:source-C", 0) is None
