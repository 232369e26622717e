"""What proves that one program's kernels were optimized one after another, and on one thread (so in schedule
order): the dates of the roots their passes allocated, the user's word, the threads the events show
(tgstore.svod.readers.attribute files the stages by it).

Svod's `map_on_threads` (tensor/src/realize.rs) runs inline with SVOD_THREADS=1, on its rayon pool otherwise; a pool
can also run kernels one after another, in any order (seen in CI: kernel 2, then 1, then 0 on a loaded machine),
which prints what one thread prints. So one after another is not one thread: that is known only from the user
(`ingest-svod --svod-threads 1`), from thread ids or names on the events (every optimize-phase event on the thread
that printed the schedule), or from BEAM (tgstore.svod.readers.beam).
"""

from __future__ import annotations

from collections.abc import Sequence

from tgstore.svod.emission import KERNEL_INITIAL_FIRST
from tgstore.svod.readers.chains import Item
from tgstore.svod.readers.hints import one_thread
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, bare_name
from tgstore.svod.readers.naming import name_shown
from tgstore.svod.readers.program import Program

NAMES_SHOWN = 8  # kernels named in a problem line; more are counted

PRE_END = 10  # emission positions below this (after `kernel initial`) are the pre-optimization events
SERIAL_MIN_KINDS = 20  # kinds per kernel that one thread's output shows whole, when no tree dates the kernels


def one_after_another(groups: list[list[int]], kinds: list[int], kind_of: list[int | None], complete: bool,
                      items: Sequence[Item]) -> bool:
    """Whether the chains are whole kernels printed one after another, and optimized one after another: what one
    optimizing thread prints (and a pool that ran them so, in any order). Output alone could look so on threads that
    overlapped, so the trees date it: a pass that changes a graph allocates its new root from the one process-wide
    counter, so when kernels run one after another every root a kernel allocated is older than every root the next
    kernel allocated. Without trees, only long runs of one kernel's output count (threads that start together
    interleave at once)."""
    if not groups or any(kind_of[i] is None for g in groups for i in g):
        return False
    spans = sorted((g[0], g[-1]) for g in groups)
    if any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False)):
        return False
    whole = set(kinds)
    for n, group in enumerate(groups):
        mine = {kind_of[i] for i in group}
        if mine != whole and not (n == len(groups) - 1 and not complete and kind_of[group[0]] == kinds[0]):
            return False
    if len(groups) == 1:
        return True
    dated = [allocated_roots(group, kind_of, items) for group in groups]
    if all(dated):
        return all(max(a) < min(b) for a, b in zip(dated, dated[1:], strict=False))
    return len(kinds) >= SERIAL_MIN_KINDS


def allocated_roots(group: list[int], kind_of: list[int | None], items: Sequence[Item]) -> set[int]:
    """The roots a kernel's passes built (all but its AST's, which the schedule built). Without `kernel initial`
    (the optimizer at DEBUG) the AST's root is its first pre-optimization event's when that pass changed nothing:
    that one is left out too."""
    first = {items[i].root for i in group if kind_of[i] == KERNEL_INITIAL_FIRST}
    if not first and group and kind_of[group[0]] is not None and KERNEL_INITIAL_FIRST < kind_of[group[0]] < PRE_END:
        first = {items[group[0]].root}
    return {items[i].root for i in group if items[i].root is not None} - first


def merge_streams(groups: list[list[int]], items: Sequence[Item], kinds: list[int], kind_of: list[int | None],
                   complete: bool) -> list[list[int]] | None:
    """nextest keeps stdout and stderr apart: one thread's kernels are in the same order in both, so the n-th
    chain of one stream is the n-th of the other when each stream alone shows one thread."""
    by_stream: dict[int, list[list[int]]] = {}
    for group in groups:
        by_stream.setdefault(items[group[0]].stream, []).append(group)
    if set(by_stream) != {1, 2}:
        return None
    split = []
    for stream in (1, 2):
        mine = by_stream[stream]
        stream_kinds = sorted({kind_of[i] for g in mine for i in g if kind_of[i] is not None})
        if not one_after_another(mine, stream_kinds, kind_of, complete, items):
            return None
        split.append(mine)
    if len(split[0]) != len(split[1]):
        return None
    return [sorted(a + b) for a, b in zip(split[0], split[1], strict=True)]


def one_thread_known(log: SvodLog, program: Program) -> bool:
    """Whether one optimizing thread is known (module): shown by the events' threads, else stated by the user. A
    statement the threads shown contradict is not taken (a problem says so)."""
    shown = _threads_shown(log, program)
    if shown is None:
        return log.threads_stated == 1
    threads, caller = shown
    inline = threads <= caller
    if log.threads_stated == 1 and not inline:
        first = next(s for s in program.opt if s.source == "event")
        log.problems.append(Problem(first.file, first.line, "--svod-threads 1 was given, but the events' threads show "
                                    f"the kernels optimized on {len(threads - caller)} other threads than the one "
                                    "that printed the schedule (SVOD_THREADS=1 optimizes inline): read as the "
                                    "threads show"))
    return inline


def _threads_shown(log: SvodLog, program: Program) -> tuple[set[str], set[str]] | None:
    """The threads of the program's optimize-phase events and of its schedule's, where the subscriber printed them
    on every such event (None otherwise)."""
    threads = {s.thread for s in program.opt if s.source == "event"}
    caller = {s.thread for s in log.schedule_stages if s.schedule == program.schedule and s.source == "event"}
    if not threads or not caller or None in threads | caller:
        return None
    return threads, caller  # type: ignore[return-value]


def paired_by_name(sections: list[Kernel], groups: list[list[int]], named: list[str | None],
                    opt: list[Stage]) -> bool:
    """Whether names alone tie the n-th block to the n-th compiled kernel, whatever order a pool ran them in: each
    kernel's bare name is its alone in the program, and the block's documents name it or its trees spell it."""
    bares = [bare_name(k.name) if k.name else None for k in sections]
    for n, bare in enumerate(bares):
        if bare is None or bares.count(bare) > 1:
            return False
        if named[n] != bare and not name_shown(sections[n].name, [opt[i] for i in groups[n]]):
            return False
    return True


def unordered_blocks(log: SvodLog, program: Program, first: Stage, sections: list[Kernel]) -> Problem:
    """Why blocks printed one after another were not filed in order, and what would prove it, as the log shows."""
    bares = [bare_name(k.name) for k in sections if k.name]
    shared = sorted({b for b in bares if bares.count(b) > 1})
    why = (f"kernels of one bare name ({', '.join(shared[:NAMES_SHOWN])}) print alike" if shared else
           "no name proves which block is whose")
    filed = f"{why}; each block is filed only where a name proves its kernel, the rest stored unattributed"
    if _threads_shown(log, program) is not None:  # shown, and not one thread (or this would not be asked): a pool
        return Problem(first.file, first.line, f"{len(sections)} kernels were optimized one after another on Svod's "
                       f"pool (the events' threads are not the schedule's), in an order nothing proves, and {filed}. "
                       f"{one_thread(log, sections, 'every block filed in order')}")
    return Problem(first.file, first.line, f"{len(sections)} kernels were optimized one after another, but nothing "
                   "shows one optimizing thread: Svod's pool (SVOD_THREADS > 1) also runs kernels one after another, "
                   f"in any order, and {filed}. If the run had SVOD_THREADS=1, say so: ingest-svod --svod-threads 1 "
                   "(a log without thread ids cannot show it)")
