"""The slowdowns page (/-/slowdowns?a=&b=[&case=][&machine=][&threshold=]): two commits' kernel times side by side
on one machine (tgstore.compare.slowdowns), slowest change first: each kernel by name, its best time at each commit
in µs, the ratio, whether it is beyond noise, and links to that kernel's diff and pass-by-pass diff. Without a and
b: a form with the timed commits, the newest two chosen."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.compare.slowdowns import DEFAULT_THRESHOLD, compare_times, timed_commits
from tgstore.store.commit_names import CommitNotFound
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
    commits = await read(datasette, timed_commits)
    context: dict[str, Any] = {"a": a or "", "b": b or "", "case": case or "", "machine": machine or "",
                               "threshold": threshold, "commits": commits, "found": None, "error": None}
    if not commits:
        context["error"] = ("No kernel times are stored: `tgstore ingest --time` compiles and times every kernel on "
                            "this machine; two timed commits can then be compared here.")
        return await render(datasette, request, "tgstore_slowdowns.html", context, data={"error": context["error"]})
    if not a or not b:
        context["a"] = context["a"] or (commits[1][1] or commits[1][0][:12] if len(commits) > 1 else "")
        context["b"] = context["b"] or (commits[0][1] or commits[0][0][:12])
        if len(commits) < 2:
            context["error"] = "Only one commit has kernel times: time another (`tgstore ingest --time`)."
        return await render(datasette, request, "tgstore_slowdowns.html", context,
                            data={"timed_commits": [{"sha": s, "version": v} for s, v in commits]})
    try:
        found = await read(datasette, lambda conn: compare_times(conn, a, b, case=case, machine=machine,
                                                                 threshold=threshold))
    except CommitNotFound as exc:
        return await render(datasette, request, "tgstore_slowdowns.html", {**context, "error": str(exc)}, 400,
                            data={"error": str(exc)})
    if found.machine is None:
        context["error"] = (f"No machine timed both {a} and {b}" + (f" (machine {machine})" if machine else "")
                            + ": times are only compared on one machine. Machines that timed either: "
                            + (", ".join(f"{m['hostname'] or '?'} {m['machine'][:12]}" for m in found.machines)
                               or "none"))
    return await render(datasette, request, "tgstore_slowdowns.html", {**context, "found": found},
                        data=found.to_json)
