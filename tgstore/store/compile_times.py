"""Compile times (`--time`, `--compile-times`): how long tinygrad took to schedule each case and to lower each kernel
for each renderer, and each named pass's share, stored with the timing session (the commit on its machine), never
with the content-addressed results (an unchanged commit still costs one run row).

Measured in the extraction child (extract/child/case.py, compile_record) around tinygrad's own scheduling and lowering
entry points, with the pass recorder's own work left out (passes.PassRecorder.overhead). The device compiler
(clang) is not part of it: the child lowers with the compilers replaced by a no-op. Totals are per kernel and
renderer; a pass's time includes the passes nested in it (depth > 0).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, text

from tgstore.bundle import Bundle
from tgstore.db.models.timing_tables import CompilePassList, CompileTime
from tgstore.store.rows import kernel_rows
from tgstore.store.timings import CaseTimes, TimingError

SCHEDULE = "schedule"  # the renderer column of a case's scheduling row (position -1)


def compile_rows(bundle: Bundle) -> list[tuple[str, int, dict[str, Any], dict[str, Any] | None]]:
    """(case name, position, compile record, the item or None) of every compile record in the bundle."""
    rows = []
    for case in bundle.cases:
        if case.get("compile"):
            rows.append((case["name"], -1, case["compile"], None))
        for item in case["schedule"]:
            for program in item.get("programs") or []:
                if program.get("compile"):
                    rows.append((case["name"], item["position"], program["compile"], item))
    return rows


def store_compile_times(conn: Connection, bundle: Bundle, session_id: int, case_ids: dict[str, int]) -> int:
    """The bundle's compile records as rows of `session_id`; returns how many."""
    found = compile_rows(bundle)
    if not found:
        return 0
    lists: dict[str, str] = {}
    for _case, _position, record, _item in found:
        names = json.dumps([[name, depth] for name, depth, _s in record["passes"]], separators=(",", ":"))
        lists.setdefault(hashlib.sha256(names.encode()).hexdigest(), names)
    marks = ",".join("?" * len(lists))
    known = dict(conn.exec_driver_sql(f"SELECT hash, id FROM compile_pass_lists WHERE hash IN ({marks})",
                                      tuple(lists)).fetchall())
    for digest, names in lists.items():
        if digest not in known:
            known[digest] = conn.execute(insert(CompilePassList).values(hash=digest, names=names)
                                         ).inserted_primary_key[0]
    hashes = {id(item): kernel_rows(item)[0] for _c, _p, _r, item in found if item is not None}
    wanted = sorted(set(hashes.values()))
    kernel_ids = dict(conn.exec_driver_sql(
        f"SELECT hash, id FROM kernels WHERE hash IN ({','.join('?' * len(wanted))})", tuple(wanted)).fetchall()) \
        if wanted else {}
    rows = []
    for case, position, record, item in found:
        names = json.dumps([[name, depth] for name, depth, _s in record["passes"]], separators=(",", ":"))
        digest = hashlib.sha256(names.encode()).hexdigest()
        rows.append({"session_id": session_id, "case_id": case_ids[case], "position": position,
                     "renderer": record["renderer"], "total_us": round(record["seconds"] * 1e6),
                     "kernel_id": kernel_ids.get(hashes[id(item)]) if item is not None else None,
                     "pass_list_id": known[digest] if record["passes"] else None,
                     "pass_us": json.dumps([round(s * 1e6) for _n, _d, s in record["passes"]], separators=(",", ":"))
                     if record["passes"] else None})
    conn.execute(insert(CompileTime), rows)
    return len(rows)


@dataclass
class KernelCompile:
    index: int  # -1: the case's scheduling
    name: str | None
    renderer: str
    total_us: int
    passes: list[tuple[str, int, int]]  # (name, depth, µs) in the order they ran

    def top(self, n: int = 3) -> list[tuple[str, int]]:
        """The `n` top-level passes that took longest, by name (a pass run several times adds up)."""
        by_name: dict[str, int] = {}
        for name, depth, us in self.passes:
            if depth == 0:
                by_name[name] = by_name.get(name, 0) + us
        return sorted(by_name.items(), key=lambda x: -x[1])[:n]


def case_compile_times(conn: Connection, case: str, sha: str, machine: str) -> list[KernelCompile]:
    """The latest compile times of `case` at `sha` on `machine` (a fingerprint), scheduling first."""
    rows = conn.execute(text(
        'SELECT position, kernel_name, renderer, total_us, pass_names, pass_us FROM v_compile_times '
        'WHERE sha = :sha AND "case" = :case AND machine = :m ORDER BY position, renderer'),
        {"sha": sha, "case": case, "m": machine}).all()
    out = []
    for position, name, renderer, total, names, us in rows:
        passes = [(n, d, u) for (n, d), u in zip(json.loads(names), json.loads(us), strict=True)] if names else []
        out.append(KernelCompile(position, name, renderer, total, passes))
    return out


def compile_machines(conn: Connection, sha: str, case: str) -> list[str]:
    return conn.execute(text('SELECT DISTINCT machine FROM v_compile_times WHERE sha = :sha AND "case" = :case'),
                        {"sha": sha, "case": case}).scalars().all()


def as_case_times(conn: Connection, case: str, sha: str, machine: str | None, renderer: str) -> Any:
    """`case`'s compile times at `sha` as a timings.CaseTimes (each kernel's lowering for `renderer` as its ns), so
    that bisect --metric compile runs the time bisect's search and confirmation unchanged. No spread is known (one
    lowering per extraction): the confirmation by re-timing is what tells noise."""
    machines = compile_machines(conn, sha, case)
    if machine is not None:
        machines = [m for m in machines if m.startswith(machine)]
    if len(machines) != 1:
        what = "no compile times" if not machines else "compile times of several machines (name one with --machine)"
        raise TimingError(f"case {case!r} has {what} at {sha[:12]}")
    session_id, calibration, details = conn.execute(text(
        "SELECT s.id, s.calibration_ns, m.details FROM timing_sessions s JOIN machines m ON m.id = s.machine_id "
        "JOIN v_compile_times t ON t.session_id = s.id WHERE t.sha = :sha AND t.machine = :m AND t.\"case\" = :c "
        "ORDER BY s.id DESC LIMIT 1"), {"sha": sha, "m": machines[0], "c": case}).one()
    kernels = [{"index": k.index, "name": k.name, "status": "ok", "ns_min": k.total_us * 1000, "ns_median": None,
                "spread": 0.0, "ops": None, "bytes": None, "gflops": None, "gbps": None, "error": None}
               for k in case_compile_times(conn, case, sha, machines[0]) if k.renderer == renderer and k.index >= 0]
    return CaseTimes(case, sha, {"fingerprint": machines[0], **json.loads(details)}, session_id, calibration, kernels)
