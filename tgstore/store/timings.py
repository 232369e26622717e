"""Kernel timings (`--time`): stored apart from the content-addressed results, read back per case and commit, and
compared only within one machine.

A bundle with a header `timing` block becomes a timing session of its commit on its machine, also when its run is
already stored (re-timing a commit keeps the run and adds a session); the latest session per commit, machine and
case answers `tgstore times`, `v_kernel_times`, the queries and bisect --metric time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, text

from tgstore.bundle import Bundle
from tgstore.db.models.timing_tables import KernelTiming, Machine, TimingSession
from tgstore.extract.child.machine import codegen_thread_env, machine
from tgstore.store.rows import get_or_create, insert_returning_id, kernel_rows
from tgstore.store.timing_limits import MIN_KERNEL_NS  # noqa: F401 (its callers' name for it)


class TimingError(Exception):
    """A timing question that cannot be answered as asked (no timings, mixed machines); a one-line message."""


def store_timings(conn: Connection, bundle: Bundle, *, commit_id: int, suite_id: int, run_id: int | None,
                  case_ids: dict[str, int], now: str) -> int | None:
    """The bundle's timings as a new session (its id), or None for a bundle extracted without --time."""
    header = bundle.header.get("timing")
    if not header:
        return None
    record = header["machine"]
    machine_id = get_or_create(conn, Machine, {"fingerprint": record["fingerprint"]}, {
        "hostname": record.get("hostname"), "cpu_model": record.get("cpu_model"), "cores": record.get("cores"),
        "device": record.get("device"), "compiler": record.get("compiler"),
        "compiler_version": record.get("compiler_version"), "details": json.dumps(record, sort_keys=True)})
    session_id = insert_returning_id(
        conn, TimingSession,
        commit_id=commit_id, suite_id=suite_id, backend=bundle.header["backend"], run_id=run_id,
        machine_id=machine_id, timer=header.get("timer"), runs=header.get("runs"), warmup=header.get("warmup"),
        calibration_ns=header.get("calibration_ns"), calibration_end_ns=(bundle.end or {}).get("calibration_end_ns"),
        reference_ns=header.get("reference_ns"),
        started_at=bundle.header.get("started_at"), ingested_at=now)
    hashes = {id(item): kernel_rows(item)[0] for case in bundle.cases for item in case["schedule"]
              if item.get("timing")}
    wanted = sorted(set(hashes.values()))
    marks = ",".join("?" * len(wanted))
    kernel_ids = dict(conn.exec_driver_sql(f"SELECT hash, id FROM kernels WHERE hash IN ({marks})",
                                           tuple(wanted)).fetchall()) if wanted else {}
    rows = []
    for case in bundle.cases:
        for item in case["schedule"]:
            t = item.get("timing")
            if not t:
                continue
            error = t.get("error")
            if t.get("stderr"):
                error = f"{error or ''}\n--- stderr ---\n{t['stderr']}".strip()
            rows.append({"session_id": session_id, "case_id": case_ids[case["name"]], "position": item["position"],
                         "kernel_id": kernel_ids.get(hashes[id(item)]), "program": t.get("program"),
                         "status": t["status"], "ns_min": t.get("ns_min"), "ns_median": t.get("ns_median"),
                         "ns_max": t.get("ns_max"), "spread": t.get("spread"),
                         "samples": json.dumps(t["samples"]) if t.get("samples") else None, "ops": t.get("ops"),
                         "mem_bytes": t.get("mem"), "error": error})
    if rows:
        conn.execute(insert(KernelTiming), rows)
    return session_id


def this_machine(backend: str) -> str:
    """The fingerprint an extraction child started here will report: its environment is tgstore's own (the runner
    hands down no tinygrad settings; the child fixes the thread settings), whatever this shell has."""
    return machine(backend, codegen_thread_env({}))["fingerprint"]


def timed_commits(conn: Connection, suite_hash: str, backend: str, fingerprint: str, *,
                  compile_only: bool = False, runs: int | None = None) -> set[str]:
    """Shas with a timing session of this suite and backend on this machine that timed kernels (`compile_only`: that
    recorded compile times, as every session since they exist does); `runs`: with at least that many timed runs a
    kernel (a session of the child's adaptive count says no number, so it holds none that was asked for)."""
    # a session of --time has a warm-up (also in an era that cannot time: then its `timing` is missing); one of
    # --compile-times alone has none
    which = "EXISTS (SELECT 1 FROM compile_times t WHERE t.session_id = s.id)" if compile_only else \
        "s.warmup IS NOT NULL"
    if runs is not None and not compile_only:
        which += " AND s.runs >= :runs"
    return set(conn.execute(text(
        "SELECT DISTINCT c.sha FROM timing_sessions s JOIN tinygrad_commits c ON c.id = s.commit_id "
        "JOIN suites su ON su.id = s.suite_id JOIN machines m ON m.id = s.machine_id "
        f"WHERE su.hash = :suite AND s.backend = :backend AND m.fingerprint = :m AND {which}"),
        {"suite": suite_hash, "backend": backend, "m": fingerprint, "runs": runs}).scalars())


# ---------------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------------

@dataclass
class CaseTimes:
    case: str
    commit: str
    machine: dict[str, Any]
    session_id: int
    calibration_ns: int | None
    kernels: list[dict[str, Any]]

    @property
    def total_ns(self) -> int:
        return sum(k["ns_min"] or 0 for k in self.kernels)

    @property
    def noise_ns(self) -> float:
        """The uncertainty of total_ns: each kernel's spread (of its best time) times its best time, summed."""
        return sum((k["spread"] or 0) * (k["ns_min"] or 0) for k in self.kernels)

    @property
    def complete(self) -> bool:
        return bool(self.kernels) and all(k["status"] == "ok" for k in self.kernels)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "commit": self.commit, "machine": self.machine, "kernels": self.kernels}


def resolve_commit(conn: Connection, commit: str | None) -> str:
    """A stored commit's full sha from a sha, a prefix or a version (the newest timed commit when None); TimingError
    if none or ambiguous."""
    if commit is None:
        sha = conn.execute(text("SELECT c.sha FROM timing_sessions s JOIN v_commits c ON c.commit_id = s.commit_id "
                                "ORDER BY c.history_rank DESC, s.id DESC LIMIT 1")).scalar()
        if sha is None:
            raise TimingError("no timings stored: ingest with --time first")
        return sha
    found = conn.execute(text("SELECT sha FROM tinygrad_commits WHERE sha = :p OR sha LIKE :p || '%' LIMIT 2"),
                         {"p": commit}).scalars().all()
    if len(found) > 1 and commit not in found:
        raise TimingError(f"commit {commit!r} is ambiguous: give more of the sha")
    if not found:  # a version: its newest commit in history order
        found = conn.execute(text("SELECT sha FROM v_commits WHERE version = :p ORDER BY history_rank DESC LIMIT 1"),
                             {"p": commit}).scalars().all()
    if not found:
        raise TimingError(f"no stored commit {commit!r}")
    return commit if commit in found else found[0]


def machines_for(conn: Connection, sha: str, case: str) -> list[str]:
    return conn.execute(text(
        "SELECT DISTINCT m.fingerprint FROM timing_sessions s JOIN machines m ON m.id = s.machine_id "
        "JOIN tinygrad_commits c ON c.id = s.commit_id JOIN kernel_timings t ON t.session_id = s.id "
        "JOIN cases cs ON cs.id = t.case_id WHERE c.sha = :sha AND cs.name = :case ORDER BY s.id DESC"),
        {"sha": sha, "case": case}).scalars().all()


def case_times(conn: Connection, case: str, sha: str, machine: str | None = None) -> CaseTimes:
    """The latest timing of `case` at commit `sha` (on `machine`, a fingerprint or its prefix, if given). With
    several machines and none named: TimingError (times of different machines are never mixed silently)."""
    machines = machines_for(conn, sha, case)
    if machine is not None:
        machines = [m for m in machines if m.startswith(machine)]
    if not machines:
        raise TimingError(f"case {case!r} has no timings at {sha[:12]}" + (f" on machine {machine}" if machine else "")
                          + "; ingest it with --time")
    if len(machines) > 1:
        raise TimingError(f"case {case!r} at {sha[:12]} was timed on {len(machines)} machines "
                          f"({', '.join(machines)}): name one with --machine")
    fingerprint = machines[0]
    session_id, calibration, details = conn.execute(text(
        "SELECT s.id, s.calibration_ns, m.details FROM timing_sessions s JOIN machines m ON m.id = s.machine_id "
        "JOIN tinygrad_commits c ON c.id = s.commit_id WHERE c.sha = :sha AND m.fingerprint = :m "
        "AND EXISTS (SELECT 1 FROM kernel_timings t JOIN cases cs ON cs.id = t.case_id "
        "            WHERE t.session_id = s.id AND cs.name = :case) ORDER BY s.id DESC LIMIT 1"),
        {"sha": sha, "m": fingerprint, "case": case}).one()
    rows = conn.execute(text(
        'SELECT position, kernel_name, status, ns_min, ns_median, spread, ops, mem_bytes, gflops, gbps, error '
        'FROM v_kernel_times WHERE session_id = :s AND "case" = :case ORDER BY position'),
        {"s": session_id, "case": case}).mappings().all()
    kernels = [{"index": r["position"], "name": r["kernel_name"], "status": r["status"], "ns_min": r["ns_min"],
                "ns_median": r["ns_median"], "spread": r["spread"], "ops": r["ops"], "bytes": r["mem_bytes"],
                "gflops": r["gflops"], "gbps": r["gbps"], "error": r["error"]} for r in rows]
    return CaseTimes(case, sha, {"fingerprint": fingerprint, **json.loads(details)}, session_id, calibration,
                     kernels)


def same_machine(a: CaseTimes, b: CaseTimes) -> None:
    """TimingError unless both were timed on one machine: times of different machines are never compared."""
    if a.machine["fingerprint"] != b.machine["fingerprint"]:
        raise TimingError(f"{a.commit[:12]} was timed on machine {a.machine['fingerprint']} "
                          f"({a.machine.get('hostname')}, {a.machine.get('cpu_model')}) and {b.commit[:12]} on "
                          f"{b.machine['fingerprint']} ({b.machine.get('hostname')}, {b.machine.get('cpu_model')}): "
                          "times from different machines are not compared")


def comparable(conn: Connection, case: str, sha: str, against: str, machine: str | None) -> tuple[CaseTimes, CaseTimes]:
    """`case` at `sha` and at `against`, timed on one machine (`machine`, else the one `sha` was timed on); a
    TimingError saying so when `against` was timed only on other machines."""
    timed = case_times(conn, case, sha, machine)
    fingerprint = timed.machine["fingerprint"]
    others = machines_for(conn, against, case)
    if others and fingerprint not in others:
        base = case_times(conn, case, against, others[0])
        same_machine(base, timed)
    return timed, case_times(conn, case, against, fingerprint)




def slower_kernels(base: CaseTimes, other: CaseTimes, threshold: float,
                   kernel: int | None = None) -> list[dict[str, Any]]:
    """Kernels (same position) whose best time in `other` exceeds `base`'s by more than `threshold` (a fraction)
    and by more than both timings' noise (spread x best time of each); kernels under MIN_KERNEL_NS at the base are
    skipped. `kernel`: only that position."""
    same_machine(base, other)
    by_index = {k["index"]: k for k in base.kernels}
    found = []
    for k in other.kernels:
        b = by_index.get(k["index"])
        if b is None or (kernel is not None and k["index"] != kernel) or not b["ns_min"] or not k["ns_min"]:
            continue
        if b["ns_min"] < MIN_KERNEL_NS and kernel is None:
            continue
        delta = k["ns_min"] - b["ns_min"]
        noise = (b["spread"] or 0) * b["ns_min"] + (k["spread"] or 0) * k["ns_min"]
        if delta > threshold * b["ns_min"] and delta > noise:
            found.append({"index": k["index"], "name": k["name"], "base_name": b["name"], "base_ns": b["ns_min"],
                          "ns": k["ns_min"], "ratio": round(k["ns_min"] / b["ns_min"], 3), "noise_ns": round(noise)})
    return found


def slower(base: CaseTimes, other: CaseTimes, threshold: float, kernel: int | None = None) -> bool:
    """Whether `other` is slower than `base`: a kernel slower beyond threshold and noise (slower_kernels), or, when
    the schedules differ in length (kernels split or fused), the case's kernels' best times added up, beyond the
    threshold and the summed noise."""
    if slower_kernels(base, other, threshold, kernel):
        return True
    if kernel is not None or len(base.kernels) == len(other.kernels):
        return False
    delta = other.total_ns - base.total_ns
    return delta > threshold * base.total_ns and delta > base.noise_ns + other.noise_ns


def kernel_changes(base: CaseTimes, other: CaseTimes) -> list[dict[str, Any]]:
    """Kernels at the same position in both, by how much slower `other` is (ratio of best times), worst first."""
    same_machine(base, other)
    by_index = {k["index"]: k for k in base.kernels}
    out = []
    for k in other.kernels:
        b = by_index.get(k["index"])
        if b and b["ns_min"] and k["ns_min"]:
            out.append({"index": k["index"], "name": k["name"], "base_name": b["name"], "base_ns": b["ns_min"],
                        "ns": k["ns_min"], "ratio": round(k["ns_min"] / b["ns_min"], 3)})
    return sorted(out, key=lambda x: -x["ratio"])
