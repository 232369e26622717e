"""Cutting what one program printed into its schedule and its kernels by Svod's emission order
(tgstore.svod.emission), and pairing each optimized kernel with its code-generation section."""

from __future__ import annotations

from tgstore.spelling.svod import maps
from tgstore.svod.emission import code_place, place
from tgstore.svod.readers.model import Fires, Kernel, Problem, Stage, SvodLog, kernel_name_of
from tgstore.svod.readers.threads import attribute, document_name


def _message_labels() -> dict[str, str]:
    """tracing message -> stage label."""
    return {message: stage["label"] for stage in maps()["stages"] for message in stage.get("messages", [])}


class Segmenter:
    """Cuts what one program printed into the schedule and its kernels, by Svod's emission order
    (tgstore.svod.emission): within a kernel's optimization, and within a kernel's code generation, positions only
    grow, so a position that does not grow starts the next kernel. All kernels are optimized before any is compiled
    (`compile_missing_kernels`), so the n-th code-generation section belongs to the n-th optimized kernel. A new
    libtest test is a new program."""

    def __init__(self, log: SvodLog, test: str | None = None, failed: bool = False) -> None:
        self.log = log
        self.failed = failed  # the program panicked: its last kernel stopped part-way
        self.test: str | None = test
        self.labels = _message_labels()
        self._reset()

    def _reset(self) -> None:
        self.opt: list[Kernel] = []
        self.opt_last: int | None = None
        self.code: list[Kernel] = []  # code-generation sections, as kernels not yet paired
        self.code_last: int | None = None
        self.schedule_last: int | None = None
        self.opt_stages: list[tuple[Stage, str]] = []  # every optimize-phase stage in log order, with its read label
        self.fires: Fires | None = None  # `pattern matched` events since the last stage or code event

    def fire(self, op_key: str, file: int, line: int) -> None:
        """A `pattern matched` event: it belongs to the pass whose stage (or code) is printed next."""
        if self.fires is None:
            self.fires = Fires(file, line, line)
        self.fires.add(op_key, line)

    def _take(self, since: Stage | None) -> Fires | None:
        fires, self.fires = self.fires, None
        if fires is not None:
            fires.since = since.label if since is not None else None
        return fires

    def start_test(self, name: str) -> None:
        if name not in self.log.tests:
            self.log.tests.append(name)
        if name != self.test:
            self.finish()
            self.test = name

    def _kernel(self, file: int, line: int) -> Kernel:
        return Kernel(-1, file, line, self.test)

    def add(self, stage: Stage) -> None:
        label = stage.label
        read_label = label
        if label == "kernel-initial-or-00":  # the first of a kernel, or its post-opt input (optimizer/mod.rs)
            opening = self.opt_last is None or not (0 <= self.opt_last < place("00-initial", "event").position)
            stage.label = label = "kernel-initial" if opening else "00-initial"
        where = place(label, stage.source)
        if where is None:
            self.log.problems.append(Problem(stage.file, stage.line, f"{stage.source} {label!r} is not a stage "
                                             "Svod's pipeline emits; kept apart from every kernel", None))
            self.log.unplaced.append(stage)
        elif where.phase == "schedule":
            self.schedule(stage, where.position)
        elif where.phase == "opt":
            if not self.opt or self.opt_last is None or where.position <= self.opt_last:
                self.opt.append(self._kernel(stage.file, stage.line))
            stage.fires = self._take(self.opt[-1].stages[-1] if self.opt[-1].stages else None)
            self.opt[-1].stages.append(stage)
            self.opt_last = where.position
            self.opt_stages.append((stage, read_label))
        else:
            section = self._code_section(where.position, stage.file, stage.line)
            self._code_fires(section)
            section.stages.append(stage)

    def _code_section(self, position: int, file: int, line: int) -> Kernel:
        if not self.code or self.code_last is None or position <= self.code_last:
            self.code.append(self._kernel(file, line))
        self.code_last = position
        return self.code[-1]

    def schedule(self, stage: Stage, position: int | None = None) -> None:
        if position is not None and self.schedule_last is not None and position <= self.schedule_last \
                and (self.opt or self.code):
            self.log.problems.append(Problem(stage.file, stage.line, f"{stage.label!r} of a second schedule (the "
                                             "program realizes more than once): stored with the first schedule's "
                                             "stages; compare one realize per log", None))
        if position is not None:
            self.schedule_last = position
        stage.fires = self._take(self.log.schedule_stages[-1] if self.log.schedule_stages else None)
        self.log.schedule_stages.append(stage)

    def code_text(self, text: str, kind: str, file: int, line: int) -> None:
        section = self._code_section(code_place("code").position, file, line)
        self._code_fires(section)
        section.code, section.code_kind = text, kind
        section.name = kernel_name_of(text)

    def _code_fires(self, section: Kernel) -> None:
        """Matches before a code-generation event: program_from_sink, linearize and render of that kernel."""
        fires = self._take(None)
        if fires is None:
            return
        fires.since = "codegen"
        if section.code_fires is None:
            section.code_fires = fires
        else:
            for key, count in fires.counts.items():
                section.code_fires.counts[key] = section.code_fires.counts.get(key, 0) + count
            section.code_fires.last_line = fires.last_line

    def code_name(self, name: str, file: int, line: int) -> None:
        """A runtime event naming the kernel it compiles (`kernel.name`), after its code was rendered."""
        section = self._code_section(code_place("llvm-ir").position, file, line)
        section.name = section.name or name

    def finish(self) -> None:
        """Pair the program's optimized kernels with its code-generation sections, in order, and file them; when
        the cut by emission order is not consistent (kernels optimized in parallel), attribute by evidence
        (tgstore.svod.readers.threads)."""
        opt, code = self.opt, self.code
        if self.fires is not None:  # after the program's last pass event: no pass to tie them to
            self.log.loose_fires.append(self._take(None))
        if not self._consistent(opt, code):
            for stage, read_label in self.opt_stages:
                stage.label = read_label
            self._loosen(code)
            kernels = attribute(self.log, self.test, [s for s, _label in self.opt_stages], code)
        else:
            kernels = []
            for i in range(max(len(opt), len(code))):
                kernel = opt[i] if i < len(opt) else code[i]
                if i < len(opt) and i < len(code):
                    section = code[i]
                    kernel.stages += section.stages
                    kernel.code, kernel.code_kind, kernel.name = section.code, section.code_kind, section.name
                    kernel.code_fires = section.code_fires
                kernels.append(kernel)
        for kernel in kernels:  # no code names it: its program/linearized documents do (the final name)
            kernel.name = kernel.name or next((document_name(s.canonical) for s in kernel.stages
                                               if s.label in ("program", "linearized") and document_name(s.canonical)),
                                              None)
            kernel.index = len(self.log.kernels)
            self.log.kernels.append(kernel)
        self._reset()

    def _loosen(self, code: list[Kernel]) -> None:
        """Kernels optimized and compiled at the same time: a `pattern matched` event names no kernel, so the
        matches before a stage may be another kernel's; they are kept loose, with one problem."""
        loose = [s.fires for s, _label in self.opt_stages if s.fires] + [k.code_fires for k in code if k.code_fires]
        for stage, _label in self.opt_stages:
            stage.fires = None
        for section in code:
            section.code_fires = None
        if loose:
            self.log.loose_fires += loose
            count = sum(sum(f.counts.values()) for f in loose)
            self.log.problems.append(Problem(
                loose[0].file, loose[0].first_line, f"{count} `pattern matched` events of kernels optimized in "
                "parallel: nothing in them names their kernel, so they are stored without kernel and pass; rerun "
                "with SVOD_THREADS=1 for rule parity"))

    def _consistent(self, opt: list[Kernel], code: list[Kernel]) -> bool:
        """The cut by emission order holds when every kernel printed the same kinds of stage (every kernel went
        through the same switches), as many kernels were compiled as optimized, and no two compiled kernels have
        the same name (names carry the process-wide counter's suffix, so they are unique in a run)."""
        if opt and code and len(opt) != len(code) and not (self.failed and len(code) < len(opt)):
            return False
        kinds = [{(s.label, s.source) for s in k.stages} for k in opt]
        whole = kinds[:-1] if self.failed and len(kinds) > 1 else kinds
        if whole and any(k != whole[0] for k in whole):
            return False
        if self.failed and len(kinds) > 1 and not kinds[-1] <= kinds[0]:
            return False
        named = [k.name for k in code if k.name]
        if len(named) != len(set(named)):
            return False
        return True
