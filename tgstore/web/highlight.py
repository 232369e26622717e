"""Syntax highlighting of generated code with Pygments, one lexer per tinygrad renderer."""

from __future__ import annotations

from functools import cache

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name

# renderer (or text kind) -> Pygments lexer alias. Pygments has no OpenCL or Metal lexer: OpenCL C is C, the Metal
# shading language is C++; HIP is CUDA's dialect.
LEXERS = {
    "C": "c", "OPENCL": "c", "CL": "c", "LLVM": "llvm", "PTX": "ptx", "CUDA": "cuda", "HIP": "cuda", "METAL": "cpp",
    "WGSL": "wgsl", "X86": "gas", "X86ASM": "nasm", "pyrender": "python", "python": "python",
}
STYLE = "friendly"


@cache
def lexer(kind: str | None) -> Lexer | None:
    alias = LEXERS.get((kind or "").upper()) or LEXERS.get(kind or "")
    return get_lexer_by_name(alias, stripnl=False, ensurenl=False) if alias else None


@cache
def formatter() -> HtmlFormatter:
    return HtmlFormatter(nowrap=True, style=STYLE)


def highlighted(code: str, kind: str | None) -> Markup:
    """`code` as HTML spans (no wrapper); escaped plain text when `kind` has no lexer."""
    found = lexer(kind)
    if found is None:
        return escape(code)
    html = highlight(code, found, formatter())
    if not code.endswith("\n") and html.endswith("\n"):  # Pygments ends every text with a newline
        html = html[:-1]
    return Markup(html)


def highlighted_lines(lines: list[str], kind: str | None) -> list[Markup]:
    """Each line as HTML spans, lexed as one text (one Pygments pass instead of one per line, and a token spanning
    lines keeps its colour): Pygments' HTML formatter closes every span at the end of its line."""
    if lexer(kind) is None or not lines:
        return [escape(line) for line in lines]
    html = highlighted("\n".join(lines) + "\n", kind).split("\n")
    if len(html) != len(lines) + 1:  # the lexer normalised a line ending inside a line: lex each on its own
        return [highlighted(line, kind) for line in lines]
    return [Markup(line) for line in html[:-1]]


def stylesheet() -> str:
    """The token colours, scoped to tgstore's code blocks."""
    return formatter().get_style_defs([".tgstore-code", ".tgstore-diff td.code"])
