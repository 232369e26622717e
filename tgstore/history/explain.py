"""Why a step happened: the kernel's AST or generated source changed between its two commits (codegen), or did not
(the same source on the same machine and compiler got faster or slower: runtime, compile flags, or the machine's load,
which the calibration loop shows)."""

from __future__ import annotations

import sqlite3

from tgstore.history.series import Point

LOAD_CHANGE = 1.2  # a calibration loop this much slower or faster at one side: the machine's load moved


# ---------------------------------------------------------------------------------------------------------------------

def sources(conn: sqlite3.Connection, run_id: int | None, case: str, position: int | None) -> set[tuple]:
    if run_id is None:
        return set()
    if position is None:
        rows = conn.execute('SELECT position, renderer, source_hash FROM v_sources WHERE run_id = ? AND "case" = ?',
                            (run_id, case))
    else:
        rows = conn.execute('SELECT position, renderer, source_hash FROM v_sources WHERE run_id = ? AND "case" = ? '
                            "AND position = ?", (run_id, case, position))
    return set(rows)


def explain(conn: sqlite3.Connection, metric: str, case: str, position: int | None, before: Point, after: Point
            ) -> tuple[str, str]:
    """('codegen' | 'same source', a sentence) for the step between two points of a series."""
    changed = []
    if position is not None and before.kernel_hash != after.kernel_hash:
        changed.append("its AST")
    a, b = sources(conn, before.run_id, case, position), sources(conn, after.run_id, case, position)
    if a and b and a != b:
        renderers = sorted({r for _p, r, _h in a ^ b})
        changed.append(f"its generated source ({', '.join(renderers)})")
    elif metric == "time" and position is not None and before.program != after.program:
        changed.append(f"the timed program ({before.program} -> {after.program})")
    if changed:
        what = "the kernel" if position is not None else "the case's kernels"
        return "codegen", f"{what}: {' and '.join(changed)} changed"
    if not (a and b) and position is not None and before.kernel_hash is None:
        return "same source", "no stored source to compare: the explanation is a guess"
    load = ""
    if before.calibration_ns and after.calibration_ns:
        ratio = after.calibration_ns / before.calibration_ns
        if ratio > LOAD_CHANGE or ratio < 1 / LOAD_CHANGE:
            load = f"; the calibration loop ran {ratio:.2f}x as long at the later timing (machine load moved)"
    if metric == "time":
        return "same source", ("the same AST and source on the same machine and compiler: tinygrad's runtime or "
                               f"compile flags, or the machine{load}")
    return "same source", f"the same AST and output: tinygrad's passes did the same work in another time{load}"
