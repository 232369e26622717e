"""BEAM's candidates: `[per-stage]` lines (and dumps, documents) printed by `svod-beam-worker` processes, which are
never a kernel's stages. Set aside with one note.

What Svod does with `BEAM=N` (npatsakula/svod@3e06443b; facts, not code):
* `compile_missing_kernels` (tensor/src/realize.rs) optimizes on one thread when the strategy is BEAM ("Beam already
  fans out over its own worker processes"), so a program's kernels follow one another;
* per kernel, `beam_search_optimize` runs `prepare_scheduler` (the pre-optimization: TRACE `kernel initial`, the
  five DEBUG `pre-opt:` events), then compiles candidates in waves in `svod-beam-worker` processes, then prints
  `beam_search_optimize: completed` (DEBUG, `svod_tensor::realize`: only with that target enabled) and runs
  `apply_post_optimization_with_config` on the chosen opts in the parent: `kernel initial` again, then per stage its
  DEBUG event and `print_stage` (no `optimized`/`postrange` documents on this path);
* a worker (tensor/src/beam_worker.rs) inherits stderr and the environment but sets up no tracing subscriber: per
  candidate `prepare_scheduler`, `apply_remote_candidate`, `apply_post_optimization_with_config` (so its
  `print_stage` lines: `[per-stage]`, `[dump-stage]`, `[dump-canonical]`, with no event around them) and
  `program_from_sink_with_renderer` / `get_program` (`program`, `linearized` documents); a candidate that fails
  stops part way. On CUDA/AMD/Metal `compile_workers` defaults to the thread budget: several worker processes print
  at once, with no lock between them, so their lines can cut each other;
* `BEAM_DEBUG` adds `[beam] start ...`, `[beam] compile wave ...`, `[beam] final ...` (eprintln!), optional.

So a candidate is told by what no kernel prints: with the optimizer's DEBUG events in the log, every kernel's
`[per-stage] L` (L after 00-initial) follows its own event L, one line per event; a stderr line no earlier event
accounts for, printed after a kernel's pre-optimization and before its post-optimization, can only be a worker's (one
no event accounts for elsewhere is a log cut at its start, not BEAM). Where the log shows that (or BEAM's markers),
the program ran on one thread and
the candidates are what stderr printed between a kernel's pre-optimization (its `pre-opt: simplify ranges` event,
or `[beam] start`) and its post-optimization (its second `kernel initial`, `beam_search_optimize: completed`,
`[beam] final`, or, at DEBUG level, its `Stage 8` event, whose own `00-initial` lines are the last ones before it).
Where no order ties stderr to the events (nextest keeps the streams apart) every stderr stage is set aside.
"""

from __future__ import annotations

from collections import Counter

from tgstore.spelling.svod import maps
from tgstore.svod.emission import CANONICAL_AFTER, post_labels
from tgstore.svod.readers.model import Problem, Stage, SvodLog
from tgstore.svod.readers.program import BEAM_DONE, Program

STDERR_SOURCES = ("per-stage", "dump-stage", "dump-canonical")
PRE_LAST = "pre-simplify-ranges"
KERNEL_INITIAL = "kernel-initial-or-00"
STARTS = ("[beam] start",)
ENDS = (BEAM_DONE, "[beam] final")


def unexplained(program: Program) -> list[Stage]:
    """The stderr stages of post-optimization labels that no earlier event of their label accounts for (each event
    accounts for one line per source), when the log holds the optimizer's post-optimization events; [] otherwise.
    A line lost to a problem that may have been such an event excuses one line of its label."""
    posts = [label for label in post_labels() if label != "00-initial"]
    opt = sorted(program.opt, key=lambda s: s.order)
    if not any(s.source == "event" and s.label in posts for s in opt):
        return []
    after = {doc: label for label, doc in CANONICAL_AFTER.items()}
    pending: Counter[tuple[str, str]] = Counter()
    out: dict[str, list[Stage]] = {}
    for stage in opt:
        if stage.source == "event" and stage.label in posts:
            for source in STDERR_SOURCES:
                pending[(source, stage.label)] += 1
            if stage.label in CANONICAL_AFTER:
                pending[("dump-canonical", CANONICAL_AFTER[stage.label])] += 1
        elif stage.source in STDERR_SOURCES and (stage.label in posts or stage.label in after):
            key = (stage.source, stage.label)
            if pending[key] > 0:
                pending[key] -= 1
            else:
                out.setdefault(after.get(stage.label, stage.label), []).append(stage)
    spare: Counter[str] = Counter()
    for _order, kinds in program.lost:
        for label, source in [("*", "event")] if kinds is None else kinds:
            if source == "event":
                spare[label] += 1
    return [s for label, stages in out.items() if len(stages) > spare[label] + spare["*"] for s in stages]


def _regions(program: Program, opt: list[Stage]) -> list[tuple[int, int, bool]]:
    """(start, end, at_stage_8) reading orders between which a kernel's candidates were printed (one thread)."""
    events = [s for s in opt if s.source == "event"]
    starts = [s.order for s in events if s.label == PRE_LAST] + [o for o, what in program.markers if what in STARTS]
    ends = [(o, False) for o, what in program.markers if what in ENDS]
    pre_lasts = sorted(s.order for s in events if s.label == PRE_LAST)
    ends += [(s.order, False) for s in events if s.label == KERNEL_INITIAL and any(p < s.order for p in pre_lasts)]
    first_post = post_labels()[1] if len(post_labels()) > 1 else None
    ends += [(s.order, True) for s in events if s.label == first_post]
    ends.sort()
    regions: dict[int, tuple[int, int, bool]] = {}
    for start in sorted(starts):
        end = next(((o, at8) for o, at8 in ends if o > start), None)
        if end is not None:  # the last start before an end opens its region
            regions[end[0]] = (start, end[0], end[1])
    return sorted(regions.values())


def _own_initial(opt: list[Stage], start: int, end: int) -> set[int]:
    """At DEBUG level the chosen kernel's own `00-initial` lines (print_stage before its Stage 8 pass) are the last
    `00-initial` stderr stages before its Stage 8 event, one per source."""
    own: set[int] = set()
    seen: set[str] = set()
    for stage in sorted((s for s in opt if start < s.order < end), key=lambda s: -s.order):
        if stage.source not in STDERR_SOURCES or stage.label != "00-initial":
            break
        if stage.source not in seen:
            seen.add(stage.source)
            own.add(id(stage))
    return own


def _no_more_lines_than_events(log: SvodLog, opt: list[Stage]) -> bool:
    """Whether stderr holds no more `[per-stage]` lines (or dumps) of a label than the run's stdout has events of: a
    kernel's own post-optimization prints one of each (print_stage, schedule/src/optimizer/mod.rs), a BEAM candidate
    only the line (no tracing in svod-beam-worker), so with streams apart that count is what tells candidates are
    there. (Streams apart, stderr's lines all fall in the run's last program: the events are counted over the run.)"""
    kinds = [Counter(s.label for s in opt if s.source == source) for source in ("per-stage", "dump-stage")]
    if not any(kinds):
        return False
    labels = _message_labels()
    events = Counter(labels.get(e.message or "") for e in log.events)
    events["00-initial"] = events.pop("kernel initial", 0) // 2  # emitted twice per kernel, the second is 00-initial
    # a label with no event at all (its level off: `kernel initial` is TRACE) says nothing either way
    return all(count <= events[label] for lines in kinds for label, count in lines.items() if events[label])


def _message_labels() -> dict[str, str]:
    found = {message: stage["label"] for stage in maps()["stages"] for message in stage.get("messages", [])}
    found["kernel initial"] = "kernel initial"
    return found


def set_aside(log: SvodLog, program: Program) -> bool:
    """Take BEAM's candidates out of the program (one problem says where they were); True when the program shows
    BEAM's output at all (its markers, or stderr lines no event accounts for)."""
    if log.tests_unproven and not program.markers:
        return False  # several tests' kernels, on libtest's threads, interleave: their lines explain one another
    orphans = unexplained(program)
    if not program.markers and not orphans:
        return False
    opt = sorted(program.opt, key=lambda s: s.order)
    apart = any(s.stream for s in opt)  # a runner kept stdout and stderr apart: no order between them
    regions = [] if apart else _regions(program, opt)

    def inside(order: int) -> bool:
        return any(start < order < end for start, end, _at8 in regions)

    if not program.markers and apart and _no_more_lines_than_events(log, opt):
        return False  # each [per-stage] line has its kernel's event: no candidate printed any (threads, a panic)
    if not program.markers and not apart and not any(inside(s.order) for s in orphans):
        return False  # lines no event accounts for, but not where candidates are printed (a log cut at its start)
    own: set[int] = set()
    for start, end, at_stage_8 in regions:
        if at_stage_8:
            own |= _own_initial(opt, start, end)

    last_event = max((s.order for s in opt if s.source == "event"), default=-1)
    orphan_ids = {id(s) for s in orphans}
    aside = [s for s in opt if s.source in STDERR_SOURCES and id(s) not in own and
             (apart or id(s) in orphan_ids or inside(s.order))]
    docs = [c for c in program.compile if c.stage is not None and (inside(c.order) or c.order < last_event)]
    torn = [(order, problem, stage) for order, (problem, stage) in program.torn.items() if apart or inside(order)]
    if not aside and not docs and not torn:
        return True
    taken = {id(s) for s in aside}
    program.opt = [s for s in program.opt if id(s) not in taken]
    taken_docs = {id(c) for c in docs}
    program.compile = [c for c in program.compile if id(c) not in taken_docs]
    withdrawn = {id(problem) for _o, problem, _s in torn}
    strays = {id(stage) for _o, _p, stage in torn if stage is not None}
    log.problems = [p for p in log.problems if id(p) not in withdrawn]  # now part of the one note below
    log.unplaced = [s for s in log.unplaced if id(s) not in strays]
    for order, _problem, _stage in torn:  # a worker's line cut by another worker's: part of the candidates' output
        program.torn.pop(order)
    torn_orders = {order for order, _p, _s in torn}
    program.lost = [(order, kinds) for order, kinds in program.lost if order not in torn_orders]
    lines = sorted([s.line for s in aside] + [c.line for c in docs] + [p.line for _o, p, _s in torn])
    log.beam_candidates += len(lines)
    first = (aside + [c.stage for c in docs if c.stage])[0] if aside or docs else None
    how = ("nextest kept stdout and stderr apart, so the kernels' own stderr lines cannot be told from the candidates' "
           "either: all are set aside" if apart else "told by the lines no event of the kernel accounts for, between "
           "a kernel's pre-optimization and its post-optimization")
    cut = f"; {len(torn)} of them cut by another worker" if torn else ""
    log.problems.append(Problem(first.file if first else torn[0][1].file, lines[0], f"{len(lines)} [per-stage]/dump "
                                f"lines and documents (lines {lines[0]}-{lines[-1]}) are BEAM candidates printed by "
                                "svod-beam-worker processes (no tracing there, tensor/src/beam_worker.rs), not the "
                                f"kernels' stages ({how}{cut}); set aside, kept in the file"))
    return True
