"""Filing one program's stages on its kernels by proof, never by guess (the chains of tgstore.svod.readers.chains).

Where Svod's source puts what (npatsakula/svod, read Dec 2026; facts, not code):
* `compile_missing_kernels` (tensor/src/realize.rs) optimizes every distinct kernel (on `SVOD_THREADS` threads:
  `map_on_threads`, inline when 1), then names them in schedule order (`finalize_kernel_name`: the process-wide
  `KERNEL_NAME_COUNTS`, schedule/src/optimizer/scheduler.rs, gives the n-th kernel of a name the suffix `n{n-1}`),
  then generates their code, again on those threads. Optimize-phase documents carry the bare name, compile-phase
  output (`program`, `linearized`, the generated code, the runtime's `kernel.name`) the final one.
* So the compile phase names its kernels, and within one bare name the suffix order is the schedule order. With
  one optimizing thread both phases run in schedule order, and the n-th optimized kernel is the n-th compiled one.

What is filed where:
* kernels optimized one after another (every stage linked into whole kernels that follow one another; the compile
  phase in the same order, its suffixes growing) on one thread: program order, the n-th kernel's stages with the
  n-th code. Svod's pool can also run kernels one after another, in any order, so one thread must be known
  (tgstore.svod.readers.threads: the user's `--svod-threads 1`, thread ids on the events, BEAM); without it the
  n-th block is the n-th kernel's only where names prove it (each kernel's bare name its alone, the block's
  documents or trees spelling it), else the kernels are filed as below;
* otherwise kernels are the compile phase's, by name; a proven chain of optimize-phase stages joins a kernel only
  through a document naming it or trees spelling its name (a bare name only one kernel has), as the program's only
  kernel, or as the last whole chain left for the last kernel; without a compile phase whole chains are the
  kernels. The rest is stored unattributed, a fragment number tying the stages proven to be one kernel's, with one
  problem naming the fix.
* BEAM (`beam_search_optimize`, tensor/src/realize.rs; tensor/src/beam_worker.rs): candidates are compiled in
  `svod-beam-worker` processes that print `[per-stage]` lines (and dumps) with no tracing around them, between the
  kernel's pre-optimization and the chosen kernel's post-optimization: set aside (tgstore.svod.readers.beam), never
  a kernel's stages.
"""

from __future__ import annotations

from collections import Counter

from tgstore.spelling.svod import maps
from tgstore.svod.emission import HEURISTIC_ONLY, KERNEL_INITIAL_FIRST, code_place, opt_kinds, place
from tgstore.svod.readers.beam import set_aside
from tgstore.svod.readers.chains import Item, link
from tgstore.svod.readers.hints import one_thread
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, bare_name, document_name, suffix_of
from tgstore.svod.readers.naming import name_fits, spelled_name
from tgstore.svod.readers.program import CompileItem, Program
from tgstore.svod.readers.threads import (
    NAMES_SHOWN,
    merge_streams,
    one_after_another,
    one_thread_known,
    paired_by_name,
    unordered_blocks,
)


def _positions(kinds: frozenset[tuple[str, str]]) -> set[int]:
    """The emission positions of some stage kinds; a label `*` stands for every label of its source."""
    out: set[int] = set()
    for label, source in kinds:
        labels = [s["label"] for s in maps()["stages"]] + ["kernel-initial-or-00"] if label == "*" else [label]
        for one in labels:
            out.update(opt_kinds(one, source))
    return out


def _item(stage: Stage, beam: bool) -> Item:
    kinds = opt_kinds(stage.label, stage.source)
    if beam and stage.label in HEURISTIC_ONLY:
        kinds = ()  # only some kernels print these on BEAM's path: no place in the one sequence
    root = stage.tree.roots[0] if stage.tree is not None and len(stage.tree.roots) == 1 else None
    graph = None if stage.source in ("dump-canonical", "capture") else stage.label
    return Item(kinds, stage.stream, root, stage.node_count if stage.counted else None,
                document_name(stage.canonical), graph, stage.order)


def _position(item: CompileItem) -> int:
    """An item's place in one kernel's code generation (tgstore.svod.emission)."""
    if item.stage is not None:
        where = place(item.stage.label, item.stage.source)
        return where.position if where is not None and where.position is not None else 0
    return code_place("code" if item.code is not None else "llvm-ir").position


def _sections(program: Program) -> list[Kernel] | None:
    """One thread: the compile phase is each kernel's code generation in turn, positions growing within one; the
    kernels in that order. None when the sections' names disagree within one. Two streams written apart each show
    the kernels in that order: the n-th section of one is the n-th of the other (None when their counts differ)."""
    streams = sorted({item.stream for item in program.compile})
    if len(streams) < 2:
        return _stream_sections(program, program.compile)
    each = [_stream_sections(program, [c for c in program.compile if c.stream == s]) for s in streams]
    if any(sections is None for sections in each) or len({len(sections) for sections in each}) != 1:
        return None
    kernels = each[0]
    for other in each[1:]:
        for kernel, twin in zip(kernels, other, strict=True):
            if kernel.name is not None and twin.name is not None and kernel.name != twin.name:
                return None
            kernel.name = kernel.name or twin.name
            kernel.stages += twin.stages
            if twin.code is not None:
                kernel.code, kernel.code_kind = twin.code, twin.code_kind
            if twin.code_fires is not None:
                _add_code_fires(kernel, CompileItem(0, twin.file, twin.line, None, fires=twin.code_fires))
    for kernel in kernels:
        kernel.stages.sort(key=lambda s: (s.stream, s.order))
    return kernels


def _stream_sections(program: Program, items: list[CompileItem]) -> list[Kernel] | None:
    kernels: list[Kernel] = []
    last = None
    for item in sorted(items, key=lambda c: c.order):
        position = _position(item)
        if last is None or position <= last:
            kernels.append(Kernel(-1, item.file, item.line, program.test, schedule=program.schedule))
        last = position
        kernel = kernels[-1]
        if item.name is not None and kernel.name is not None and item.name != kernel.name:
            return None
        kernel.name = kernel.name or item.name
        _file_item(kernel, item)
    return kernels


def _compile_kernels(program: Program) -> tuple[list[Kernel], list[CompileItem]]:
    """The compile phase's kernels, one per final name in the order their output first appears; items naming no
    kernel are returned apart."""
    kernels: dict[str, Kernel] = {}
    unnamed: list[CompileItem] = []
    for item in sorted(program.compile, key=lambda c: c.order):
        if item.name is None:
            unnamed.append(item)
            continue
        kernel = kernels.get(item.name)
        if kernel is None:
            kernel = kernels[item.name] = Kernel(-1, item.file, item.line, program.test, name=item.name,
                                                 schedule=program.schedule)
        _file_item(kernel, item)
    return list(kernels.values()), unnamed


def _file_item(kernel: Kernel, item: CompileItem) -> None:
    if item.stage is not None:
        kernel.stages.append(item.stage)
    if item.code is not None:
        kernel.code, kernel.code_kind = item.code, item.code_kind
    if item.fires is not None:
        _add_code_fires(kernel, item)


def _add_code_fires(kernel: Kernel, item: CompileItem) -> None:
    fires = item.fires
    fires.since = "codegen"
    if kernel.code_fires is None:
        kernel.code_fires = fires
    else:
        for key, count in fires.counts.items():
            kernel.code_fires.counts[key] = kernel.code_fires.counts.get(key, 0) + count
        kernel.code_fires.last_line = fires.last_line
    item.fires = None


def _schedule_order(kernels: list[Kernel]) -> tuple[list[Kernel], bool]:
    """Within one bare name the counter's suffix gives the schedule order; across names the log proves none (the
    compile phase prints in completion order on several threads): those keep their printed order."""
    groups: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        groups.setdefault(bare_name(kernel.name or ""), []).append(kernel)
    queues = {bare: sorted(group, key=lambda k: suffix_of(k.name or "")) for bare, group in groups.items()}
    ordered = [queues[bare_name(k.name or "")].pop(0) for k in kernels]
    return ordered, len(groups) <= 1


def _in_suffix_order(kernels: list[Kernel]) -> bool:
    last: dict[str, int] = {}
    for kernel in kernels:
        if kernel.name is None:
            continue
        bare, n = bare_name(kernel.name), suffix_of(kernel.name)
        if bare in last and n <= last[bare]:
            return False
        last[bare] = n
    return True


def attribute(log: SvodLog, program: Program) -> None:
    """File the program's stages: its kernels appended to `log.kernels` in schedule order, the rest unattributed."""
    beam = set_aside(log, program)
    opt = sorted(program.opt, key=lambda s: s.order)
    for stage in opt:
        stage.schedule = program.schedule
    items = [_item(s, beam) for s in opt]
    placed = [i for i, it in enumerate(items) if it.kinds]
    losses = [(order, None if kinds is None else frozenset(_positions(kinds))) for order, kinds in program.lost]
    lost: dict[int, int] = {}  # kind -> the first lost line that may have been of it (-1: any kind)
    for order, positions in losses:
        for kind in [-1] if positions is None else positions:
            lost[kind] = min(lost.get(kind, order), order)
    links = link([items[i] for i in placed], program.complete, losses)
    kind_of: list[int | None] = [None] * len(items)
    for n, i in enumerate(placed):
        kind_of[i] = links.kind_of[n]
    for i, stage in enumerate(opt):
        if stage.label == "kernel-initial-or-00" and kind_of[i] is not None:
            stage.label = "kernel-initial" if kind_of[i] == KERNEL_INITIAL_FIRST else "00-initial"
    groups = [[placed[n] for n in g] for g in links.chains()]
    loose_docs = [i for i, it in enumerate(items) if not it.kinds]  # chained nowhere (BEAM's optional documents)
    serial = one_after_another(groups, links.kinds, kind_of, program.complete, items)
    if not serial:
        merged = merge_streams(groups, items, links.kinds, kind_of, program.complete)
        if merged is not None:
            groups, serial = merged, True
    named = [_chain_name(opt, g) for g in groups]
    sections = _sections(program) if serial else None
    if serial and (sections is None or not (len(sections) <= len(groups) and _in_suffix_order(sections) and all(
            (named[n] is None or sections[n].name is None or bare_name(sections[n].name) == named[n])
            and name_fits(sections[n].name, [opt[i] for i in groups[n]]) for n in range(len(sections))))):
        serial = False  # the compile phase does not follow the optimized kernels: not one thread after all
    surplus = serial and program.complete and bool(sections) and len(sections) < len(groups)
    dated, one = serial, beam or one_thread_known(log, program)  # BEAM optimizes on one thread (beam.py)
    if serial and not surplus and not one and len(groups) > 1 and sections is not None and \
            not paired_by_name(sections, groups, named, opt):
        serial = False  # blocks one after another on Svod's pool, in an order nothing proves: filed by names only
        log.problems.append(unordered_blocks(log, program, opt[groups[0][0]], sections))
        program.explained = True
    compiled, unnamed = (sections, []) if serial else _compile_kernels(program)
    kernels: list[Kernel] = []
    left: list[list[int]] = []
    order_proven = True
    if surplus:  # whole blocks beyond the kernels compiled (one thread): something else printed them, BEAM's workers
        kernels, left = list(compiled), groups + [[i] for i in loose_docs]
        program.explained = True
        log.problems.append(Problem(opt[groups[0][0]].file, opt[groups[0][0]].line, f"{len(groups)} blocks of "
                                    f"optimize-phase lines for {len(compiled)} kernels compiled: the rest are not "
                                    "kernels (with BEAM, svod-beam-worker processes print [per-stage] blocks with no "
                                    "event, tensor/src/beam_worker.rs), and nothing in the log tells a kernel's own "
                                    "block from them; stored unattributed. Add RUST_LOG=svod_schedule::optimizer="
                                    "debug: each kernel's own lines then follow its events"))
    elif serial:
        for n, group in enumerate(groups):
            kernel = compiled[n] if n < len(compiled) else Kernel(-1, opt[group[0]].file, opt[group[0]].line,
                                                                 program.test, schedule=program.schedule)
            kernel.stages[:0] = [opt[i] for i in group]
            kernel.file, kernel.line = opt[group[0]].file, opt[group[0]].line
            kernels.append(kernel)
        kernels += compiled[len(groups):]
        left = [[i] for i in loose_docs]
        _tie_fires(kernels)
        order_proven = one or len(kernels) <= 1  # the pool could have compiled them in another order too
    else:
        kernels, left, order_proven = _by_proof(log, program, opt, groups, named, compiled, links.kinds, kind_of,
                                                loose_docs, lost)
        _loosen(log, opt, kernels)
    kernels, left = _unpair(opt, kernels, left)
    for kernel in kernels:
        kernel.name = kernel.name or next((document_name(s.canonical) for s in kernel.stages
                                           if s.label in ("program", "linearized") and document_name(s.canonical)),
                                          None)
        kernel.schedule = program.schedule
        kernel.index = len(log.kernels)
        log.kernels.append(kernel)
    for group in left:
        fragment = log.fragments if len(group) > 1 else None
        log.fragments += len(group) > 1
        for i in group:
            opt[i].fragment = fragment
            log.unattributed.append(opt[i])
    for item in unnamed:
        if item.stage is not None:
            log.unattributed.append(item.stage)
        elif item.code is not None:
            log.unattributed.append(Stage("code", "code", item.file, item.line, tree_text=item.code))
    order_proven = order_proven or len(kernels) == 0
    if not order_proven:
        names = ", ".join(k.name or "?" for k in kernels[:NAMES_SHOWN]) + \
            (f", ... ({len(kernels)} kernels)" if len(kernels) > NAMES_SHOWN else "")
        log.problems.append(Problem(kernels[0].file, kernels[0].line, f"the log does not prove the schedule's order "
                                    f"of kernels {names} (optimized and compiled on several threads, or on a pool that "
                                    "can take them in any order; the counter's suffixes order only names of one "
                                    "shape): numbered as their output was printed. "
                                    f"{one_thread(log, kernels, 'the schedule order')}"))
    log.order_proven &= order_proven
    log.serial = dated if log.serial is None else log.serial and dated


def _unpair(opt: list[Stage], kernels: list[Kernel], left: list[list[int]]) -> tuple[list[Kernel], list[list[int]]]:
    """Dump bodies printed while several blocks of their label were open (tgstore.svod.readers.dumps) took part in
    linking at their own place (their tree and position are theirs whatever block they end), but which block a reader
    of the log would take them for is not proven: they are filed on no kernel and in no fragment. So are documents
    stored a line off their own (`moved`: right after a header not proven theirs), unless they name the kernel's
    compiled name: their line is no print's, their name is the proof. A kernel that only
    they made (no other stage, no name, no code) is no kernel the log shows: dropped."""
    index = {id(stage): i for i, stage in enumerate(opt)}
    loose: list[list[int]] = []
    shown = []
    for kernel in kernels:
        def off(stage: Stage, kernel: Kernel = kernel) -> bool:
            return stage.unpaired or (stage.moved and not (
                kernel.name is not None and document_name(stage.canonical) == bare_name(kernel.name)))
        if any(off(s) for s in kernel.stages):
            loose += [[index[id(s)]] for s in kernel.stages if off(s) and id(s) in index]
            kernel.stages = [s for s in kernel.stages if not off(s)]
            if not kernel.stages and kernel.name is None and kernel.code is None:
                continue
        shown.append(kernel)
    split: list[list[int]] = []
    for group in left:
        kept = [i for i in group if not (opt[i].unpaired or opt[i].moved)]
        loose += [[i] for i in group if opt[i].unpaired or opt[i].moved]
        if kept:
            split.append(kept)
    return shown, split + loose


def _chain_name(opt: list[Stage], group: list[int]) -> str | None:
    """The bare name the chain's optimize-phase documents carry (None when none, or when they disagree)."""
    names = {document_name(opt[i].canonical) for i in group} - {None}
    return names.pop() if len(names) == 1 else None


def _by_proof(log: SvodLog, program: Program, opt: list[Stage], groups: list[list[int]], named: list[str | None],
              compiled: list[Kernel], kinds: list[int], kind_of: list[int | None], loose_docs: list[int],
              lost: dict[int, int]) -> tuple[list[Kernel], list[list[int]], bool]:
    """Kernels optimized on several threads: the compile phase's kernels, joined by the chains proof ties to them."""
    whole = set(kinds)
    complete_groups = [n for n, g in enumerate(groups) if {kind_of[i] for i in g} == whole]
    counts: dict[int, int] = {}
    for kind in kind_of:
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
    reliable = [k for k in counts if k not in lost and -1 not in lost]  # kinds every kernel printed, none lost
    initials = sum(1 for s in opt if s.label in ("kernel-initial-or-00", "kernel-initial", "00-initial")
                   and s.source == "event")
    # one kernel: every kind once; a second kernel would have printed every kind too, more lines than were lost
    one_each = all(c <= 1 for c in counts.values()) and initials <= 2 and len(program.lost) < len(counts)
    compile_kinds = {("program", "dump-canonical"), ("linearized", "dump-canonical")}
    compile_whole = program.complete and all(k is not None and not (k & compile_kinds) for _o, k in program.lost)

    def only_kernel_named(bare: str) -> bool:
        """Whether one kernel alone of the program has this bare name: a document kind every kernel printed and
        none lost names it once, or the whole compile phase does."""
        if not program.complete:
            return False
        for kind in reliable:
            names = [document_name(opt[i].canonical) for i, k in enumerate(kind_of) if k == kind]
            if None not in names and names.count(bare) == 1:
                return True
        return compile_whole and sum(bare_name(k.name or "") == bare for k in compiled) == 1

    linked: dict[int, int] = {}  # group -> compiled kernel
    if compiled:
        if len(compiled) == 1 and program.complete and one_each and groups:
            linked = {n: 0 for n in range(len(groups))}
        elif program.complete:
            for bare in {b for b in named if b}:
                owners = [k for k, kernel in enumerate(compiled) if bare_name(kernel.name or "") == bare]
                if len(owners) == 1 and only_kernel_named(bare):
                    linked.update({n: owners[0] for n, b in enumerate(named) if b == bare})
            if compile_whole:
                _link_spelled(compiled, groups, complete_groups, opt, linked)
            free_groups = [n for n in complete_groups if n not in linked]
            free_kernels = [k for k in range(len(compiled)) if k not in linked.values()]
            if compile_whole and len(complete_groups) == len(compiled) and len(free_groups) == 1 and \
                    len(free_kernels) == 1 and all(counts.get(k, 0) <= len(compiled) for k in counts):
                linked[free_groups[0]] = free_kernels[0]
        ordered, order_proven = _schedule_order(compiled)
        for n, k in sorted(linked.items()):
            compiled[k].stages[:0] = [opt[i] for i in groups[n]]
        for kernel in compiled:
            kernel.stages.sort(key=lambda s: s.order)
            if kernel.stages:
                kernel.file, kernel.line = kernel.stages[0].file, kernel.stages[0].line
        left = [g for n, g in enumerate(groups) if n not in linked] + [[i] for i in loose_docs]
        return ordered, left, (order_proven and compile_whole) or (len(compiled) == 1 and one_each)
    if one_each and groups and program.complete:
        return [Kernel(-1, opt[0].file, opt[0].line, program.test, stages=list(opt))], [], True
    kernels = []
    for n in complete_groups:
        group = groups[n]
        kernels.append(Kernel(-1, opt[group[0]].file, opt[group[0]].line, program.test,
                              stages=[opt[i] for i in group]))
    left = [g for n, g in enumerate(groups) if n not in complete_groups] + [[i] for i in loose_docs]
    total = max([c for c in counts.values()] + [1])
    return kernels, left, total <= 1 and len(kernels) <= 1


def _link_spelled(compiled: list[Kernel], groups: list[list[int]], complete_groups: list[int], opt: list[Stage],
                  linked: dict[int, int]) -> None:
    """Whole chains whose trees spell a name only one compiled kernel has (naming.name_shown), and no other chain
    spells: that kernel's (the compile phase is whole, so no kernel of that name is missing from it)."""
    bares = Counter(bare_name(k.name) for k in compiled if k.name)
    unique = {bare_name(k.name): n for n, k in enumerate(compiled)
              if k.name and bares[bare_name(k.name)] == 1 and n not in linked.values()}
    spelled: dict[int, list[int]] = {}
    for n in complete_groups:
        kernel = unique.get(spelled_name([opt[i] for i in groups[n]]) or "") if n not in linked else None
        if kernel is not None:
            spelled.setdefault(kernel, []).append(n)
    linked.update({chains[0]: k for k, chains in spelled.items() if len(chains) == 1})


def _tie_fires(kernels: list[Kernel]) -> None:
    """One thread: the matches before a stage are its pass's; `since` is the kernel's stage before."""
    for kernel in kernels:
        previous = None
        for stage in kernel.stages:
            if stage.fires is not None:
                stage.fires.since = previous.label if previous is not None else None
            previous = stage


def _loosen(log: SvodLog, opt: list[Stage], kernels: list[Kernel]) -> None:
    """Kernels optimized and compiled at the same time: a `pattern matched` event names no kernel, so the matches
    before a stage may be another kernel's; they are kept loose, with one problem."""
    loose = [s.fires for s in opt if s.fires] + [k.code_fires for k in kernels if k.code_fires]
    for stage in opt:
        stage.fires = None
    for kernel in kernels:
        kernel.code_fires = None
    if loose:
        log.loose_fires += loose
        count = sum(sum(f.counts.values()) for f in loose)
        log.problems.append(Problem(
            loose[0].file, loose[0].first_line, f"{count} `pattern matched` events of kernels optimized in "
            "parallel: nothing in them names their kernel, so they are stored without kernel and pass. "
            f"{one_thread(log, kernels, 'rule parity')}"))
