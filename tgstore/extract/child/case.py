"""One case through one tinygrad: schedule, then every kernel with every renderer, with stages where asked."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import inspect
import io
import os
import pathlib
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .api import Tinygrad
from .caches import ClassState, GraphCaches, UniqueCounters
from .encode import Encoder, toposort
from .lower import Lowering, NameCounter, Program
from .pass_recorder import PassRecorder
from .patterns import PatternRegistry
from .schedule import Scheduler
from .text import clean, error_text, mask_run_dependent

# Where pyrender lives, newest first (absent before 0.12).
PYRENDER = [("tinygrad.uop.render", "pyrender"), ("tinygrad.uop.ops", "pyrender")]


@dataclass
class Options:
    renderers: list[str]
    stage_renderers: list[str] = field(default_factory=list)  # renderers whose lowering passes are recorded
    debug: int = 4
    compile_times: bool = False  # time the scheduling and each kernel's lowering, per named pass (compile_times)


class CaseRunner:
    def __init__(self, tg: Tinygrad, options: Options, lowering: Lowering, scheduler: Scheduler,
                 patterns: PatternRegistry, recorder: PassRecorder | None, encoder: Encoder,
                 canonical: Any = None, timer: Any = None) -> None:
        self.tg, self.options = tg, options
        self.timer = timer  # a timing.KernelTimer when kernels are timed
        self.lowering, self.scheduler, self.patterns = lowering, scheduler, patterns
        self.recorder, self.encoder, self.canonical = recorder, encoder, canonical
        self.names = NameCounter(tg)
        self.graph_caches = GraphCaches(tg)
        self.counters = UniqueCounters(tg)
        self.tensor_state = ClassState(tg.Tensor)
        self.after_schedule: dict = {}
        self.pyrender = next((fn for m, a in PYRENDER if callable(fn := tg.attr(m, a))), None)

    def passes(self, wanted: bool) -> contextlib.AbstractContextManager[list[dict[str, Any]] | None]:
        """The named passes run inside the block: described (stages) where `wanted`, else only timed where compile
        times are asked; the caller stores them as stages only where wanted."""
        if self.recorder is not None and (wanted or self.options.compile_times):
            return self.recorder.scope(describe=wanted)
        return contextlib.nullcontext(None)

    def overhead(self) -> float:
        """Seconds the pass recorder has spent recording so far (left out of compile times)."""
        return self.recorder.overhead if self.recorder is not None else 0.0

    def new_record(self, name: str, description: str | None) -> dict[str, Any]:
        return {"kind": "case", "name": name, "description": description, "status": "ok", "error": None,
                "seconds": 0.0, "debug": "", "schedule": [], "schedule_passes": None, "matches": [], "missing": []}

    def run(self, name: str, fn: Callable, description: str | None) -> dict[str, Any]:
        with collector_paused():
            return self._run(name, fn, description)

    def _run(self, name: str, fn: Callable, description: str | None) -> dict[str, Any]:
        rec = self.new_record(name, description)
        # first: the encoder keeps the last case's UOps alive, which would outlive the collection below and stay in
        # tinygrad's UOp cache (its DEBUG text counts them; a rewrite meeting one reuses what it cached)
        self.encoder.reset()
        self.lowering.reset_renderers()
        self.names.reset()  # as in a fresh process
        self.scheduler.clear_caches()
        self.tensor_state.reset()  # before the collection: the random-number tensors `rand` left go with it
        self.graph_caches.clear()  # memoized graph work would skip passes a fresh process runs
        self.counters.reset()  # buffer numbers appear in the scheduler's graphs
        before = self.patterns.snapshot()
        buf = io.StringIO()
        start = time.perf_counter()
        asts: list[Any] = []
        captured: dict[str, Any] = {}
        try:
            context = case_context(self.tg, fn)
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf), \
                    self.tg.Context(DEBUG=self.options.debug, **context):
                out = fn()
                tensors = list(out) if isinstance(out, (list, tuple)) else [out]
                if not tensors or not all(isinstance(t, self.tg.Tensor) for t in tensors):
                    raise TypeError(f"case must return a Tensor or a list/tuple of Tensors, got {type(out).__name__}")
                stages = bool(self.options.stage_renderers)
                overhead, scheduling = self.overhead(), time.thread_time()
                with self.passes(stages) as schedule_passes, self.canonical_capture() as captured:
                    asts = self.scheduler.kernel_asts(tensors)
                if self.options.compile_times:
                    rec["compile"] = compile_record("schedule", time.thread_time() - scheduling
                                                    - (self.overhead() - overhead), schedule_passes)
                rec["schedule_passes"] = schedule_passes if stages else None
                rec["schedule"] = [self.item(i, ast, rec["missing"]) for i, ast in enumerate(asts)]
                for item in rec["schedule"]:
                    if context:
                        item["context"] = context
                self.lower_all(rec["schedule"], asts)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            reason = e.reason if isinstance(e, UnsupportedContext) else unsupported_reason(e, fn)
            rec["status"] = "error" if reason is None else "unsupported"
            rec["error"] = error_text() if reason is None else reason
        rec["seconds"] = round(time.perf_counter() - start, 4)
        rec["debug"] = mask_run_dependent(clean(buf.getvalue()))
        if self.patterns.counts:
            rec["matches"] = self.patterns.matches(before)
        else:
            self.patterns.scan()
            rec["missing"].append({"feature": "match_counts", "reason": "no match_stats in this tinygrad"})
        if self.canonical is not None and rec["status"] == "ok":
            # after the counts and the DEBUG text: this lowering (with the base CPU renderer) is not the case's
            rec["canonical"] = self.canonical.case_documents(captured)
            self.kernel_canonical(rec["schedule"], asts)
        if self.timer is not None and rec["status"] == "ok":
            # last, each kernel in a forked grandchild: nothing above sees the timing
            self.timer.time_items(rec["schedule"], asts, self._fresh_names)
        # the rules of matchers built since the counts (the canonical documents' lowering builds some) are written
        # with this case, not with whichever case the same process runs next (none, for a worker's last case)
        self.patterns.scan()
        return rec

    def _fresh_names(self) -> None:
        self.names.restore(self.after_schedule)

    def kernel_canonical(self, items: list[dict[str, Any]], asts: list[Any]) -> None:
        # the name counter restored once, then kept across the kernels: a fresh process lowering the schedule in
        # order names softmax's second kernel r_4_16n1, and so must the canonical documents
        self.names.restore(self.after_schedule)
        for item, ast in zip(items, asts, strict=True):
            if item["root_op"] == "SINK":
                item["canonical"] = self.canonical.kernel_documents(ast)

    def lowered_case(self, name: str, kernels: list[Any], description: str | None) -> dict[str, Any]:
        """A case record for kernels captured while a command ran (capture mode): each kernel as tinygrad lowered
        it (capture.Lowered), rendered like a scheduled case's kernels, each renderer under the context tinygrad
        lowered it in; the renderer tinygrad used keeps the program tinygrad produced then."""
        rec = self.new_record(name, description)
        self.names.reset()
        self.encoder.reset()
        self.lowering.reset_renderers()
        start = time.perf_counter()
        asts = [k.ast for k in kernels]
        try:
            rec["schedule"] = [self.item(i, k.ast, rec["missing"]) for i, k in enumerate(kernels)]
            for item, k in zip(rec["schedule"], kernels, strict=True):
                item["call_site"] = k.call_site
                if k.context:
                    item["context"] = k.context
                if k.renderer:
                    item["lowered_by"] = k.renderer
            self.lower_all(rec["schedule"], asts, [k.context for k in kernels],
                           [self.reusable_program(k) for k in kernels])
            for item, k in zip(rec["schedule"], kernels, strict=True):
                keep_produced(item, k)
            if self.canonical is not None:
                self.kernel_canonical(rec["schedule"], asts)
            if self.timer is not None:
                self.timer.time_items(rec["schedule"], asts, self._fresh_names)
        except Exception:
            rec["status"], rec["error"] = "error", error_text()
        rec["seconds"] = round(time.perf_counter() - start, 4)
        return rec

    def canonical_capture(self) -> contextlib.AbstractContextManager[dict[str, Any]]:
        if self.canonical is None:
            return contextlib.nullcontext({})
        return self.canonical.schedule_capture()

    def item(self, position: int, ast: Any, missing: list[dict]) -> dict[str, Any]:
        item: dict[str, Any] = {"position": position, "root_op": getattr(ast.op, "name", str(ast.op)),
                                "ast_text": clean(str(ast)), "pyrender": None,
                                "nodes": self.encoder.nodes(toposort(ast)), "programs": []}
        if self.pyrender is not None:
            try:
                rendered = self.pyrender(ast)
                if isinstance(rendered, (list, tuple)):  # some 0.11-era commits return the lines
                    rendered = "\n".join(map(str, rendered))
                item["pyrender"] = clean(rendered)
            except Exception as e:
                missing.append({"feature": "pyrender",
                                "reason": f"item {position}: {type(e).__name__}: {clean(str(e))}"})
        return item

    def lower_all(self, items: list[dict[str, Any]], asts: list[Any],
                  contexts: list[dict[str, Any]] | None = None,
                  produced: list[tuple[str, Program] | None] | None = None) -> None:
        """Every kernel with every renderer, one renderer at a time, the name counter as a fresh process would
        have it: so what is stored does not depend on which other renderers ran. Each kernel is lowered under its
        context (the ContextVars it was lowered with), if any; a kernel with a (renderer, program) in `produced`
        (capture mode) takes that program for that renderer instead of lowering it again."""
        self.after_schedule = after_schedule = self.names.snapshot()
        for rname in self.options.renderers:
            self.names.restore(after_schedule)
            self.graph_caches.clear(collect=False)  # a renderer lowered before filled them: each lowers as alone
            for i, (item, ast) in enumerate(zip(items, asts, strict=True)):
                if item["root_op"] != "SINK":
                    continue
                if produced and produced[i] is not None and produced[i][0] == rname:
                    item["programs"].append(self.program_as_produced(rname, produced[i][1]))
                    continue
                with self.tg.Context(**relowering_context(contexts[i] if contexts else {})):
                    item["programs"].append(self.program(rname, ast))

    def reusable_program(self, kernel: Any) -> tuple[str, Program] | None:
        """(renderer, program) of a captured kernel whose program tinygrad produced is what lowering it again with
        that renderer stores (capture.Lowered): a program with its linearized UOps, for a renderer whose passes are
        not recorded (they need a lowering), outside BEAM (its search chose the program: lowering again renders
        otherwise, which keep_produced notes), where no process-global name counter numbers kernel names (the
        command's count is not a fresh process's). TGSTORE_CAPTURE_RELOWER=1 lowers every kernel again (the proof, in
        tests/test_capture.py, that both store the same)."""
        program = kernel.program
        if (os.environ.get("TGSTORE_CAPTURE_RELOWER") or program is None or program.uops is None
                or program.source is None or kernel.renderer not in self.lowering.renderers
                or kernel.renderer in self.options.stage_renderers or "BEAM" in kernel.context
                or self.names.counter is not None):
            return None
        return kernel.renderer, program

    def program_as_produced(self, rname: str, program: Program) -> dict[str, Any]:
        return {"renderer": rname, "name": program.name, "source": program.source, "error": None,
                "uops": self.encoder.nodes(program.uops), "passes": None}

    def program(self, rname: str, ast: Any) -> dict[str, Any]:
        prog: dict[str, Any] = {"renderer": rname, "name": None, "source": None, "error": None, "uops": None,
                                "passes": None}
        renderer = self.lowering.renderers.get(rname)
        if renderer is None:
            prog["error"] = f"renderer unavailable: {self.lowering.errors.get(rname, 'not built')}"
            return prog
        try:
            stages = rname in self.options.stage_renderers
            overhead, start = self.overhead(), time.thread_time()
            with self.passes(stages) as passes:
                lowered = self.lowering.lower(ast, renderer)
            if self.options.compile_times:
                prog["compile"] = compile_record(rname, time.thread_time() - start - (self.overhead() - overhead),
                                                 passes)
            prog["passes"] = passes if stages else None
            prog["name"], prog["source"] = lowered.name, lowered.source
            if lowered.uops is not None:
                prog["uops"] = self.encoder.nodes(lowered.uops)
            else:
                prog["error"] = "this tinygrad returned no linearized uops"
        except Exception:
            prog["error"] = error_text(limit=8)
        return prog


def compile_record(renderer: str, seconds: float, passes: list[dict[str, Any]] | None) -> dict[str, Any]:
    """How long tinygrad took to schedule a case or lower a kernel for a renderer, in CPU seconds of this thread (a
    loaded machine's waits for a core left out, and the recording's own work), and each named pass's share:
    [name, depth, seconds] in the order they ran (nested passes are inside their parent's time)."""
    return {"renderer": renderer, "seconds": round(max(0.0, seconds), 6),
            "passes": [[e["name"], e["depth"], e.get("seconds", 0.0)] for e in passes or []]}


def relowering_context(context: dict[str, Any]) -> dict[str, Any]:
    """The context a captured kernel is lowered again in: BEAM left out (a search times kernels on a device, differs
    run to run, and cannot run for renderers without hardware); the renderer tinygrad used keeps the program BEAM
    chose (keep_produced)."""
    return {k: v for k, v in context.items() if k != "BEAM"}


def keep_produced(item: dict[str, Any], kernel: Any) -> None:
    """The program tinygrad produced when it lowered the kernel is what is stored for the renderer it used: a
    re-lowering that renders otherwise is corrected (and says so); a PROGRAM-rooted AST, which only that renderer
    lowers, gets its program as produced."""
    if kernel.renderer is None or kernel.source is None:
        return
    prog = next((p for p in item["programs"] if p["renderer"] == kernel.renderer), None)
    if prog is None:
        item["programs"].append({"renderer": kernel.renderer, "name": kernel.name, "source": kernel.source,
                                 "error": None, "uops": None, "passes": None})
    elif prog["source"] != kernel.source:
        prog["error"] = "stored as tinygrad produced it when the command ran; lowering it again rendered otherwise"
        prog["name"], prog["source"] = kernel.name, kernel.source


# What a case raises, in its own code, when this tinygrad lacks an API it uses: the case is unsupported in this era.
UNSUPPORTED = (AttributeError, ImportError, NotImplementedError)


def unsupported_reason(exc: BaseException, fn: Callable) -> str | None:
    """One line saying why the case cannot be expressed in this tinygrad, or None for a real error: the exception is
    one of UNSUPPORTED and was raised in the case file itself, not deeper in tinygrad."""
    if not isinstance(exc, UNSUPPORTED) or exc.__traceback__ is None:
        return None
    innermost = traceback.extract_tb(exc.__traceback__)[-1]
    case_file = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if case_file is None or innermost.filename != case_file:
        return None
    return clean(f"{type(exc).__name__}: {exc}".splitlines()[0])


class UnsupportedContext(NotImplementedError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def case_context(tg: Tinygrad, fn: Callable) -> dict[str, Any]:
    """The Context a case declares (`case_x.context = {"NOOPT": 1}`, a dict of ContextVar values): the case is
    scheduled and lowered under it. A ContextVar this tinygrad lacks makes the case unsupported in this era."""
    context = dict(getattr(fn, "context", None) or {})
    known = getattr(getattr(tg.helpers, "ContextVar", None), "_cache", {})
    if lacking := [k for k in context if k not in known]:
        raise UnsupportedContext(f"this tinygrad has no ContextVar {', '.join(lacking)}")
    return context


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic garbage collection while a case runs (it starts from a full one: caches.GraphCaches.clear).
    When a collection happens depends on how much the process allocated before, so with it a case's UOps that wait
    in reference cycles stayed in tinygrad's UOp cache for a different stretch in the suite than alone: the DEBUG
    text's count of cached UOps and some rules' match counts differed (a rewrite that meets a cached UOp reuses
    what it cached on it). Paused, they wait until the next case's collection, wherever the case runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_cases(path: pathlib.Path, index: int) -> list[tuple[str, Callable, str | None]]:
    spec = importlib.util.spec_from_file_location(f"tgstore_cases_{index}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load case file {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    ret = []
    for attr, val in vars(mod).items():
        if attr.startswith("case_") and callable(val) and getattr(val, "__module__", None) == mod.__name__:
            ret.append((attr[len("case_"):], val, inspect.getdoc(val)))
    return ret
