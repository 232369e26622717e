"""Charts over commits in git order (the history order of v_commits), drawn as SVG on the server by pygal: UOp
count, kernel count, pattern matches, node count per pass, kernel run times (--time) and compile times, for one case."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from html import escape
from typing import Any

import pygal
from pygal.style import Style

# metric -> (title, y axis, SQL giving (run_id, sha, version, history_rank, series, value) in history order)
METRICS: dict[str, tuple[str, str, str]] = {
    "uops": ("Linearized UOps", "UOps", """
        SELECT run_id, sha, version, history_rank, renderer AS series, sum(uop_count) AS value FROM v_sources
        WHERE "case" = :case AND renderer = :renderer GROUP BY run_id ORDER BY history_rank, run_id"""),
    "kernels": ("Kernels", "kernels", """
        SELECT run_id, sha, version, history_rank, 'kernels' AS series, kernel_count AS value FROM v_run_cases
        WHERE "case" = :case ORDER BY history_rank, run_id"""),
    # summed once per distinct match set of the case, not once per run (0.2 s -> 0.02 s at 10,000 commits)
    "matches": ("Pattern matches", "matches", """
        WITH members AS (
          SELECT m.case_set_id, m.match_set_id FROM cases k CROSS JOIN case_set_members m ON m.case_id = k.id
          WHERE k.name = :case
        ), totals AS MATERIALIZED (
          SELECT d.match_set_id, (SELECT sum(pm.matches) FROM pattern_matches pm WHERE pm.match_set_id = d.match_set_id)
                 AS total
          FROM (SELECT DISTINCT match_set_id FROM members) d
        )
        SELECT r.id, c.sha, c.version, c.history_rank, 'matches' AS series, coalesce(t.total, 0)
        FROM members m CROSS JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
        JOIN v_commits c ON c.commit_id = r.commit_id LEFT JOIN totals t ON t.match_set_id = m.match_set_id
        ORDER BY c.history_rank, r.id"""),
    # read per distinct case result by pass_node_points (most commits share their predecessor's): the SQL is
    # PASS_NODES_RUNS and PASS_NODES_RESULTS below
    "pass_nodes": ("Nodes after each pass", "nodes", ""),
    # kernel run times (ingest --time): the best time of each kernel position (named "#position name", the name at
    # the newest commit: a kernel renamed r_4_16n1 -> r_4_16 stays one line) on one machine, the latest timing per
    # commit; their sum is the "time_total" chart, drawn apart (it would flatten the kernels)
    "time": ("Kernel run time (best of runs)", "µs", """
        WITH t AS (
          SELECT coalesce(kt.run_id, -kt.session_id) AS run_id, kt.sha, c.version, kt.history_rank, kt.position,
                 kt.ns_min, last_value(coalesce(kt.kernel_name, '')) OVER (
                   PARTITION BY kt.position ORDER BY kt.history_rank
                   ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS newest_name
          FROM v_kernel_times kt JOIN v_commits c ON c.sha = kt.sha
          WHERE kt."case" = :case AND kt.status = 'ok' AND kt.machine = :machine
        )
        SELECT run_id, sha, version, history_rank, '#' || position || ' ' || newest_name, round(ns_min / 1000.0, 3)
        FROM t ORDER BY history_rank, run_id, position"""),
    "time_total": ("Kernel run time, all kernels of the case added", "µs", """
        SELECT coalesce(kt.run_id, -kt.session_id), kt.sha, c.version, kt.history_rank, 'total',
               round(sum(kt.ns_min) / 1000.0, 3)
        FROM v_kernel_times kt JOIN v_commits c ON c.sha = kt.sha
        WHERE kt."case" = :case AND kt.status = 'ok' AND kt.machine = :machine
        GROUP BY kt.session_id ORDER BY kt.history_rank, kt.run_id"""),
    # compile times (--time, --compile-times): scheduling, the lowering of the case's kernels for the renderer, and
    # each top-level pass added up over them; one machine (the one that timed the case most)
    "compile": ("Compile time (scheduling and lowering)", "ms", """
        WITH chosen AS (SELECT :machine AS machine), t AS (
          SELECT coalesce(ct.run_id, -ct.session_id) AS run_id, ct.sha, c.version, ct.history_rank, ct.renderer,
                 ct.total_us, ct.pass_names, ct.pass_us
          FROM v_compile_times ct JOIN v_commits c ON c.sha = ct.sha
          WHERE ct."case" = :case AND ct.machine = (SELECT machine FROM chosen)
            AND ct.renderer IN ('schedule', :renderer)
        )
        SELECT run_id, sha, version, history_rank,
               CASE WHEN renderer = 'schedule' THEN 'scheduling' ELSE 'lowering ' || renderer END,
               round(sum(total_us) / 1000.0, 3)
        FROM t GROUP BY run_id, sha, version, history_rank, renderer
        UNION ALL
        SELECT run_id, sha, version, history_rank,
               CASE WHEN renderer = 'schedule' THEN 'schedule: ' ELSE 'lower: ' END || json_extract(n.value, '$[0]'),
               round(sum(u.value) / 1000.0, 3)
        FROM t JOIN json_each(t.pass_names) n JOIN json_each(t.pass_us) u ON u.key = n.key
        WHERE json_extract(n.value, '$[1]') = 0
        GROUP BY run_id, sha, version, history_rank, renderer, json_extract(n.value, '$[0]')
        ORDER BY history_rank, run_id"""),
}
# What to run when a chart has nothing to draw for a case.
EMPTY_HINTS = {
    "time": "No kernel run times are stored for this case: `tgstore ingest --time` compiles and times every kernel.",
    "time_total": "No kernel run times are stored for this case: `tgstore ingest --time` compiles and times every "
                  "kernel.",
    "pass_nodes": "No pass node counts are stored for this case and renderer: `tgstore ingest --stages C,LLVM` "
                  "records the graph after each pass (tinygrad 0.11 or later names its passes).",
    "uops": "No linearized UOps are stored for this case and renderer: `tgstore ingest --renderers C,LLVM` renders "
            "them.",
}
DEFAULT_HINT = "Nothing is stored for this case: `tgstore ingest` extracts the built-in suite."
PASS_NODES_RUNS = """
    SELECT rc.run_id, c.sha, c.version, c.history_rank, rc.case_result_id
    FROM run_cases rc JOIN runs r ON r.id = rc.run_id AND r.is_current = 1 JOIN cases k ON k.id = rc.case_id
    JOIN v_commits c ON c.commit_id = r.commit_id WHERE k.name = :case ORDER BY c.history_rank, rc.run_id"""
PASS_NODES_RESULTS = """
    WITH entries AS (
      SELECT si.case_result_id, 'codegen' AS scope, pe.name, pe.position, pe.node_count FROM schedule_items si
      JOIN programs p ON p.schedule_item_id = si.id AND p.renderer = :renderer
      JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id AND pe.depth = 0
      WHERE si.case_result_id IN (SELECT value FROM json_each(:results))
      UNION ALL
      SELECT cr.id, 'scheduler', pe.name, pe.position, pe.node_count FROM case_results cr
      JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id AND pe.depth = 0
      WHERE cr.id IN (SELECT value FROM json_each(:results))
    )
    SELECT case_result_id, scope || ': ' || name, sum(node_count) FROM entries GROUP BY case_result_id, scope, name
    ORDER BY scope = 'codegen', min(position)"""
MAX_SERIES = 24  # pass_nodes: the passes whose counts vary most, so the legend stays readable
ALL_POINTS_UP_TO = 200  # commits; beyond, only the commits around a change are drawn (the line is flat between)

STYLE = Style(background="white", plot_background="white", font_family="ui-sans-serif, DejaVu Sans, sans-serif",
              colors=("#3d7eb3", "#c24f3c", "#3c9a5a", "#8a63b8", "#c4911f", "#4a5563", "#b0478f", "#a89a1d"))


# the metrics drawn for one renderer (the renderer box applies to them only), and those timed on one machine
RENDERED = frozenset({"uops", "pass_nodes", "compile"})
TIMED = {"time": "SELECT machine, max(hostname), count(*) FROM v_kernel_times WHERE \"case\" = ? GROUP BY machine "
                 "ORDER BY count(*) DESC, machine",
         "time_total": "SELECT machine, max(hostname), count(*) FROM v_kernel_times WHERE \"case\" = ? GROUP BY "
                       "machine ORDER BY count(*) DESC, machine",
         "compile": "SELECT machine, max(hostname), count(*) FROM v_compile_times WHERE \"case\" = ? GROUP BY machine "
                    "ORDER BY count(*) DESC, machine"}


def machines(conn: sqlite3.Connection, metric: str, case: str) -> list[tuple[str, str | None, int]]:
    """(fingerprint, hostname, timings) of each machine that timed `case` for a timed metric, most first."""
    sql = TIMED.get(metric)
    return [tuple(r) for r in conn.execute(sql, (case,))] if sql else []


@dataclass
class Chart:
    metric: str
    case: str
    renderer: str
    commits: list[tuple[int, str, str | None]] = field(default_factory=list)  # (run_id, sha, version) in order
    series: dict[str, list[float | None]] = field(default_factory=dict)
    total: int = 0  # commits stored (more than drawn when keep_changes left some out)
    machine: str | None = None  # the machine that timed it (timed metrics)
    hostname: str | None = None
    machines: list[tuple[str, str | None, int]] = field(default_factory=list)  # every machine that timed the case

    @property
    def title(self) -> str:
        on = f" on {self.hostname or '?'} {self.machine[:8]}" if self.machine else ""
        return f"{METRICS[self.metric][0]}: {self.case}" + (f" ({self.renderer})" if self.metric in RENDERED
                                                             else "") + on


def chart_data(conn: sqlite3.Connection, metric: str, case: str, renderer: str = "C", only: str | None = None,
               machine: str | None = None) -> Chart:
    """The chart's points; `only`: one series by name (pass_nodes: "codegen: NAME" or "scheduler: NAME"); a timed
    metric on `machine` (a fingerprint or its prefix; default the machine that timed the case most)."""
    chart = Chart(metric, case, renderer)
    timed = chart.machines = machines(conn, metric, case)  # asked once: the page lists them from here
    if timed:
        chosen = next((m for m in timed if machine and m[0].startswith(machine)), timed[0])
        chart.machine, chart.hostname = chosen[0], chosen[1]
    index: dict[int, int] = {}
    values: dict[str, dict[int, float]] = {}
    total = None
    if metric == "pass_nodes":
        points, total = pass_node_points(conn, case, renderer)
    else:
        points = conn.execute(METRICS[metric][2], {"case": case, "renderer": renderer, "machine": chart.machine})
    for run_id, sha, version, _rank, series, value in points:
        if run_id not in index:
            index[run_id] = len(chart.commits)
            chart.commits.append((run_id, sha, version))
        values.setdefault(series, {})[index[run_id]] = value
    names = [only] if only in values else list(values)
    if len(names) > MAX_SERIES and metric != "pass_nodes":  # pass_nodes: one small chart per pass
        spread = {n: max(v.values()) - min(v.values()) for n, v in values.items()}
        names = sorted(names, key=lambda n: -spread[n])[:MAX_SERIES]
    chart.series = {n: [values[n].get(i) for i in range(len(chart.commits))] for n in names}
    chart.total = total if total is not None else len(chart.commits)
    if len(chart.commits) > ALL_POINTS_UP_TO:
        keep_changes(chart)
    return chart


def pass_node_points(conn: sqlite3.Connection, case: str, renderer: str) -> tuple[list[tuple], int]:
    """(run_id, sha, version, rank, "scope: pass", node count) in history order, and how many commits the case
    has; each distinct case result read
    once; on a long history only the runs next to a change of result are listed (keep_changes would leave the
    others out: equal results have equal counts), so the work follows the changes, not the commits."""
    runs = conn.execute(PASS_NODES_RUNS, {"case": case}).fetchall()
    total = len(runs)
    if len(runs) > ALL_POINTS_UP_TO:
        result = [r[4] for r in runs]
        runs = [r for i, r in enumerate(runs) if i in (0, len(runs) - 1) or result[i] != result[i - 1]
                or result[i] != result[i + 1]]
    per_result: dict[int, list[tuple[str, float]]] = {}
    distinct = sorted({r[4] for r in runs})
    for result_id, series, value in conn.execute(PASS_NODES_RESULTS, {"renderer": renderer,
                                                                      "results": json.dumps(distinct)}):
        per_result.setdefault(result_id, []).append((series, value))
    return [(run_id, sha, version, rank, series, value) for run_id, sha, version, rank, result_id in runs
            for series, value in per_result.get(result_id, [])], total


def keep_changes(chart: Chart) -> None:
    """Leave out the commits where no series changed from the commit before and none changes at the next: on a
    long history the chart draws each step (both sides of it) and the ends, not a thousand equal points."""
    n = len(chart.commits)
    changed = [i == 0 or any(v[i] != v[i - 1] for v in chart.series.values()) for i in range(n)]
    kept = [i for i in range(n) if changed[i] or i == n - 1 or changed[i + 1]]
    chart.commits = [chart.commits[i] for i in kept]
    chart.series = {name: [v[i] for i in kept] for name, v in chart.series.items()}


SCOPES = ("scheduler", "codegen")
PANEL_SIZE = (300, 120)


@dataclass
class Panel:
    series: str  # "scope: name"
    name: str
    svg: str | None  # None: the count never changed (see `value`)
    low: float | None
    high: float | None
    last: float | None


def small_multiples(chart: Chart) -> dict[str, list[Panel]]:
    """pass_nodes as one small chart per pass, scheduler passes apart from codegen passes, in pipeline order; a
    pass whose count never changed over the commits drawn is listed with its value instead of drawn."""
    out: dict[str, list[Panel]] = {scope: [] for scope in SCOPES}
    for series, points in chart.series.items():
        scope, _, name = series.partition(": ")
        values = [v for v in points if v is not None]
        low, high = (min(values), max(values)) if values else (None, None)
        flat = low == high and None not in points
        out.setdefault(scope, []).append(Panel(series, name, None if flat else panel(chart, points, name), low,
                                               high, values[-1] if values else None))
    return {scope: panels for scope, panels in out.items() if panels}


def panel(chart: Chart, points: list[float | None], name: str) -> str:
    """One pass's counts as a small line chart: a polyline per run of present points (a gap where the pass is
    absent), the axis from zero to its highest count; drawn here, a few hundred bytes (pygal's were 13 KB each)."""
    width, height = PANEL_SIZE
    left, top, right, bottom = 44, 22, 8, 14
    values = [v for v in points if v is not None]
    low, high = min(values), max(values)
    step = (width - left - right) / max(1, len(points) - 1)

    def y(v: float) -> float:  # the axis starts at zero: 20 -> 21 nodes is a small step, not a cliff
        return top + (height - top - bottom) * (1 - v / (high or 1))

    runs: list[list[str]] = [[]]
    for i, v in enumerate(points):
        if v is None:
            runs.append([])
        else:
            runs[-1].append(f"{left + i * step:.1f},{y(v):.1f}")
    lines = "".join(f'<polyline points="{" ".join(r)}"/>' if len(r) > 1 else
                    f'<circle cx="{r[0].split(",")[0]}" cy="{r[0].split(",")[1]}" r="1.5"/>' for r in runs if r)
    first, last = chart.commits[0], chart.commits[-1]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="tgstore-spark" viewBox="0 0 {width} {height}" '
            f'font-family="ui-sans-serif, DejaVu Sans, sans-serif" font-size="10">'
            f'<title>{escape(name)}: {low:g} to {high:g} nodes</title>'
            f'<text x="4" y="13" font-size="11" font-weight="bold">{escape(name[:48])}</text>'
            f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" fill="#555">{high:g}</text>'
            f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end" fill="#555">0</text>'
            f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#ccc"/>'
            f'<g fill="none" stroke="#3d7eb3" stroke-width="1.5">{lines}</g>'
            f'<text x="{left}" y="{height - 2}" fill="#777" font-size="9">{escape(label(first[1], first[2]))}</text>'
            f'<text x="{width - right}" y="{height - 2}" text-anchor="end" fill="#777" font-size="9">'
            f"{escape(label(last[1], last[2]))}</text></svg>")


def empty_hint(chart: Chart) -> str | None:
    """What to run, when the chart has no value to draw."""
    if any(v is not None for points in chart.series.values() for v in points):
        return None
    return EMPTY_HINTS.get(chart.metric, DEFAULT_HINT)


def passes_overlaid(title: str, names: list[str], series: dict[str, list[int | None]]) -> str:
    """Node count after each pass of one kernel, one line per commit, the axis from zero: two commits' pipelines
    (aligned by pass name) drawn over each other."""
    line = pygal.Line(style=STYLE, width=1100, height=380, x_label_rotation=50, show_legend=True,
                      legend_at_bottom=True, js=[], disable_xml_declaration=True, title=title, y_title="nodes",
                      include_x_axis=True, allow_interruptions=True, dots_size=2, truncate_label=28,
                      show_minor_x_labels=len(names) <= 60, x_labels_major_count=30)
    line.x_labels = names
    for name, points in series.items():
        line.add(name, points)
    return line.render(is_unicode=True)


def label(sha: str, version: str | None) -> str:
    short = sha[5:13] if sha.startswith("tree:") else sha[:8]
    return f"{version} {short}" if version else short


def render(chart: Chart, link: Any = None) -> str:
    """The chart as an SVG document; `link(run_id)` gives each point's URL. One <circle class="dot"> per point."""
    named = len(chart.series) > 1 or chart.metric == "time"  # a kernel's time is named even when it is alone
    legend_rows = -(-len(chart.series) // 4) if named else 0
    line = pygal.Line(style=STYLE, width=1100, height=460 + 24 * legend_rows, x_label_rotation=35,
                      show_legend=named, legend_at_bottom=True, legend_at_bottom_columns=4,
                      truncate_legend=40, js=[],
                      disable_xml_declaration=True, show_minor_x_labels=len(chart.commits) <= 40,
                      x_labels_major_count=20, y_title=METRICS[chart.metric][1], allow_interruptions=True,
                      title=chart.title, dots_size=3, include_x_axis=True)
    line.x_labels = [label(sha, version) for _run, sha, version in chart.commits]
    for name, points in chart.series.items():
        line.add(name, [None if v is None else ({"value": v, "xlink": {"href": link(chart.commits[i][0]),
                                                                        "target": "_self"}} if link else v)
                        for i, v in enumerate(points)])
    return line.render(is_unicode=True)


def cases(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM cases ORDER BY name")]
