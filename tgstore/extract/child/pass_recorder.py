"""Stage capture: the graph after each named rewrite pass, recorded by wrapping tinygrad's own `graph_rewrite`.

tinygrad runs its pipeline as a sequence of `graph_rewrite(sink, pm, ..., name="expander")` calls. The recorder
replaces `graph_rewrite` (and `graph_rewrite_map`) in every tinygrad module that holds it (modules import it by
name, so each binding is patched; modules imported later are patched by a rescan), and while a scope is open
records each named call: its position (order of entry), name, nesting depth, the node count and graph of its
output, whether it changed the graph (UOps are hash-consed, so "changed" is `out is not sink`), and its time (the
thread's CPU time, less what recording took: compile times).

Era table (what differs):
* names: `graph_rewrite(..., name=)` exists from 0.11; 0.10's passes are unnamed -> `passes` recorded missing.
* `graph_rewrite_map` (0.11 - 0.12 scheduler) returns a dict: the graph is the map's image of the input sink.
* helper rewrites that are not passes (UPat compilation, `UOp.simplify`) are left out by name (NOT_PASSES).
* a pass whose output is a PROGRAM (0.12+ "linearize/render") is recorded with the PROGRAM's whole graph (its
  kernel SINK, DEVICE, the LINEAR whose sources are the linearized UOps, the SOURCE): its node count is the graph's,
  and the LINEAR node links the program's linearized UOps (stored with the program too).
* rewrite steps (`--rewrites`): each named pass opens a collector in the step log (rewrites.StepLog) that the
  child's counting rewrite fills as matches happen (0.11+); other rewrites open an uncounted level, as tinygrad's
  trace gives each graph_rewrite its own context. 0.10 has no named passes -> missing.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from .api import Tinygrad
from .encode import Encoder, graph_hash
from .step_log import StepEncoder, StepLog

WRAPPED = ("graph_rewrite", "graph_rewrite_map")
NOT_PASSES = frozenset({"process UPat", "compile UPat", "simplify"})


class PassRecorder:
    def __init__(self, tg: Tinygrad, encoder: Encoder, emit_graph: Callable[[str, list], None],
                 steps: StepLog | None = None) -> None:
        self.tg, self.encoder, self.emit_graph = tg, encoder, emit_graph
        self.originals = {name: fn for name in WRAPPED if callable(fn := getattr(tg.ops, name, None))}
        rewrite = self.originals.get("graph_rewrite")
        self.named = rewrite is not None and "name" in signature_of(rewrite).parameters
        self.wrappers = {name: self._wrap(name, fn) for name, fn in self.originals.items()}
        self.records: list[dict[str, Any]] | None = None  # open scope
        self.describing = True  # encode each pass's graph (off: observers only)
        self.observers: list[Callable[[str, Any, Any], None]] = []  # called with (name, input, output) per pass
        self.depth = 0
        self.steps = steps
        self.step_encoder = StepEncoder(encoder)  # one per scope: its memo (and the UOps it keeps alive) last one case
        self.seen_graphs: set[str] = set()
        # seconds spent recording (encoding graphs and steps) so far: taken out of each pass's time, so that a pass's
        # `seconds` is tinygrad's own work however much of it is recorded (nested passes are described inside it)
        self.overhead = 0.0

    @property
    def available(self) -> bool:
        return self.named

    def install(self) -> None:
        """Point every loaded tinygrad module's binding of the wrapped functions at the wrappers (again after lazy
        imports; cheap when nothing changed)."""
        for _name, mod in self.tg.loaded_modules():
            d = getattr(mod, "__dict__", None)
            if d is None:
                continue
            for fname, original in self.originals.items():
                if d.get(fname) is original:
                    d[fname] = self.wrappers[fname]

    def _wrap(self, fname: str, original: Callable) -> Callable:
        signature = signature_of(original)
        is_map = fname == "graph_rewrite_map"

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            records = self.records
            if records is None:
                return original(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
                name, sink = bound.arguments.get("name"), bound.arguments.get("sink")
            except TypeError:
                name, sink = None, None
            steps = self.steps
            if not name or name in NOT_PASSES or sink is None:
                self.depth += 1
                if steps is not None:
                    steps.enter(False)
                try:
                    return original(*args, **kwargs)
                finally:
                    self.depth -= 1
                    if steps is not None:
                        steps.leave()
            entry: dict[str, Any] = {"position": len(records), "name": str(name), "depth": self.depth}
            records.append(entry)
            self.depth += 1
            if steps is not None:
                steps.enter(self.describing)  # a scope only observed (canonical documents) keeps no steps
            collected = None
            overhead = self.overhead
            start = time.thread_time()  # CPU time: waiting for a core on a loaded machine is not the pass's
            try:
                out = original(*args, **kwargs)
            finally:
                self.depth -= 1
                if steps is not None:
                    collected = steps.leave()
            finished = time.thread_time()
            entry["seconds"] = round(max(0.0, finished - start - (self.overhead - overhead)), 6)
            result = out.get(sink, sink) if is_map and isinstance(out, dict) else out
            for observe in self.observers:
                observe(entry["name"], sink, result)
            if self.describing:
                self._describe(entry, sink, result)
            if collected is not None:
                entry["rewrites"] = self.step_encoder.encode(collected)
            self.overhead += time.thread_time() - finished
            return out

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return wrapper

    def _describe(self, entry: dict[str, Any], sink: Any, result: Any) -> None:
        entry["changed"] = result is not sink
        if not hasattr(result, "src") or not hasattr(result, "op"):
            entry["node_count"], entry["graph"] = None, None
            return
        nodes = self.encoder.graph(result)
        entry["node_count"] = len(nodes)
        digest = graph_hash(nodes)
        if digest not in self.seen_graphs:
            self.seen_graphs.add(digest)
            self.emit_graph(digest, nodes)
        entry["graph"] = digest

    @contextlib.contextmanager
    def scope(self, describe: bool = True) -> Iterator[list[dict[str, Any]]]:
        """Record the passes run inside the block; yields the list they are appended to. Without `describe`,
        passes are only shown to the observers (no graphs are encoded or emitted)."""
        self.install()
        records: list[dict[str, Any]] = []
        saved = self.records, self.depth, self.describing, self.step_encoder
        self.records, self.depth, self.describing, self.step_encoder = records, 0, describe, StepEncoder(self.encoder)
        try:
            yield records
        finally:
            self.records, self.depth, self.describing, self.step_encoder = saved

    def uninstall(self) -> None:
        for _name, mod in self.tg.loaded_modules():
            d = getattr(mod, "__dict__", None)
            if d is None:
                continue
            for fname, wrapper in self.wrappers.items():
                if d.get(fname) is wrapper:
                    d[fname] = self.originals[fname]


def signature_of(fn: Callable) -> inspect.Signature:
    """The signature of the function a decorator wraps: tinygrad's tracing decorators (`rewrite_group`,
    `track_matches`) return `(*args, **kwargs)` wrappers without `__wrapped__`, holding the function in a closure."""
    seen: set[int] = set()
    todo = [fn]
    while todo:
        f = inspect.unwrap(todo.pop(0))
        if id(f) in seen:
            continue
        seen.add(id(f))
        sig = inspect.signature(f)
        if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
            return sig
        todo += [c.cell_contents for c in (getattr(f, "__closure__", None) or ())
                 if callable(getattr(c, "cell_contents", None)) and hasattr(c.cell_contents, "__code__")]
    return inspect.signature(fn)
