"""Every tgstore URL, spelled in one place: one function per route of routes.py, each taking the route's query
parameters by name and giving the path from the server's root (`urls.diff(a="0.13.0", b="0.14.0", case="add")` ->
`/-/diff?a=0.13.0&b=0.14.0&case=add`). Parameters that are None or "" are left out. Pages, cells and templates use
these; Datasette's own prefix (base_url) is added by `Bound` (templates see it as `tg`) or `datasette.urls.path`.
`as_json(path)` is a page's JSON twin: the same path with `.json` before the query."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

DIFF, PASSDIFF, KERNEL, GRAPH, REWRITES, BLOB = "/-/diff", "/-/passdiff", "/-/kernel", "/-/graph", "/-/rewrites", \
    "/-/blob"
PARITY, CHART, REGRESSIONS, SLOWDOWNS, STATIC = "/-/parity", "/-/chart", "/-/regressions", "/-/slowdowns", \
    "/-/tgstore"


def _with(path: str, **params: Any) -> str:
    kept = {k.rstrip("_"): v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def index() -> str:
    return "/"


def diff(a: str | None = None, b: str | None = None, case: str | None = None, renderer: str | None = None, *,
         spelling: str | None = None, section: str | None = None, start: int | None = None,
         fragment: bool = False) -> str:
    """Two commits compared: every case (a summary) or one case's kernels. `spelling="raw"` turns the spelling-blind
    comparison off (it is on by default)."""
    return _with(DIFF, a=a, b=b, case=case, renderer=renderer, spelling=spelling, section=section,
                 start=start or None, fragment=1 if fragment else None)


def passdiff(case: str, kernel: int | None = None, a: str | None = None, b: str | None = None,
             renderer: str | None = None, *, spelling: str | None = None, row: int | None = None,
             all: int | None = None, pass_name: str | None = None,  # noqa: A002 - the page's own argument name
             occurrence: int | None = None) -> str:
    """One kernel's passes at two commits, aligned; `row` (or `pass_name` and its `occurrence`) selects a pass row
    for its text diff and the rules that changed it; `all=1` lists the unchanged and spelling-only passes too."""
    return _with(PASSDIFF, case=case, kernel=kernel, a=a, b=b, renderer=renderer, spelling=spelling, row=row,
                 all=all, **{"pass": pass_name}, occurrence=occurrence if occurrence and occurrence > 1 else None)


def kernel(case: str, kernel: int | None = None, commit: str | None = None, renderer: str | None = None, *,
           pass_position: int | None = None, step: int | None = None) -> str:
    """The kernel workbench."""
    return _with(KERNEL, case=case, kernel=kernel, commit=commit, renderer=renderer, pass_=pass_position, step=step)


def graph(digest: str, *, vs: str | None = None, run: int | None = None, case: str | None = None,
          kernel: int | None = None, renderer: str | None = None, pass_position: int | None = None,
          fold: bool | None = None, spelling: str | None = None, svg: bool = False, title: str | None = None,
          side_by_side: bool = False) -> str:
    """A stored graph; `vs` another one compared with it; run/case/kernel/renderer/pass_position its place in a
    pipeline (stepping); `title` what opened it (a Svod stage, a pass at two commits)."""
    return _with(f"{GRAPH}/{digest}{'.svg' if svg else ''}", vs=vs, run=run, case=case, kernel=kernel,
                 renderer=renderer, pass_=pass_position, fold=None if fold is None else int(fold), spelling=spelling,
                 title=title, sides=1 if side_by_side else None)


def rewrites(run: int, case: str, pass_position: int, kernel: int | None = None, renderer: str | None = None, *,
             step: int | None = None) -> str:
    """The rewrite steps inside one pass."""
    return _with(REWRITES, run=run, case=case, kernel=kernel, renderer=renderer, pass_=pass_position, step=step)


def blob(digest: str, *, language: str | None = None, start: int | None = None, line: int | None = None) -> str:
    """A stored text, a page at a time from `start`; `line` (from 1) shown marked, with the lines around it."""
    return _with(f"{BLOB}/{digest}", language=language, start=start or None, line=line)


def parity(case: str | None = None, *, svod_run: int | None = None, commit: str | None = None,
           kernel: int | None = None, stage: str | None = None) -> str:
    """Svod parity of a case; with kernel and stage, one cell's differing nodes."""
    return _with(PARITY, case=case, svod_run=svod_run, commit=commit, kernel=kernel, stage=stage)


def chart(metric: str | None = None, case: str | None = None, renderer: str | None = None, *,
          series: str | None = None, machine: str | None = None) -> str:
    return _with(CHART, metric=metric, case=case, renderer=renderer, series=series, machine=machine)


def regressions(metric: str | None = None, case: str | None = None, *, since: str | None = None,
                machine: str | None = None) -> str:
    return _with(REGRESSIONS, metric=metric, case=case, since=since, machine=machine)


def slowdowns(a: str | None = None, b: str | None = None, *, case: str | None = None, machine: str | None = None,
              threshold: str | None = None) -> str:
    """Two commits' kernel times side by side, slowest change first."""
    return _with(SLOWDOWNS, a=a, b=b, case=case, machine=machine, threshold=threshold)


def static(name: str) -> str:
    return f"{STATIC}/{name}"


def as_json(path: str) -> str:
    """A page's JSON twin: `/-/diff?a=x` -> `/-/diff.json?a=x` (`/` -> `/-/index.json`)."""
    where, sep, query = path.partition("?")
    if where in ("", "/"):
        where = "/-/index"
    return f"{where}.json{sep}{query}"


ROUTE_BUILDERS: dict[str, Callable[..., str]] = {
    "index": index, "diff": diff, "passdiff": passdiff, "kernel": kernel, "graph": graph, "rewrites": rewrites,
    "blob": blob, "parity": parity, "chart": chart, "regressions": regressions, "slowdowns": slowdowns,
    "static": static, "as_json": as_json,
}


class Bound:
    """The builders with a prefix applied (Datasette's `urls.path`, which adds base_url): what templates call `tg`,
    e.g. `{{ tg.kernel(case, kernel=0) }}`."""

    def __init__(self, prefix: Callable[[str], str]) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> Callable[..., str]:
        build = ROUTE_BUILDERS.get(name)
        if build is None:
            raise AttributeError(name)
        return lambda *args, **kwargs: self._prefix(build(*args, **kwargs))
