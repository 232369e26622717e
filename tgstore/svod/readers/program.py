"""What one realize printed, as tgstore.svod.readers.segment collects it for tgstore.svod.readers.attribute: its
optimize-phase stages, its compile-phase output, and what places BEAM's candidates."""

from __future__ import annotations

from dataclasses import dataclass, field

from tgstore.svod.readers.model import Fires, Problem, Stage

# tracing messages that end a realize (tensor/src/realize.rs, svod_tensor::realize, DEBUG)
REALIZE_ENDS = frozenset({"realize complete", "realize_with complete", "realize_batch complete", "prepare: total"})
BEAM_DONE = "beam_search_optimize: completed"  # tensor/src/realize.rs, DEBUG, after the candidates' waves


@dataclass
class CompileItem:
    """One thing the compile phase printed for one kernel: a canonical `program`/`linearized` document, generated
    code, or a runtime event naming the kernel it compiles."""

    order: int
    file: int
    line: int
    name: str | None
    stage: Stage | None = None
    code: str | None = None
    code_kind: str | None = None
    fires: Fires | None = None
    stream: int = 0  # 0: the log's one stream; 1 stdout, 2 stderr where a runner kept them apart


@dataclass
class Program:
    schedule: int
    test: str | None
    opt: list[Stage] = field(default_factory=list)
    compile: list[CompileItem] = field(default_factory=list)
    markers: list[tuple[int, str]] = field(default_factory=list)  # (order, what): BEAM's lines and events
    complete: bool = True  # every kernel printed its whole output (not the one a panic stopped, not a cut log)
    explained: bool = False  # its unattributed stages have a problem of their own saying why (not threads)
    # lines lost to a problem: (reading order, the stage kinds ((label, source)) it may have been; None: any kind)
    lost: list[tuple[int, frozenset[tuple[str, str]] | None]] = field(default_factory=list)
    # reading order -> the problem of a stderr line torn apart (and the stage it was stored as, if any)
    torn: dict[int, tuple[Problem, Stage | None]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.opt and not self.compile
