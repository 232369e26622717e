"""How table and query cells show: code highlighted, commits as short shas with the full one on hover, and link
columns so that commit -> runs -> cases -> kernels -> sources, passes and graph is one click each."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape

from tgstore.store.content import sha256_text
from tgstore.units import format_ns
from tgstore.web import urls
from tgstore.web.highlight import highlighted
from tgstore.web.machinecode import MACHINE_CODE, readable_source

# Columns that always hold code or program output, in tables, views and canned queries alike.
CODE_COLUMNS = frozenset({"source", "code", "pyrender", "ast_text", "debug", "stderr", "case_traceback", "upat"})
# Columns that hold code in some places (blob text, tracebacks) and short words elsewhere: only multi-line values.
MULTILINE_COLUMNS = frozenset({"text", "error", "reason", "arg"})
WRAPPED_COLUMNS = frozenset({"upat"})  # one long line each: wrap rather than scroll
HASH = re.compile(r"^[0-9a-f]{64}$")
SHA = re.compile(r"^([0-9a-f]{40}|tree:[0-9a-f]{16,})$")  # a git commit, or an installed package's tree hash
TRUNCATE_LINES = 8  # a code cell in a table shows this many lines and links to the rest
# columns holding the hash of a stored graph (a kernel AST, a pass graph, a Svod tree): each links to its drawing.
# Not norm_hash: a graph's hash in Svod parity's spelling names a stored Svod tree only when the two are equal.
GRAPH_COLUMNS = frozenset({"kernel_hash", "graph_hash", "graph", "graph_a", "graph_b"})
GRAPH_TABLES = frozenset({"kernels", "graphs", "svod_trees"})  # their own `hash` column is a stored graph


def _get(row: Any, key: str) -> Any:
    try:
        return row[key]
    except (KeyError, IndexError, TypeError):
        return None


def _keys(row: Any) -> set[str]:
    try:
        return set(row.keys())
    except AttributeError:
        return set()


def link(href: str, text: str, title: str | None = None, cls: str = "tgstore-link") -> str:
    tip = f' title="{escape(title)}"' if title else ""
    return f'<a class="{cls}" href="{escape(href)}"{tip}>{escape(text)}</a>'


def short_sha(sha: str) -> str:
    return sha[:17] if sha.startswith("tree:") else sha[:12]


class CellRenderer:
    """render_cell for one database: `table_url(name)` a table's or view's URL, `route_url(path)` a tgstore route's
    (tgstore.web.urls gives the paths) with Datasette's prefix."""

    def __init__(self, table_url: Callable[[str], str], route_url: Callable[[str], str]) -> None:
        self.table_url, self.route_url = table_url, route_url

    def view(self, name: str, **filters: Any) -> str:
        return self.table_url(name) + "?" + urlencode({k: v for k, v in filters.items() if v is not None})

    def render(self, row: Any, value: Any, column: str, table: str | None) -> Markup | None:
        if column == "source" and isinstance(value, str) and (_get(row, "renderer") or "").upper() in MACHINE_CODE:
            return self.machine_code(value, _get(row, "renderer"))
        if isinstance(value, str) and table is not None and value.count("\n") >= TRUNCATE_LINES \
                and (column in ("source", "pyrender") or is_code(value, column)):
            return self.truncated(value, column, _get(row, "renderer") if column == "source" else
                                  "pyrender" if column == "pyrender" else None)
        if column == "source" and isinstance(value, str):
            return code_block(value, _get(row, "renderer"))
        if column == "pyrender" and isinstance(value, str):
            return code_block(value, "pyrender")
        if is_code(value, column):
            return code_block(value, None, wrap=column in WRAPPED_COLUMNS)
        if isinstance(value, str) and (column in GRAPH_COLUMNS or column == "hash" and table in GRAPH_TABLES) \
                and HASH.match(value):
            return Markup(link(self.route_url(urls.graph(value)), value[:12], value, "tgstore-graph-link"))
        if column == "diff" and isinstance(value, str) and value.count(" ") in (1, 2):
            a, b, *case = value.split(" ")
            return Markup(link(self.route_url(urls.diff(a, b, case[0] if case else None)), "diff",
                               f"{a} -> {b}" + (f", {case[0]}" if case else "")))
        if column == "chart" and isinstance(value, str) and value.count(" ") in (1, 2):
            metric, case, *renderer = value.split(" ")
            return Markup(link(self.route_url(urls.chart(metric, case, renderer[0] if renderer else None)), "chart",
                               f"{metric} of {case}"))
        if is_ns_column(column) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return Markup(f'<span class="tgstore-ns" title="{value:,} ns">{escape(format_ns(int(value)))}</span>')
        if is_sha_column(column) and isinstance(value, str) and SHA.match(value):
            return Markup(link(self.view("v_runs", sha=value), short_sha(value), value, "tgstore-sha"))
        return self.navigation(row, value, column, table)

    def machine_code(self, value: str, renderer: str) -> Markup:
        """Machine code (hex) as assembly: its first lines, and a link to the whole, disassembled there too."""
        text, language = readable_source(renderer, value)
        if text == value:
            return code_block(value, None, wrap=True)
        lines = (text or "").split("\n")
        href = self.route_url(urls.blob(sha256_text(value), language=renderer))
        head = highlighted("\n".join(lines[:TRUNCATE_LINES]), language)
        more = link(href, f"all {len(lines) - 1} instructions", "the whole disassembly", "tgstore-more")
        return Markup(f'<pre class="tgstore-code tgstore-short">{head}</pre>' + more)

    def truncated(self, value: str, column: str, language: str | None) -> Markup:
        """A long text in a table: its first lines, and a link to the whole (stored once, by hash, as a blob)."""
        lines = value.split("\n")
        head = "\n".join(lines[:TRUNCATE_LINES])
        href = self.route_url(urls.blob(sha256_text(value), language=language))
        return Markup(f'<pre class="tgstore-code tgstore-short">{highlighted(head, language)}</pre>'
                      + link(href, f"all {len(lines)} lines", f"the whole {column}", "tgstore-more"))

    def navigation(self, row: Any, value: Any, column: str, table: str | None) -> Markup | None:
        keys = _keys(row)
        if column == "sha" and isinstance(value, str) and len(value) > 12:
            return Markup(link(self.view("v_runs", sha=value), short_sha(value), value, "tgstore-sha"))
        if is_svod(table) and column in ("run_id", "case") or column == "svod_run":
            return self.svod_links(row, value, column, table)
        if column == "run_id" and isinstance(value, int):
            return Markup(link(self.view("v_run_cases", run_id=value), str(value), "this run's cases"))
        run_id = _get(row, "run_id")
        if column == "case" and isinstance(value, str) and run_id is not None:
            return Markup(link(self.view("v_kernels", run_id=run_id, case=value), value, "this case's kernels"))
        # a schedule position; -1 is the case as a whole (canonical documents, the scheduler's passes): no kernel
        if column == "position" and isinstance(value, int) and value >= 0 and run_id is not None and "case" in keys:
            case = _get(row, "case")
            parts = [str(value), link(self.route_url(urls.kernel(case, value, _get(row, "sha"), _get(row, "renderer"))),
                "workbench", "this kernel's passes, graph, rewrite steps and source", "tgstore-workbench-link")]
            if table != "v_sources":
                parts.append(link(self.view("v_sources", run_id=run_id, case=case, position=value), "source"))
            if table != "v_passes":
                parts.append(link(self.view("v_passes", run_id=run_id, case=case, position=value, scope="lower",
                                            _sort="pass_position"), "passes"))
            kernel_hash = _get(row, "kernel_hash")
            if isinstance(kernel_hash, str) and HASH.match(kernel_hash):
                parts.append(link(self.route_url(urls.graph(kernel_hash)), "graph"))
            return Markup(" · ".join(parts)) if len(parts) > 1 else None
        if column == "pass_name" and isinstance(value, str) and run_id is not None and "pass_position" in keys:
            return self.pass_links(row, value, run_id)
        return None

    def svod_links(self, row: Any, value: Any, column: str, table: str | None) -> Markup | None:
        """In Svod's tables a run is a Svod run (svod_runs), never tinygrad's run of the same number: its number
        links to the case's parity page (or the Svod run's row), the case to its parity page."""
        case = _get(row, "case")
        if column == "case" and isinstance(value, str):
            return Markup(link(self.route_url(urls.parity(value)), value,
                               "Svod against tinygrad for this case", "tgstore-parity-link"))
        if not isinstance(value, int):
            return None
        if isinstance(case, str):
            return Markup(link(self.route_url(urls.parity(case, svod_run=value)),
                               str(value), "this Svod run against tinygrad, stage by stage", "tgstore-svod-run"))
        return Markup(link(f"{self.table_url('svod_runs')}/{value}", str(value), "this Svod output",
                           "tgstore-svod-run"))

    def pass_links(self, row: Any, name: str, run_id: int) -> Markup:
        """A pass: its graph in its kernel's pipeline (previous / next, what it changed) and its rewrite steps."""
        place = {"run": run_id, "case": _get(row, "case"), "kernel": _get(row, "position"),
                 "renderer": _get(row, "renderer") or first(_get(row, "renderers")),
                 "pass_position": _get(row, "pass_position")}
        graph_hash = _get(row, "graph_hash")
        parts = [link(self.route_url(urls.graph(graph_hash, **place)), name, "this pass's graph: what it changed")
                 if isinstance(graph_hash, str) and HASH.match(graph_hash) else str(escape(name))]
        if _get(row, "has_steps") != 0:  # the steps link only where steps may be recorded
            parts.append(link(self.route_url(urls.rewrites(**place)), "steps", "the rewrite steps inside this pass"))
        return Markup(" · ".join(parts))


def is_ns_column(column: str | None) -> bool:
    """A time in nanoseconds: ns, ns_min, best_ns, noise_ns, calibration_ns, ..."""
    return bool(column) and (column == "ns" or column.startswith("ns_") or column.endswith("_ns"))


def is_sha_column(column: str | None) -> bool:
    """A tinygrad commit: sha, sha_a, good_sha, until_sha, ... (svod_commit is Svod's, not linked)."""
    return bool(column) and (column == "sha" or column.startswith("sha_") or column.endswith("_sha"))


def is_svod(table: str | None) -> bool:
    return bool(table) and table.startswith(("svod_", "v_svod_"))


def first(renderers: Any) -> str | None:
    """The first of a comma-separated `renderers` cell (a pass shared by several renderers), or None."""
    return renderers.split(",")[0] if isinstance(renderers, str) and renderers else None


def is_code(value: Any, column: str | None) -> bool:
    if not isinstance(value, str) or not column:
        return False
    if column in CODE_COLUMNS:
        return True
    return column in MULTILINE_COLUMNS and "\n" in value


def code_block(value: str, language: str | None, *, wrap: bool = False) -> Markup:
    classes = "tgstore-code tgstore-wrap" if wrap else "tgstore-code"
    return Markup(f'<pre class="{classes}">{highlighted(value, language)}</pre>')


def row_mapping(row: Any) -> Mapping[str, Any]:
    return {k: _get(row, k) for k in _keys(row)}
