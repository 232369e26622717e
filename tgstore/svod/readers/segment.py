"""Collecting what one test printed into programs (one per realize: a schedule, its kernels' optimization, their code
generation), then filing each program's stages on kernels by proof (tgstore.svod.readers.attribute).

Svod's order (tgstore.svod.emission, read from its source): a realize prints its schedule (canonical `tensor`, the
rangeify and kernel-cut events, `rangeified`, `kernel_ast`), then every kernel's optimization, then names them in
schedule order and generates their code (`compile_missing_kernels`, tensor/src/realize.rs); `realize complete` (and
`prepare: total`, svod_tensor::realize at DEBUG) end it. A schedule stage after optimize- or compile-phase output
starts the next program: a test that realizes twice is two schedules of one run.
"""

from __future__ import annotations

from tgstore.spelling.svod import maps
from tgstore.svod.emission import place
from tgstore.svod.readers import hints
from tgstore.svod.readers.attribute import attribute
from tgstore.svod.readers.model import Fires, Problem, Stage, SvodLog, document_name, kernel_name_of
from tgstore.svod.readers.program import CompileItem, Program


def _message_labels() -> dict[str, str]:
    """tracing message -> stage label."""
    return {message: stage["label"] for stage in maps()["stages"] for message in stage.get("messages", [])}


class Segmenter:
    """Collects one test's output (one run) by program; `finish` files the stages on kernels."""

    def __init__(self, log: SvodLog, test: str | None = None, failed: bool = False) -> None:
        self.log = log
        self.test = test
        self.failed = failed  # the test panicked or failed: its last program stopped part-way
        self.labels = _message_labels()
        self.order = 0
        self.programs: list[Program] = [Program(0, test)]
        self.fires: Fires | None = None  # `pattern matched` events since the last stage or code event
        self.roots: dict[int, set[str]] = {}  # root id of an optimize-phase event's tree -> its labels
        self.lost_lines: list[int] = []  # lines of stages lost to problems (what follows them is not ordered)
        self.stream = 0  # the stream being read (model.Stage.stream)
        self.at = 0  # the program the stream being read is in
        self.fed = False  # the stream being read printed a stage or code in that program
        self.first_programs: int | None = None  # programs the first of two streams showed (second_stream)
        self.second_stream_at: tuple[int, int] | None = None  # (file, line) where the second stream began

    def second_stream(self, file: int, line: int) -> None:
        """The other stream of the same test (written to a file of its own) begins: its programs are the first
        stream's, in order, from the first."""
        if self.first_programs is None:
            self.first_programs = self.at + 1 if self.fed else self.at
            self.second_stream_at = (file, line)
        self.at, self.fed = 0, False

    @property
    def current(self) -> Program:
        return self.programs[self.at]

    def next_order(self) -> int:
        self.order += 1
        return self.order

    def fire(self, op_key: str, file: int, line: int) -> None:
        """A `pattern matched` event: it belongs to the pass whose stage (or code) is printed next."""
        if self.fires is None:
            self.fires = Fires(file, line, line)
        self.fires.add(op_key, line)

    def _take(self) -> Fires | None:
        fires, self.fires = self.fires, None
        return fires

    def _stamp(self, stage: Stage) -> Stage:
        if stage.order < 0:
            stage.order = self.next_order()
        return stage

    def add(self, stage: Stage) -> None:
        """A stage of the optimize phase, the compile phase or the schedule, by its place in Svod's order."""
        label = stage.label
        where = place("00-initial" if label == "kernel-initial-or-00" else label, stage.source)
        self._stamp(stage)
        if where is None:
            problem = Problem(stage.file, stage.line, f"{stage.source} {label!r} is not a stage Svod's pipeline "
                              "emits; kept apart from every kernel", None)
            self.log.problems.append(problem)
            self.log.unplaced.append(stage)
            if stage.source in ("per-stage", "dump-stage"):  # or pieces of two writers' lines (BEAM's workers)
                self.current.torn[stage.order] = (problem, stage)
        elif where.phase == "schedule":
            self.schedule(stage, where.position)
        elif where.phase == "opt":
            stage.fires = self._take()
            self.fed = True
            self.current.opt.append(stage)
            if stage.source == "event" and stage.tree is not None and len(stage.tree.roots) == 1:
                self.roots.setdefault(stage.tree.roots[0], set()).add("00-initial" if label == "kernel-initial-or-00"
                                                                       else label)
        else:
            self.fed = True
            self.current.compile.append(CompileItem(stage.order, stage.file, stage.line,
                                                    document_name(stage.canonical), stage=stage, fires=self._take(),
                                                    stream=stage.stream))

    def schedule(self, stage: Stage, position: int | None = None) -> None:
        """A schedule-level stage: after optimize- or compile-phase output it starts the next program."""
        self._stamp(stage)
        if self.fed:
            self.boundary()
        stage.fires = self._take()
        stage.schedule = self.current.schedule
        if stage.fires is not None:
            before = [s for s in self.log.schedule_stages if s.schedule == stage.schedule]
            stage.fires.since = before[-1].label if before else None
        self.log.schedule_stages.append(stage)

    def lost(self, line: int, kinds: set[tuple[str, str]] | None = None, torn: Problem | None = None) -> None:
        """A line of these kinds (None: of a kind unknown) could not be read: no reading of the program may count on
        every kernel having printed it (tgstore.svod.readers.chains). `torn`: the problem of a stderr line torn apart
        (it is recorded here; BEAM's note takes it over when the line is a worker's, tgstore.svod.readers.beam)."""
        if torn is not None:
            self.log.problems.append(torn)
        if kinds is None or kinds:
            order = self.next_order()
            self.current.lost.append((order, None if kinds is None else frozenset(kinds)))
            self.lost_lines.append(line)
            if torn is not None:
                self.current.torn[order] = (torn, None)

    def labels_of_root(self, root: int) -> set[str]:
        """The labels of the optimize-phase events whose tree has this root (the same graph)."""
        return self.roots.get(root, set())

    def boundary(self) -> None:
        """The end of a realize (a `realize complete` event, or a schedule after kernels): what follows is the
        next program's."""
        if self.fed:
            self.at, self.fed = self.at + 1, False
            if self.at == len(self.programs):
                self.programs.append(Program(self.programs[-1].schedule + 1, self.test))

    def marker(self, what: str) -> None:
        """A line or event that places BEAM's output (`[beam] ...`, `beam_search_optimize: completed`)."""
        self.current.markers.append((self.next_order(), what))

    def code_text(self, text: str, kind: str, file: int, line: int) -> None:
        self.fed = True
        self.current.compile.append(CompileItem(self.next_order(), file, line, kernel_name_of(text), code=text,
                                                code_kind=kind, fires=self._take(), stream=self.stream))

    def code_name(self, name: str, file: int, line: int) -> None:
        """A runtime event naming the kernel it compiles (`kernel.name`), after its code was rendered."""
        self.fed = True
        self.current.compile.append(CompileItem(self.next_order(), file, line, name, stream=self.stream))

    @property
    def printed(self) -> bool:
        return any(not p.empty for p in self.programs)

    def finish(self) -> None:
        """File every program's stages on kernels (tgstore.svod.readers.attribute), in order."""
        if self.fires is not None:  # after the last pass event: no pass to tie them to
            self.log.loose_fires.append(self._take())
        self._unalign()
        programs = [p for p in self.programs if not p.empty]
        if programs and self.failed:
            programs[-1].complete = False
        stray: list[Stage] = []
        for program in programs:
            before = len(self.log.unattributed)
            attribute(self.log, program)
            if not program.explained:
                stray += self.log.unattributed[before:]
        if stray:
            first = min(stray, key=lambda s: (s.file, s.line))
            grouped = len({s.fragment for s in stray if s.fragment is not None})
            lost = f"; a line lost at line {self.lost_lines[0]} (see its problem) left the stages after it unordered" \
                if self.lost_lines else ""
            self.log.problems.append(Problem(
                first.file, first.line, f"{len(stray)} stages hold no proof of their kernel: kernels optimized at "
                "once (Svod's default SVOD_THREADS) interleave, and node ids prove nothing (Svod hash-conses "
                f"identical UOps across kernels){lost}; stored unattributed"
                f"{f', in {grouped} groups each proven one kernel' if grouped else ''}. "
                f"{hints.one_thread(self.log, self.log.kernels, 'every stage filed on its kernel')}"
                f"{hints.documents(self.log.kernels, [*stray, *(s for k in self.log.kernels for s in k.stages)])}"))
        self.log.schedules = max([p.schedule + 1 for p in programs] +
                                 [s.schedule + 1 for s in self.log.schedule_stages] + [0])
        self.programs = [Program(self.programs[-1].schedule + 1, self.test)]
        self.at, self.fed = 0, False

    def _unalign(self) -> None:
        """Two streams that showed different numbers of programs: the second's stages tie to no program (and so to no
        kernel); they are taken out of the programs and stored unattributed."""
        if not self.first_programs:  # one stream, or a first stream with no stage: the second's programs are its own
            return
        second = self.at + 1 if self.fed else self.at
        if second in (0, self.first_programs):
            return
        taken: list[Stage] = []
        for program in self.programs:
            taken += [s for s in program.opt if s.stream == 2]
            taken += [c.stage for c in program.compile if c.stage is not None and c.stage.stream == 2]
            program.opt = [s for s in program.opt if s.stream != 2]
            program.compile = [c for c in program.compile if c.stage is None or c.stage.stream != 2]
        if not taken:
            return
        self.log.unattributed += taken
        file, line = self.second_stream_at or (taken[0].file, taken[0].line)
        self.log.problems.append(Problem(file, line, f"the two streams, written to two files, show different numbers "
                                         f"of realizes (the first {self.first_programs}, this one {second}): nothing "
                                         f"ties this stream's {len(taken)} stages to a realize or a kernel; stored "
                                         "unattributed. Write both streams to one file (2>&1): then the order "
                                         "between them is the log's"))
