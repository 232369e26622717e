"""One case's diff page, bounded: each kernel's sections (AST, source per renderer, first differing pass per
renderer) shown side by side up to a per-section and a per-page budget. A section past the page's budget is a closed
<details> that loads itself when opened; a section cut short links to a page of its own that pages through it
(`section=KERNEL:KEY&start=ROW`). A 1,550-line LLVM diff made the softmax page 1.97 MB before."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from tgstore.web import urls
from tgstore.web.machinecode import ASSEMBLY_LANGUAGE, assembly_diff
from tgstore.web.sidebyside import MAX_BYTES, MAX_ROWS, Table, bounded_table

PAGE_BYTES = 400_000  # of diff tables on one case's page
SECTION_PAGE_ROWS = 300  # rows of one section on its own page
SECTION_PAGE_BYTES = 500_000


@dataclass
class Section:
    position: int  # the kernel's position in the case
    key: str  # "ast", "source-<renderer>" or "stage-<renderer>": unique within a kernel
    title: str
    lines: list[str]
    language: str | None
    graph: str | None = None  # stage sections: the graph at b with the changes outlined, and the graph at a
    graph_a: str | None = None
    table: Table | None = None  # None: not drawn on this page (past its budget)

    @property
    def id(self) -> str:
        return f"{self.position}:{self.key}"

    @property
    def renderer(self) -> str | None:
        return self.key.split("-", 1)[1] if "-" in self.key else None


def language(kind: str, renderer: str | None) -> str | None:
    return "pyrender" if kind == "ast" else renderer


def stage_title(s: Any, label_a: str = "a", label_b: str = "b") -> str:
    """A stage section's heading in words: which pass first differs and how, and how many passes only one side
    ran (named in full on the pass-by-pass page, not here)."""
    name = s.name_b or s.name_a
    if s.kind == "added":
        head = f"no shared pass differs; first pass only at {label_b}: {name!r} (#{s.pass_position_b})"
    elif s.kind == "removed":
        head = f"no shared pass differs; first pass only at {label_a}: {name!r} (#{s.pass_position_a})"
    else:
        head = (f"first difference at {name!r} (#{s.pass_position_a} at {label_a}, #{s.pass_position_b} at "
                f"{label_b})")
    extra = [f"{len(s.added)} pass{'' if len(s.added) == 1 else 'es'} only at {label_b}" if s.added else "",
             f"{len(s.removed)} only at {label_a}" if s.removed else "",
             f"{s.spelling_only} differ in spelling only" if getattr(s, "spelling_only", 0) else ""]
    extra_text = "; ".join(e for e in extra if e)
    return f"{s.renderer} passes: {head}" + (f"; {extra_text}" if extra_text else "")


def sections(result: Any, label_a: str = "a", label_b: str = "b") -> list[Section]:
    """Every changed section of the diff, by kernel, in the order the page shows them."""
    out = []
    for d in result.diffs:
        assembly = assembly_diff(d.renderer, d.lines) if d.kind != "ast" else None  # machine code, per instruction
        out.append(Section(d.position, "ast" if d.kind == "ast" else f"source-{d.renderer}", d.title,
                           assembly if assembly is not None else d.lines,
                           ASSEMBLY_LANGUAGE if assembly is not None else language(d.kind, d.renderer)))
    for s in result.stage_diffs:
        graph = None
        spelling = None if s.ignore_spelling else "raw"
        if s.graph_b:
            graph = urls.graph(s.graph_b, vs=s.graph_a, spelling=spelling, side_by_side=bool(s.graph_a))
        out.append(Section(s.position, f"stage-{s.renderer}", stage_title(s, label_a, label_b), s.lines, None, graph,
                           urls.graph(s.graph_a) if s.graph_a else None))
    order = {"ast": 0, "source": 1, "stage": 2}
    return sorted(out, key=lambda s: (s.position, order[s.key.split("-")[0]], s.key))


def draw(found: list[Section], budget: int = PAGE_BYTES) -> None:
    """Draw sections in order while the page's budget lasts; the rest stay closed."""
    for section in found:
        if budget <= 0:
            break
        section.table = bounded_table(section.lines, section.language, max_rows=MAX_ROWS,
                                      max_bytes=min(MAX_BYTES, budget))
        budget -= len(section.table.html)


def section_url(base: dict[str, Any], section: Section, start: int = 0, fragment: bool = False) -> str:
    """`base`: the case diff's own arguments (urls.diff's)."""
    return urls.diff(**base, section=section.id, start=start, fragment=fragment)


def kernels(found: list[Section]) -> list[dict[str, Any]]:
    """Sections grouped by kernel, for the template."""
    grouped: dict[int, list[Section]] = {}
    for s in found:
        grouped.setdefault(s.position, []).append(s)
    return [{"position": p, "sections": grouped[p]} for p in sorted(grouped)]


def one_section(found: list[Section], wanted: str, start: int) -> Section | None:
    """The section `wanted` (KERNEL:KEY) drawn from row `start`, or None if the diff has none such."""
    section = next((s for s in found if s.id == wanted), None)
    if section is not None:
        section.table = bounded_table(section.lines, section.language, start=max(0, start),
                                      max_rows=SECTION_PAGE_ROWS, max_bytes=SECTION_PAGE_BYTES)
    return section


def pager(base: dict[str, Any], section: Section) -> dict[str, str | None]:
    """Previous/next links of a section's own page."""
    table = section.table
    assert table is not None
    previous = max(0, table.start - SECTION_PAGE_ROWS) if table.start > 0 else None
    following = table.start + table.shown if table.start + table.shown < table.total else None
    return {"previous": None if previous is None else section_url(base, section, previous),
            "next": None if following is None else section_url(base, section, following)}


def fragment(base: dict[str, Any], section: Section) -> Markup:
    """A closed section's body, fetched when it is opened: its first rows and a link to the rest."""
    assert section.table is not None
    more = ""
    if not section.table.complete:
        more = (f'<p class="tgstore-notice">rows 1–{section.table.shown} of {section.table.total} · '
                f'<a href="{section_url(base, section)}">all of it, page by page</a></p>')
    return Markup(str(section.table.html) + more)
