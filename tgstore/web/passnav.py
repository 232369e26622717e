"""Where a pass graph sits in its kernel's pipeline: the kernel's passes in order, the one shown, and the previous
and next ones, for the graph page's stepping and the rewrite page. A pass is named by its run, case, kernel
position, renderer and pass position (the same graph can come out of many passes; the URL says which one)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from tgstore.web import urls

PASSES_SQL = """
SELECT si.position AS kernel, kn.name AS kernel_name, p.renderer, pe.position, pe.name, pe.depth, pe.node_count,
       g.hash AS graph_hash, pe.rewrites_blob_id IS NOT NULL AS has_steps
FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
JOIN programs p ON p.schedule_item_id = si.id JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
LEFT JOIN graphs g ON g.id = pe.graph_id
WHERE rc.run_id = ? AND k.name = ? AND si.position = ? AND p.renderer = ?
ORDER BY pe.position
"""
SCHEDULE_SQL = """
SELECT NULL, NULL, NULL, pe.position, pe.name, pe.depth, pe.node_count, g.hash, pe.rewrites_blob_id IS NOT NULL
FROM run_cases rc JOIN cases k ON k.id = rc.case_id JOIN case_results cr ON cr.id = rc.case_result_id
JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id LEFT JOIN graphs g ON g.id = pe.graph_id
WHERE rc.run_id = ? AND k.name = ?
ORDER BY pe.position
"""


@dataclass(frozen=True)
class PassKey:
    run: int
    case: str
    kernel: int | None  # None: the case's scheduler passes
    renderer: str | None
    position: int

    def at(self, position: int) -> PassKey:
        return PassKey(self.run, self.case, self.kernel, self.renderer, position)

    @staticmethod
    def from_args(args: Any) -> PassKey | None:
        try:
            run, case, position = int(args.get("run")), args.get("case"), int(args.get("pass"))
        except (TypeError, ValueError):
            return None
        kernel = args.get("kernel")
        if not case:
            return None
        return PassKey(run, case, int(kernel) if kernel not in (None, "") and kernel.isdigit() else None,
                       args.get("renderer") or None, position)

    @staticmethod
    def from_use(use: dict[str, Any]) -> PassKey | None:
        if use.get("pass_position") is None:
            return None
        return PassKey(use["run_id"], use["case"], use.get("position"), use.get("renderer"), use["pass_position"])


@dataclass
class PassInfo:
    position: int
    name: str
    depth: int
    node_count: int | None
    graph_hash: str | None
    has_steps: bool


@dataclass
class PassContext:
    key: PassKey
    kernel_name: str | None
    passes: list[PassInfo] = field(default_factory=list)

    @property
    def current(self) -> PassInfo | None:
        return next((p for p in self.passes if p.position == self.key.position), None)

    def _with_graph(self, step: int) -> PassInfo | None:
        order = self.passes if step > 0 else list(reversed(self.passes))
        seen = False
        for p in order:
            if seen and p.graph_hash:
                return p
            seen = seen or p.position == self.key.position
        return None

    @property
    def previous(self) -> PassInfo | None:
        """The nearest earlier pass with a graph: its output is this pass's input."""
        return self._with_graph(-1)

    @property
    def next(self) -> PassInfo | None:
        return self._with_graph(1)

    def graph_url(self, p: PassInfo) -> str:
        key = self.key.at(p.position)
        return urls.graph(p.graph_hash or "", run=key.run, case=key.case, kernel=key.kernel, renderer=key.renderer,
                          pass_position=key.position)

    def steps_url(self, p: PassInfo, **extra: Any) -> str:
        key = self.key.at(p.position)
        return urls.rewrites(key.run, key.case, key.position, key.kernel, key.renderer, **extra)

    @property
    def where(self) -> str:
        kernel = "scheduler" if self.key.kernel is None else f"kernel {self.key.kernel} {self.kernel_name or ''}"
        renderer = f" ({self.key.renderer})" if self.key.renderer else ""
        return f"{self.key.case} {kernel}{renderer}".replace("  ", " ")


def pass_context(conn: sqlite3.Connection, key: PassKey) -> PassContext | None:
    if key.kernel is None:
        rows = conn.execute(SCHEDULE_SQL, (key.run, key.case)).fetchall()
    else:
        rows = conn.execute(PASSES_SQL, (key.run, key.case, key.kernel, key.renderer)).fetchall()
    if not rows:
        return None
    return PassContext(key, rows[0][1], [PassInfo(r[3], r[4], r[5], r[6], r[7], bool(r[8])) for r in rows])


def commit_of_run(conn: sqlite3.Connection, run: int) -> tuple[str, str | None] | None:
    row = conn.execute("SELECT c.sha, c.version FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                       "WHERE r.id = ?", (run,)).fetchone()
    return (row[0], row[1]) if row else None
