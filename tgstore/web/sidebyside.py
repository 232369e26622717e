"""A unified diff shown side by side: removed lines on the left, added on the right, paired in order within each
change, each line highlighted with the lexer of its language."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import unescape

from markupsafe import Markup, escape

from tgstore.web.highlight import highlighted_lines

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class Row:
    kind: str  # "hunk", "same", "change"
    left_no: int | None = None
    left: str | None = None
    right_no: int | None = None
    right: str | None = None


def rows(unified: Iterable[str]) -> list[Row]:
    out: list[Row] = []
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []
    left_no = right_no = 0

    def flush() -> None:
        for k in range(max(len(removed), len(added))):
            a = removed[k] if k < len(removed) else (None, None)
            b = added[k] if k < len(added) else (None, None)
            out.append(Row("change", a[0], a[1], b[0], b[1]))
        removed.clear()
        added.clear()

    for line in unified:
        if line.startswith(("---", "+++")) and not out and not removed and not added:
            continue
        if m := HUNK.match(line):
            flush()
            left_no, right_no = int(m.group(1)), int(m.group(2))
            out.append(Row("hunk", left=line))
        elif line.startswith("-"):
            removed.append((left_no, line[1:]))
            left_no += 1
        elif line.startswith("+"):
            added.append((right_no, line[1:]))
            right_no += 1
        else:
            flush()
            text = line[1:] if line.startswith(" ") else line
            out.append(Row("same", left_no, text, right_no, text))
            left_no += 1
            right_no += 1
    flush()
    return out


SIMILAR = 0.4  # a changed pair of lines this alike gets its differing characters marked; less alike, the whole line
TAG = re.compile(r"(<[^>]+>)")
WORD = re.compile(r"\w+|\s+|.")


def intra_line(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The character ranges that differ between a removed line and the added line paired with it."""
    a, b = WORD.findall(old), WORD.findall(new)  # by words, so `int` -> `long` marks both words whole
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < SIMILAR:
        return [], []
    starts_a, starts_b = _offsets(a), _offsets(b)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    return ([(starts_a[i1], starts_a[i2]) for _t, i1, i2, _j1, _j2 in ops if i2 > i1],
            [(starts_b[j1], starts_b[j2]) for _t, _i1, _i2, j1, j2 in ops if j2 > j1])


def _offsets(tokens: list[str]) -> list[int]:
    out = [0]
    for t in tokens:
        out.append(out[-1] + len(t))
    return out


def mark_ranges(html: str, ranges: list[tuple[int, int]]) -> str:
    """Highlighted HTML of one line with the text at `ranges` (offsets in the plain text) wrapped in <mark>; marks
    open and close inside each text run, so the highlighter's spans stay well nested."""
    if not ranges:
        return html
    cuts = sorted({offset for r in ranges for offset in r})
    out, pos = [], 0
    for token in TAG.split(html):
        if token.startswith("<") or not token:
            out.append(token)
            continue
        text = unescape(token)
        end = pos + len(text)
        bounds = [pos, *(c for c in cuts if pos < c < end), end]
        for a, b in zip(bounds, bounds[1:], strict=False):
            piece = str(escape(text[a - pos:b - pos]))
            out.append(f'<mark class="tgstore-intra">{piece}</mark>' if _inside(a, ranges) else piece)
        pos = end
    return "".join(out)


def _inside(offset: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= offset < b for a, b in ranges)


# What one diff table shows at most (a page holds several; `/-/diff?...&section=` pages through one of them): rows,
# bytes of HTML, and characters of one line. A 1,550-line LLVM diff was 1.1 MB of HTML on its own.
MAX_ROWS = 100
MAX_BYTES = 120_000
MAX_LINE = 600


@dataclass
class Table:
    html: Markup
    start: int  # the first row shown (0-based, hunk headers counted)
    shown: int  # rows shown
    total: int  # rows in the whole diff

    @property
    def complete(self) -> bool:
        return self.start == 0 and self.shown == self.total


def clipped(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + f" \u2026 ({len(line) - MAX_LINE} more characters)"


def bounded_table(unified: list[str], language: str | None, *, start: int = 0, max_rows: int = MAX_ROWS,
                  max_bytes: int = MAX_BYTES) -> Table:
    """Rows [start, start + max_rows) of the diff as an HTML table, stopping early once the HTML reaches max_bytes:
    line numbers and highlighted code on both sides. Only the rows shown are highlighted."""
    all_rows = rows(unified)
    table_rows = [Row(r.kind, r.left_no, None if r.left is None else clipped(r.left), r.right_no,
                      None if r.right is None else clipped(r.right)) for r in all_rows[start:start + max_rows]]
    html = ['<table class="tgstore-diff"><colgroup><col class="no"><col><col class="no"><col></colgroup>']
    left = iter(highlighted_lines([r.left for r in table_rows if r.kind != "hunk" and r.left is not None], language))
    right = iter(highlighted_lines([r.right for r in table_rows if r.kind != "hunk" and r.right is not None],
                                   language))
    size, shown = 0, 0
    for row in table_rows:
        if size >= max_bytes:
            break
        shown += 1
        if row.kind == "hunk":
            html.append(f'<tr class="hunk"><td colspan="4">{escape(row.left or "")}</td></tr>')
            size += len(html[-1])
            continue
        left_cls = "del" if row.kind == "change" and row.left is not None else ("empty" if row.left is None else "")
        right_cls = "add" if row.kind == "change" and row.right is not None else ("empty" if row.right is None
                                                                                   else "")
        left_html = next(left) if row.left is not None else ""
        right_html = next(right) if row.right is not None else ""
        if row.kind == "change" and row.left is not None and row.right is not None:
            old_ranges, new_ranges = intra_line(row.left, row.right)
            left_html, right_html = mark_ranges(left_html, old_ranges), mark_ranges(right_html, new_ranges)
        html.append(
            f'<tr class="{row.kind}"><td class="no">{row.left_no if row.left is not None else ""}</td>'
            f'<td class="code {left_cls}">{left_html}</td>'
            f'<td class="no">{row.right_no if row.right is not None else ""}</td>'
            f'<td class="code {right_cls}">{right_html}</td>'
            "</tr>")
        size += len(html[-1])
    html.append("</table>")
    return Table(Markup("".join(html)), start, shown, len(all_rows))


def table(unified: list[str], language: str | None) -> Markup:
    """The whole diff as an HTML table (unbounded: for small diffs; pages use bounded_table)."""
    return bounded_table(unified, language, max_rows=len(unified) + 1, max_bytes=1 << 62).html
