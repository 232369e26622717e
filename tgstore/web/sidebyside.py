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
    out, pos = [], 0
    for token in TAG.split(html):
        if token.startswith("<") or not token:
            out.append(token)
            continue
        text = unescape(token)
        start = 0
        for k in range(1, len(text) + 1):
            if k == len(text) or _inside(pos + k, ranges) != _inside(pos + start, ranges):
                piece = str(escape(text[start:k]))
                out.append(f'<mark class="tgstore-intra">{piece}</mark>' if _inside(pos + start, ranges) else piece)
                start = k
        pos += len(text)
    return "".join(out)


def _inside(offset: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= offset < b for a, b in ranges)


def table(unified: list[str], language: str | None) -> Markup:
    """The diff as an HTML table: line numbers and highlighted code on both sides."""
    html = ['<table class="tgstore-diff"><colgroup><col class="no"><col><col class="no"><col></colgroup>']
    table_rows = rows(unified)
    left = iter(highlighted_lines([r.left for r in table_rows if r.kind != "hunk" and r.left is not None], language))
    right = iter(highlighted_lines([r.right for r in table_rows if r.kind != "hunk" and r.right is not None],
                                   language))
    for row in table_rows:
        if row.kind == "hunk":
            html.append(f'<tr class="hunk"><td colspan="4">{escape(row.left or "")}</td></tr>')
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
    html.append("</table>")
    return Markup("".join(html))
