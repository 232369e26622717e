"""The diff page (/-/diff?a=&b=[&case=]): without a case, a summary of every case that changed; with one, its
kernels' side-by-side diffs, bounded, each section pageable on its own."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response

from tgstore.compare.diff import DiffError, diff_commits, summary_line
from tgstore.store.commits import CommitNotFound
from tgstore.web import diffpage, diffsummary
from tgstore.web.base import database, not_found, reader_engine, render
from tgstore.web.sidebyside import bounded_table


def compute_diff(path: str, a: str, b: str, case: str | None, renderer: str | None) -> Any:
    with reader_engine(path).connect() as conn:
        return diff_commits(conn, a, b, case=case, renderer=renderer, stages=True)


def compute_summary(path: str, a: str, b: str, ignore_spelling: bool) -> diffsummary.Summary:
    with reader_engine(path).connect() as conn:
        return diffsummary.summarize(conn, a, b, ignore_spelling)


async def diff(datasette: Any, request: Any) -> Response:
    a, b = (request.args.get("a") or "").strip(), (request.args.get("b") or "").strip()
    case = request.args.get("case") or None
    renderer = request.args.get("renderer") or None
    ignore_spelling = request.args.get("spelling") == "ignore"
    db = database(datasette)
    context: dict[str, Any] = {"a": a, "b": b, "case": case or "", "renderer": renderer or "", "result": None,
                               "ignore_spelling": ignore_spelling}
    if not a or not b:
        return await render(datasette, request, "tgstore_diff.html", context)
    if not case:  # every case: a summary table, each row linking to its case's diff
        try:
            found = await asyncio.to_thread(compute_summary, db.path, a, b, ignore_spelling)
        except (DiffError, CommitNotFound) as exc:
            return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400)
        return await render(datasette, request, "tgstore_diff.html", {**context, **diffsummary.context(found)})
    wanted = request.args.get("section") or ""
    # a section's own page reads only its renderer's sources and passes
    section_renderer = wanted.split("-", 1)[1] if "-" in wanted else None
    try:
        result = await asyncio.to_thread(compute_diff, db.path, a, b, case, renderer or section_renderer)
    except (DiffError, CommitNotFound) as exc:
        return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400)
    base = {k: v for k, v in (("a", a), ("b", b), ("case", case), ("renderer", renderer or "")) if v}
    found = diffpage.sections(result, diffsummary.label(result.a), diffsummary.label(result.b))
    if wanted:
        start = int(request.args.get("start") or 0) if (request.args.get("start") or "0").isdigit() else 0
        if request.args.get("fragment"):
            section = next((s for s in found if s.id == wanted), None)
            if section is None:
                return Response.html("<p>no such section</p>", status=404)
            section.table = bounded_table(section.lines, section.language)
            return Response.html(diffpage.fragment(base, section))
        section = diffpage.one_section(found, wanted, start)
        if section is None:
            return await not_found(datasette, request, f"the diff of {case} has no section {wanted!r}; sections: "
                                   f"{', '.join(s.id for s in found) or 'none'}")
        return await render(datasette, request, "tgstore_diff.html", {
            **context, "section": section, "pager": diffpage.pager(base, section),
            "case_url": "/-/diff?" + urlencode(base), "label_a": diffsummary.label(result.a),
            "label_b": diffsummary.label(result.b)})
    diffpage.draw(found)
    one_sided, other_notes = diffsummary.one_sided_notes(result.notes, result.a, result.b)
    return await render(datasette, request, "tgstore_diff.html", {
        **context, "result": result, "summary": summary_line(result), "one_sided": one_sided, "notes": other_notes,
        "label_a": diffsummary.label(result.a), "label_b": diffsummary.label(result.b),
        "kernels": diffpage.kernels(found), "section_url": lambda s, **kw: diffpage.section_url(base, s, **kw)})
