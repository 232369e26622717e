"""Kernels optimized and compiled at the same time (Svod's default `SVOD_THREADS`, one thread per core): attributing
interleaved output to kernels by the evidence the log holds, never by guessing.

Why output interleaves (npatsakula/svod, read Dec 2026): `compile_missing_kernels` (`tensor/src/realize.rs`) runs
`map_on_threads(config.threads, ...)` twice, once to optimize every kernel and once to compile them, with names
assigned in schedule order in between; `map_on_threads` is inline only when threads == 1, rayon otherwise; the
default thread count is `thread_budget()` (`schedule/src/optimizer/config.rs`). Each tracing event is whole on its
line, but nothing in it names its kernel.

Evidence used, per kind of stage:
* a tree (`[id] OP ...`, `ir/src/uop/tree.rs`): node ids are allocation ids, and a rewrite keeps the nodes it does
  not touch, so a kernel's consecutive trees share ids. Svod hash-conses UOps across threads
  (`ir/src/uop/hash_consing.rs`: the same structure is the same node, the same id), so two kernels can share ids of
  identical subtrees. A tree goes to kernel K only when it shares ids with K, every id it shares with another kernel
  (or with a tree left unattributed) K printed too, exactly one kernel qualifies, and the stage comes later in
  Svod's emission order than K's last one (`tgstore.svod.emission`). A `kernel initial` event is K's post-opt input
  when K qualifies so and has done pre-optimization, a new kernel when it shares no id with any kernel or with a
  tree left unattributed (a kernel AST exists before any optimization starts), else it is left unattributed.
  Limit: in Svod's own documented trees (`website/docs/architecture/codegen/worked-example.md`) `09-pre_expand` and
  `20-final_rewrite` share no id (PARAM 84 becomes 353), so with only those two printed the later one has no tree
  evidence and stays unattributed;
* a canonical document: its SINK's `name` (optimize phase: the bare name, `r_8_16_4`; compile phase: the final
  one, `r_8_16_4n1`); documents go to the kernel of that name;
* a `[per-stage] L : node_count=N` line: `print_stage` runs on the thread that emitted L's event just before, so
  the line goes to the one kernel whose last stage is L's event with node_count N;
* compile phase: the generated code and `program`/`linearized` documents name their kernel (final name);
  sections are grouped by name and paired with the optimized kernels by bare name.
What none of these ties to one kernel is kept unattributed, with one problem naming SVOD_THREADS=1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tgstore.svod.emission import place
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog

SUFFIX = re.compile(r"n\d+$")


def document_name(document: dict[str, Any] | None) -> str | None:
    """The kernel name a canonical document carries (its SINK's `name`), if any."""
    if not isinstance(document, dict):
        return None
    for node in document.get("nodes") or []:
        arg = node.get("arg") if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("op") == "SINK" and isinstance(arg, dict) \
                and isinstance(arg.get("name"), str) and arg["name"]:
            return arg["name"]
    return None


def bare_name(name: str) -> str:
    """The name before the process-wide counter's suffix (`r_8_16_4n1` -> `r_8_16_4`)."""
    return SUFFIX.sub("", name) if SUFFIX.search(name) and not name.endswith("_n1") else name


@dataclass
class _Open:
    kernel: Kernel
    ids: set[int] = field(default_factory=set)
    last: int = -1
    last_stage: Stage | None = None


def _position(stage: Stage) -> int | None:
    label = "00-initial" if stage.label == "kernel-initial-or-00" else stage.label
    where = place(label, stage.source)
    return where.position if where is not None and where.phase == "opt" else None


class Attributor:
    """Reads the optimize-phase stages of one program, in log order, into kernels by evidence."""

    def __init__(self, log: SvodLog, test: str | None) -> None:
        self.log, self.test = log, test
        self.kernels: list[_Open] = []
        self.by_name: dict[str, _Open] = {}
        self.ghost: set[int] = set()  # ids of trees left unattributed
        self.unattributed: list[Stage] = []

    def add(self, stage: Stage) -> None:
        if stage.tree is not None:
            self._tree(stage)
        elif stage.canonical is not None and document_name(stage.canonical):
            self._named(stage, document_name(stage.canonical))
        elif stage.source in ("per-stage", "dump-canonical") and stage.node_count is not None:
            self._count(stage)
        else:
            self._leave(stage)

    def _leave(self, stage: Stage) -> None:
        if stage.label == "kernel-initial-or-00":
            stage.label = "kernel-initial"
        if stage.tree is not None:
            self.ghost |= set(stage.tree.nodes)
        self.unattributed.append(stage)

    def _file(self, found: _Open, stage: Stage, position: int) -> None:
        found.kernel.stages.append(stage)
        found.last, found.last_stage = position, stage
        if stage.tree is not None:
            found.ids |= set(stage.tree.nodes)

    def _tree(self, stage: Stage) -> None:
        ids = set(stage.tree.nodes)
        shared = {id(k): ids & k.ids for k in self.kernels}
        if stage.label == "kernel-initial-or-00":
            post = _position(Stage("00-initial", "event", 0, 0))
            owners = [k for k in self.kernels if self._owns(k, ids, shared) and 0 < k.last < post]
            if len(owners) == 1:
                stage.label = "00-initial"
                self._file(owners[0], stage, post)
            elif not any(shared.values()) and not ids & self.ghost:
                stage.label = "kernel-initial"
                opened = _Open(Kernel(-1, stage.file, stage.line, self.test))
                self.kernels.append(opened)
                self._file(opened, stage, 0)
            else:
                self._leave(stage)
            return
        position = _position(stage)
        owners = [k for k in self.kernels if self._owns(k, ids, shared) and position is not None
                  and k.last < position]
        if len(owners) == 1:
            self._file(owners[0], stage, position)
        else:
            self._leave(stage)

    def _owns(self, kernel: _Open, ids: set[int], shared: dict[int, set[int]]) -> bool:
        mine = shared[id(kernel)]
        if not mine:
            return False
        return all(shared[id(k)] <= kernel.ids for k in self.kernels if k is not kernel) and ids & self.ghost <= mine

    def _named(self, stage: Stage, name: str) -> None:
        position = _position(stage)
        found = self.by_name.get(name)
        if found is None and not any(k.ids for k in self.kernels):  # a log of documents only: names make kernels
            found = _Open(Kernel(-1, stage.file, stage.line, self.test, name=name))
            self.kernels.append(found)
            self.by_name[name] = found
        if found is not None and position is not None and found.last < position:
            self._file(found, stage, position)
        else:
            self._leave(stage)

    def _count(self, stage: Stage) -> None:
        position = _position(stage)
        owners = [k for k in self.kernels if k.last_stage is not None and k.last_stage.source == "event"
                  and k.last_stage.label == stage.label and k.last_stage.node_count == stage.node_count
                  and position is not None and k.last < position]
        if len(owners) == 1:
            self._file(owners[0], stage, position)
        else:
            self._leave(stage)


def attribute(log: SvodLog, test: str | None, opt_stages: list[Stage], code: list[Kernel]) -> list[Kernel]:
    """The program's kernels from interleaved optimize-phase stages and compile-phase sections (each section one
    code-generation run, possibly of several kernels' interleaved output). Unattributed stages are returned in
    `log.unattributed`."""
    attributor = Attributor(log, test)
    for stage in opt_stages:
        attributor.add(stage)
    kernels = [k.kernel for k in attributor.kernels]
    for k in attributor.kernels:
        if k.kernel.name is None:
            k.kernel.name = next((document_name(s.canonical) for s in k.kernel.stages if document_name(s.canonical)),
                                 None)
    named_code: dict[str, Kernel] = {}
    for section in code:
        for stage in section.stages:
            name = document_name(stage.canonical) or section.name
            if name is None:
                attributor.unattributed.append(stage)
                continue
            named_code.setdefault(name, Kernel(-1, stage.file, stage.line, test, name=name)).stages.append(stage)
        if section.name and section.code is not None:
            target = named_code.setdefault(section.name, Kernel(-1, section.file, section.line, test,
                                                                name=section.name))
            target.code, target.code_kind = section.code, section.code_kind
    by_bare: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        if kernel.name:
            by_bare.setdefault(bare_name(kernel.name), []).append(kernel)
    paired: list[Kernel] = []
    for name, section in named_code.items():
        owners = by_bare.get(bare_name(name), [])
        if len(owners) == 1 or (not kernels and not owners):
            kernel = owners[0] if owners else section
            if owners:
                kernel.stages += section.stages
                kernel.code, kernel.code_kind, kernel.name = section.code, section.code_kind, name
                by_bare.pop(bare_name(name))
            paired.append(kernel)
        elif len(kernels) == 1 and not kernels[0].code and len(named_code) == 1:
            kernels[0].stages += section.stages
            kernels[0].code, kernels[0].code_kind, kernels[0].name = section.code, section.code_kind, name
            paired.append(kernels[0])
        else:
            for stage in section.stages:
                attributor.unattributed.append(stage)
            if section.code is not None:
                attributor.unattributed.append(Stage("code", "code", section.file, section.line,
                                                     tree_text=section.code, message=name))
    ordered = paired + [k for k in kernels if k not in paired]
    log.unattributed += attributor.unattributed
    if attributor.unattributed:
        first = attributor.unattributed[0]
        log.problems.append(Problem(first.file, first.line, f"{len(attributor.unattributed)} stages of kernels "
                                    "optimized in parallel (Svod's default SVOD_THREADS) hold no evidence of their "
                                    "kernel (shared tree ids, a document's kernel name, a node-count chain); stored "
                                    "unattributed. Rerun with SVOD_THREADS=1 to get every stage of every kernel", None))
    return ordered
