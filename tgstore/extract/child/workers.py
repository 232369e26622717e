"""Cases run in forked worker processes (`--jobs N`), their records written in case order as one process would.

Workers are forked after set-up (tinygrad imported, matchers scanned, the heap frozen), so each starts a case from
the state the serial loop starts it from; each case is reset to what a fresh process gives before it runs
(case.CaseRunner.run), so which worker ran which case changes nothing a case stores. What one process keeps across
cases is made whole again here, in case order:
- graphs are written once, at the first case that uses them (each worker knows only the graphs it wrote);
- a rule first seen in a worker carries that worker's key: the rule is keyed here by its content, in case order,
  as the serial loop keys it, and the case's match counts are re-keyed to match (patterns.PatternRegistry.adopt);
- what the workers read and used joins the run's own (inputs.InputWatch).
Standard library only (concurrent.futures: a worker that dies fails the pool instead of hanging it).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .extractor import Extractor
from .inputs import InputWatch
from .lifetime import die_with_parent

Case = tuple[str, Callable, str | None]


class Emit:
    """Where the extractor's records go: the bundle in the parent, a case's list in a worker."""

    def __init__(self, to: Callable[[dict], None]) -> None:
        self.to = to

    def __call__(self, rec: dict) -> None:
        self.to(rec)


@dataclass
class Forked:
    """What a forked worker runs cases with (set before the fork: workers inherit it)."""

    ex: Extractor
    cases: list[Case]
    emit: Emit
    watch: InputWatch
    parent: int  # the pid workers die with


FORKED: Forked | None = None


def run_one(index: int) -> tuple[int, list[dict], dict, dict[str, set[str]]]:
    """In a worker: the case's records emitted while it ran, its case record, and what the worker has read."""
    assert FORKED is not None
    emitted: list[dict] = []
    FORKED.emit.to = emitted.append
    name, fn, doc = FORKED.cases[index]
    rec = FORKED.ex.runner.run(name, fn, doc)
    return os.getpid(), emitted, rec, FORKED.watch.paths()


def worker_init() -> None:
    assert FORKED is not None
    die_with_parent(FORKED.parent)
    # the worker stands in for the one process: tinygrad opens devices only from "MainProcess" (0.10-)
    multiprocessing.current_process().name = "MainProcess"


@dataclass
class Merge:
    """The parent's side: graphs written, and each worker's keys of rules to the run's."""

    ex: Extractor
    write: Callable[[dict], None]
    graphs: set[str] = field(default_factory=set)
    keys: dict[int, dict[str, str]] = field(default_factory=dict)  # worker pid -> its key -> the run's key

    def case(self, pid: int, emitted: list[dict], rec: dict) -> dict:
        keys = self.keys.setdefault(pid, {})
        for record in emitted:
            kind = record.get("kind")
            if kind == "graph":
                if record["hash"] in self.graphs:
                    continue
                self.graphs.add(record["hash"])
            elif kind == "pattern":
                keys[record["key"]] = self.ex.patterns.adopt(record)
                continue  # written by adopt, under the run's key, when it is new
            self.write(record)
        if rec.get("matches"):
            rec["matches"] = sorted(({**m, "pattern": keys.get(m["pattern"], m["pattern"])} for m in rec["matches"]),
                                    key=lambda m: int(m["pattern"][1:]))
        return rec


def can_fork() -> bool:
    """Whether this platform forks (workers start from the set-up process's state; not on Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


def run_in_workers(ex: Extractor, cases: list[Case], jobs: int, emit: Emit, watch: InputWatch,
                   write: Callable[[dict], None]) -> Iterator[dict]:
    """Each case's record, in case order, its graphs and rules written before it; raises
    BrokenProcessPool when a worker dies (the bundle then has no end record, as when the one process dies)."""
    global FORKED
    FORKED = Forked(ex, cases, emit, watch, os.getpid())
    merge = Merge(ex, write, set(ex.recorder.seen_graphs) if ex.recorder is not None else set())
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=worker_init) as pool:
        for pid, emitted, rec, seen in pool.map(run_one, range(len(cases))):
            watch.add(seen)
            yield merge.case(pid, emitted, rec)
