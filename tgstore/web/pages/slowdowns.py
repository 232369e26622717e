"""The slowdowns page (/-/slowdowns?a=&b=[&case=][&machine=][&threshold=]): two commits' kernel times side by side
on one machine (tgstore.compare.slowdowns), slowest change first: each kernel by name, its best time at each commit
in µs, the ratio, whether it is beyond noise, and links to that kernel's diff and pass-by-pass diff. Without a and
b: a form with the timed commits, the newest two chosen."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.answers.base import Unanswerable
from tgstore.answers.slowdowns import slowdowns as slowdowns_answer
from tgstore.compare.slowdowns import DEFAULT_THRESHOLD
from tgstore.web.base import read, render, str_arg


def threshold_arg(request: Any) -> float:
    try:
        value = float(str_arg(request, "threshold") or DEFAULT_THRESHOLD)
    except ValueError:
        return DEFAULT_THRESHOLD
    return value if 0 <= value < 100 else DEFAULT_THRESHOLD


async def slowdowns(datasette: Any, request: Any) -> Response:
    a, b, case, machine = (str_arg(request, k) for k in ("a", "b", "case", "machine"))
    threshold = threshold_arg(request)
    try:  # the twin is the answer (answers/slowdowns.py): the same keys whether anything is timed or not
        answer = await read(datasette, lambda conn: slowdowns_answer(conn, a, b, case, machine, threshold))
    except Unanswerable as exc:
        return await render(datasette, request, "tgstore_slowdowns.html", {
            "a": a or "", "b": b or "", "case": case or "", "machine": machine or "", "threshold": threshold,
            "commits": [], "found": None, "error": str(exc)}, 400, data={"error": str(exc)})
    commits = [(c["sha"], c["version"]) for c in answer.timed_commits]
    context: dict[str, Any] = {"a": a or "", "b": b or "", "case": case or "", "machine": machine or "",
                               "threshold": threshold, "commits": commits, "found": None, "error": None}
    if not commits:
        context["error"] = ("No kernel times are stored: `tgstore ingest --time` compiles and times every kernel on "
                            "this machine; two timed commits can then be compared here.")
        return await render(datasette, request, "tgstore_slowdowns.html", context, data=answer.to_json)
    if not a or not b:
        context["a"] = context["a"] or (commits[1][1] or commits[1][0][:12] if len(commits) > 1 else "")
        context["b"] = context["b"] or (commits[0][1] or commits[0][0][:12])
        if len(commits) < 2:
            context["error"] = "Only one commit has kernel times: time another (`tgstore ingest --time`)."
        return await render(datasette, request, "tgstore_slowdowns.html", context, data=answer.to_json)
    found = answer.comparison
    if found.machine is None:
        context["error"] = (f"No machine timed both {a} and {b}" + (f" (machine {machine})" if machine else "")
                            + ": times are only compared on one machine. Machines that timed either: "
                            + (", ".join(f"{m['hostname'] or '?'} {m['machine'][:12]}" for m in found.machines)
                               or "none"))
    return await render(datasette, request, "tgstore_slowdowns.html", {**context, "found": found},
                        data=answer.to_json)
