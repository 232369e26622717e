"""The diff page (/-/diff?a=&b=[&case=][&spelling=raw]): without a case, a summary of every case that changed; with
one, its kernels' side-by-side diffs, bounded, each section pageable on its own. Spelling-blind unless asked for
`spelling=raw`: ASTs and pass graphs compared in one spelling across tinygrad eras."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.answers.base import Unanswerable
from tgstore.answers.diff import diff as diff_answer
from tgstore.compare.diff import DiffError, summary_line
from tgstore.compare.kernel_match import counterparts
from tgstore.compare.summary import label, summarize
from tgstore.store.commit_names import CommitNotFound
from tgstore.web import diffpage, diffsummary, urls
from tgstore.web.base import ignore_spelling, not_found, read, render, str_arg
from tgstore.web.sidebyside import bounded_table


async def diff(datasette: Any, request: Any) -> Response:
    a, b = str_arg(request, "a") or "", str_arg(request, "b") or ""
    case, renderer = str_arg(request, "case"), str_arg(request, "renderer")
    spelling = ignore_spelling(request)
    context: dict[str, Any] = {"a": a, "b": b, "case": case or "", "renderer": renderer or "", "result": None,
                               "ignore_spelling": spelling,
                               "switch_url": datasette.urls.path(urls.diff(a, b, case, renderer, spelling=None
                                                                           if not spelling else "raw"))}
    if not a or not b:
        return await render(datasette, request, "tgstore_diff.html", context, data={"a": a, "b": b, "result": None})
    if not case:  # every case: a summary table, each row linking to its case's diff
        try:
            found = await read(datasette, lambda conn: summarize(conn, a, b, spelling))
        except (DiffError, CommitNotFound) as exc:
            return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400,
                                data={"error": str(exc)})
        return await render(datasette, request, "tgstore_diff.html", {**context, **diffsummary.context(found)},
                            data=found.to_json)
    wanted = request.args.get("section") or ""
    # a section's own page reads only its renderer's sources and passes
    section_renderer = wanted.split("-", 1)[1] if "-" in wanted else None
    try:  # the question `tgstore diff A B --case C --stages` asks: the twin is its answer's JSON
        answer = await read(datasette, lambda conn: diff_answer(
            conn, a, b, case=case, renderer=renderer or section_renderer, stages=True,
            spelling="ignore" if spelling else "raw"))
    except Unanswerable as exc:
        return await render(datasette, request, "tgstore_diff.html", {**context, "error": str(exc)}, 400,
                            data={"error": str(exc)})
    result = answer.found
    raw_spelling = None if spelling else "raw"
    base = {"a": a, "b": b, "case": case, "renderer": renderer, "spelling": raw_spelling}
    found = diffpage.sections(result, label(result.a), label(result.b))
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
            **context, "section": section,
            "pager": diffpage.pager(base, section), "case_url": urls.diff(**base), "label_a": label(result.a),
            "label_b": label(result.b)}, data={"section": section.id, "lines": section.lines})
    diffpage.draw(found)
    one_sided, other_notes = diffsummary.one_sided_notes(result.notes, result.a, result.b)
    positions = sorted({s.position for s in found if s.position >= 0})
    # the pass-by-pass diff of a kernel only where it has a counterpart at a (its AST or name): the diff pairs
    # kernels by schedule position, the pass-by-pass page by what they are
    matched = await read(datasette, lambda conn: set(positions) & set(counterparts(
        conn, case, result.run_b.run_id, result.run_a.run_id)))
    return await render(datasette, request, "tgstore_diff.html", {
        **context, "result": result, "summary": summary_line(result), "one_sided": one_sided, "notes": other_notes,
        "label_a": label(result.a), "label_b": label(result.b), "raw_spelling": raw_spelling,
        "kernels": diffpage.kernels(found), "section_url": lambda s, **kw: diffpage.section_url(base, s, **kw),
        "matched": matched},
        data=answer.to_json)
