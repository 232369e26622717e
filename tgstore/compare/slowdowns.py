"""Two commits' kernel times side by side (ingest --time), for the slowdowns page: each kernel timed at both on one
machine (times of different machines are never compared), matched across the commits by AST or name
(tgstore.compare.kernel_match, not by schedule position), its best time at each in µs, their ratio and whether the
step is beyond the timings' own noise (spread × best time of each, as the kernel_slowdowns query decides)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tgstore.compare.kernel_match import KernelRow, match_kernel
from tgstore.compare.sql import AnyConnection, rows
from tgstore.store.commit_names import CommitRow, resolve_commit

TIMES_SQL = """
SELECT "case", position, kernel_name, kernel_hash, ns_min, spread, machine, hostname, backend
FROM v_kernel_times WHERE sha = :sha AND status = 'ok' AND (:case = '' OR "case" = :case)
  AND (:machine = '' OR machine LIKE :machine || '%')"""
MACHINES_SQL = """
SELECT machine, max(hostname) AS hostname, count(DISTINCT sha) AS commits, count(*) AS timings
FROM v_kernel_times WHERE sha IN (:a, :b) AND status = 'ok' AND (:machine = '' OR machine LIKE :machine || '%')
GROUP BY machine ORDER BY count(DISTINCT sha) DESC, count(*) DESC, machine"""
TIMED_COMMITS_SQL = """
SELECT c.sha, c.version, count(*) AS timings FROM v_kernel_times t JOIN v_commits c ON c.sha = t.sha
WHERE t.status = 'ok' GROUP BY c.sha ORDER BY c.history_rank DESC LIMIT 40"""
DEFAULT_THRESHOLD = 0.1


class SlowdownError(LookupError):
    """Nothing to compare: a commit unknown or untimed, or no machine timed both."""


@dataclass
class KernelTime:
    case: str
    position_a: int
    position_b: int
    kernel_a: str | None
    kernel_b: str | None
    us_a: float
    us_b: float
    ratio: float
    noise_us: float
    matched_by: str
    verdict: str  # "slower", "faster" or "within noise"


@dataclass
class Slowdowns:
    a: CommitRow
    b: CommitRow
    machine: str | None
    hostname: str | None
    threshold: float
    kernels: list[KernelTime] = field(default_factory=list)
    unmatched_a: list[tuple[str, int, str | None]] = field(default_factory=list)  # timed at a, no counterpart at b
    unmatched_b: list[tuple[str, int, str | None]] = field(default_factory=list)
    machines: list[dict[str, Any]] = field(default_factory=list)  # every machine that timed a or b

    @property
    def slower(self) -> list[KernelTime]:
        return [k for k in self.kernels if k.verdict == "slower"]

    def to_json(self) -> dict[str, Any]:
        return {"a": {"sha": self.a.sha, "version": self.a.version},
                "b": {"sha": self.b.sha, "version": self.b.version},
                "machine": self.machine, "hostname": self.hostname, "threshold": self.threshold,
                "kernels": [asdict(k) for k in self.kernels],
                "unmatched_a": [{"case": c, "position": p, "kernel": n} for c, p, n in self.unmatched_a],
                "unmatched_b": [{"case": c, "position": p, "kernel": n} for c, p, n in self.unmatched_b],
                "machines": self.machines}


def timed_commits(conn: AnyConnection) -> list[tuple[str, str | None]]:
    """(sha, version) of the newest commits with kernel times, newest first."""
    return [(r["sha"], r["version"]) for r in rows(conn, TIMED_COMMITS_SQL)]


def compare_times(conn: AnyConnection, ref_a: str, ref_b: str, *, case: str | None = None, machine: str | None = None,
                  threshold: float = DEFAULT_THRESHOLD) -> Slowdowns:
    a, b = resolve_commit(conn, ref_a), resolve_commit(conn, ref_b)
    machines = rows(conn, MACHINES_SQL, a=a.sha, b=b.sha, machine=machine or "")
    both = [m for m in machines if m["commits"] == 2]
    out = Slowdowns(a, b, None, None, threshold, machines=machines)
    if not both:
        return out
    chosen = both[0]
    out.machine, out.hostname = chosen["machine"], chosen["hostname"]
    side = {}
    for commit in (a, b):
        side[commit.sha] = rows(conn, TIMES_SQL, sha=commit.sha, case=case or "", machine=chosen["machine"])
    by_case: dict[str, tuple[list[dict], list[dict]]] = {}
    for r in side[a.sha]:
        by_case.setdefault(r["case"], ([], []))[0].append(r)
    for r in side[b.sha]:
        by_case.setdefault(r["case"], ([], []))[1].append(r)
    for name, (at_a, at_b) in sorted(by_case.items()):
        kernels_a = [KernelRow(r["position"], r["kernel_name"], r["kernel_hash"] or "") for r in at_a]
        taken: set[int] = set()
        for rb in at_b:
            mine = KernelRow(rb["position"], rb["kernel_name"], rb["kernel_hash"] or "")
            match = match_kernel(conn, mine, [k for k in kernels_a if k.position not in taken],
                                 len(at_b) == len(at_a))
            if match is None:
                out.unmatched_b.append((name, rb["position"], rb["kernel_name"]))
                continue
            taken.add(match.position)
            ra = next(r for r in at_a if r["position"] == match.position)
            noise = (ra["spread"] or 0) * ra["ns_min"] + (rb["spread"] or 0) * rb["ns_min"]
            ratio = rb["ns_min"] / ra["ns_min"] if ra["ns_min"] else float("inf")
            step = abs(rb["ns_min"] - ra["ns_min"])
            verdict = "within noise"
            if step > noise and ratio > 1 + threshold:
                verdict = "slower"
            elif step > noise and ratio < 1 / (1 + threshold):
                verdict = "faster"
            out.kernels.append(KernelTime(name, match.position, rb["position"], ra["kernel_name"], rb["kernel_name"],
                                          round(ra["ns_min"] / 1000, 3), round(rb["ns_min"] / 1000, 3),
                                          round(ratio, 3), round(noise / 1000, 3), match.how, verdict))
        out.unmatched_a += [(name, r["position"], r["kernel_name"]) for r in at_a if r["position"] not in taken]
    out.kernels.sort(key=lambda k: (-k.ratio, k.case, k.position_b))
    return out
