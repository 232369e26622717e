"""Svod's canonical UOp JSON (schema v7, `scripts/CANONICAL_SCHEMA_V7.md` in npatsakula/morok) for tinygrad graphs.

Written from the schema document. A graph document is {schema_version, stage, roots, nodes}; nodes are numbered
by a post-order walk from the roots (dependencies: the sources -- PAD keeps only its data source -- then symbolic
shape dimensions, then a PROGRAM's symbolic launch sizes and variables), each UOp once, so every reference points
at a smaller id. What the schema cannot represent raises `Unrepresentable` with a typed reason, never a repr.

Stages and where they are taken (era table; the pass names are those of tinygrad 8c8b43de, Svod's parity pin):

  stage        where                                                          lowering
  tensor       input of the scheduler's first "multi_pm" (the tensor graph)   while scheduling the case
  rangeified   output of "limit buffers"                                      while scheduling the case
  kernel_ast   the kernel AST (a schedule item's CALL body)                   -
  kernel_graph what get_kernel_graph returns (Svod's `kernel_ast` dump)      while scheduling the case
  optimized    input of "postopt symbolic" (after apply_opts)                 full_rewrite_to_sink with the base
  postrange    the same graph as optimized                                      CPU Renderer(Target("CPU")), as
  expanded     output of "expander"                                             Svod's parity does
  coalesced    output of "add images" (after memory coalescing)
  gated        output of "move gates from index"
  program      PROGRAM(final sink) with ProgramInfo.from_sink
  linearized   do_linearize(renderer, program, final sink)

Eras without `Target`, `full_rewrite_to_sink`, `ProgramInfo` or `do_linearize` record the kernel stages as
unrepresentable ("NotAvailable"); a pass that did not run leaves its stage "StageNotReached". `scheduled` (the
schedule document) is not produced.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
from collections.abc import Iterator
from typing import Any

from .api import Tinygrad

SCHEMA_VERSION = 7
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# (pass name, its input or output) -> stages taken there
SCHEDULE_STAGES: dict[tuple[str, str], list[str]] = {("multi_pm", "input"): ["tensor"],
                                                     ("limit buffers", "output"): ["rangeified"]}
KERNEL_STAGES: dict[tuple[str, str], list[str]] = {
    ("postopt symbolic", "input"): ["optimized", "postrange"],
    ("expander", "output"): ["expanded"],
    ("add images", "output"): ["coalesced"],
    ("move gates from index", "output"): ["gated"],
}
KERNEL_STAGE_ORDER = ["kernel_ast", "optimized", "postrange", "expanded", "coalesced", "gated", "program",
                      "linearized"]
CASE_STAGE_ORDER = ["tensor", "rangeified"]

NO_ARG_OPS = frozenset(
    "NOOP SINK GROUP INDEX MSTACK STACK RESHAPE EXPAND SHRINK IF ENDIF END BARRIER BIND TUPLE LINEAR DETACH "
    "CONTIGUOUS_BACKWARD AFTER PRECAST LOAD STORE ADD MUL SUB FLOORMOD CMOD MAX POW FLOORDIV CDIV FDIV CMPLT CMPLE "
    "CMPEQ CMPNE CMPGT CMPGE AND OR XOR SHL SHR THREEFRY WHERE MULACC EXP2 LOG2 SIN SQRT RECIPROCAL NEG TRUNC NOT ABS "
    "RSQRT EXP LOG COS TAN FLOOR CEIL ROUND SIGN ERF SQUARE".split())
NO_CANONICAL_FORM = frozenset({"REWRITE_ERROR", "WAIT", "UNSHARD", "PYLITERAL"})
# tinygrad dtype attribute -> canonical scalar name (mapped by identity, not by DType.name)
SCALARS = [("void", "void"), ("bool", "bool"), ("weakint", "weakint"), ("weakfloat", "weakfloat"), ("int8", "int8"),
           ("uint8", "uint8"), ("int16", "int16"), ("uint16", "uint16"), ("int32", "int32"), ("uint32", "uint32"),
           ("int64", "int64"), ("uint64", "uint64"), ("fp8e4m3", "fp8e4m3"), ("fp8e4m3fnuz", "fp8e4m3fnuz"),
           ("fp8e5m2", "fp8e5m2"), ("fp8e5m2fnuz", "fp8e5m2fnuz"), ("float16", "float16"), ("bfloat16", "bfloat16"),
           ("float32", "float32"), ("float64", "float64")]
I64_MAX, U64_MAX = 2**63 - 1, 2**64 - 1


class Unrepresentable(Exception):
    """What the schema cannot represent: `kind` is UnsupportedDivergence (tinygrad metadata with no Svod form),
    SerializationError (metadata the schema rejects), StageNotReached or NotAvailable (this era)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason

    def entry(self) -> dict[str, Any]:
        return {"unsupported": {"error": self.kind, "reason": self.reason}}


def float_bits(value: float) -> str:
    """The IEEE-754 binary64 bit pattern of a Python float, as 0x + 16 hex digits (-0.0, inf and nan exactly)."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016x}"


def divergence(reason: str) -> Unrepresentable:
    return Unrepresentable("UnsupportedDivergence", reason)


def malformed(reason: str) -> Unrepresentable:
    return Unrepresentable("SerializationError", reason)


class Serializer:
    """UOp graphs of the target tinygrad as canonical documents."""

    def __init__(self, tg: Tinygrad) -> None:
        self.tg = tg
        dtypes = tg.attr("tinygrad.dtype", "dtypes")
        self.scalars = {id(dt): name for attr, name in SCALARS if (dt := getattr(dtypes, attr, None)) is not None}
        self.is_unsigned = getattr(dtypes, "is_unsigned", lambda _dt: False)

    # ---- numbering
    def dependencies(self, u: Any) -> list[Any]:
        src = list(u.src[:1]) if u.op.name == "PAD" else list(u.src)
        shape = self.shape_of(u)
        src += [d for d in shape or () if isinstance(d, self.tg.UOp)]
        if u.op.name == "PROGRAM" and type(u.arg).__name__ == "ProgramInfo":
            for size in (u.arg.global_size, u.arg.local_size or ()):
                src += [v for v in size if isinstance(v, self.tg.UOp) and v.op.name != "CONST"]
            src += list(u.arg.vars)
        return src

    def number(self, roots: list[Any]) -> list[Any]:
        """Post-order from the roots, each UOp once (UOps are hash-consed: identity is structure)."""
        order: list[Any] = []
        visited: set[Any] = set()
        active: set[Any] = set()
        stack = [(r, False) for r in reversed(roots)]
        while stack:
            u, done = stack.pop()
            if u in visited:
                continue
            if done:
                visited.add(u)
                active.discard(u)
                order.append(u)
                continue
            if u in active:
                raise malformed(f"cycle through shape or PROGRAM metadata at {u.op.name}")
            active.add(u)
            stack.append((u, True))
            stack += [(d, False) for d in reversed(self.dependencies(u)) if d not in visited]
        return order

    def document(self, stage: str, roots: list[Any]) -> dict[str, Any]:
        order = self.number(roots)
        ids = {u: i for i, u in enumerate(order)}
        nodes = [{"id": i, "op": self.op(u), "dtype": self.dtype(u.dtype), "shape": self.shape(u, ids),
                  "arg": self.arg(u, ids, stage), "src": [ids[s] for s in self.sources(u)]}
                 for i, u in enumerate(order)]
        return {"schema_version": SCHEMA_VERSION, "stage": stage, "roots": [ids[r] for r in roots],
                "nodes": nodes}

    @staticmethod
    def sources(u: Any) -> tuple:
        return u.src[:1] if u.op.name == "PAD" else u.src

    # ---- fields
    @staticmethod
    def op(u: Any) -> str:
        name = u.op.name
        if name in NO_CANONICAL_FORM:
            raise divergence(f"{name} has no Svod canonical operation")
        return name

    def dtype(self, dt: Any) -> dict[str, Any]:
        name = self.scalars.get(id(dt))
        if name is None:
            raise divergence(f"dtype {dt} has no canonical form (the tinygrad side is scalar dtypes only)")
        return {"kind": "scalar", "name": name}

    @staticmethod
    def shape_of(u: Any) -> tuple | None:
        try:
            return u._shape
        except AttributeError:
            raise malformed("this tinygrad's UOps have no _shape") from None
        except Exception as e:
            raise malformed(f"{u.op.name} shape cannot be computed: {type(e).__name__}: {e}") from None

    def shape(self, u: Any, ids: dict[Any, int]) -> list[dict[str, Any]] | None:
        shape = self.shape_of(u)
        if shape is None:
            return None
        dims = []
        for d in shape:
            if isinstance(d, self.tg.UOp):
                dims.append({"kind": "symbolic", "node": ids[d]})
            elif isinstance(d, int) and not isinstance(d, bool) and d >= 0:
                dims.append({"kind": "const", "value": d})
            else:
                raise malformed(f"{u.op.name} shape dimension {d!r} is neither a non-negative int nor a UOp")
        return dims

    def const(self, value: Any, dt: Any) -> dict[str, Any]:
        if type(value).__name__ == "InvalidType":
            return {"kind": "invalid"}
        if isinstance(value, bool):
            return {"kind": "bool", "value": value}
        if isinstance(value, float):
            return {"kind": "float", "bits": float_bits(value)}
        if isinstance(value, int):
            return {"kind": "uint" if self.is_unsigned(dt) else "int", "value": value}
        raise malformed(f"constant {type(value).__name__} is not a bool, int or float")

    @staticmethod
    def device(value: Any) -> str:
        if isinstance(value, tuple):
            raise divergence(f"multi-device {value!r} has no canonical device")
        if not isinstance(value, str):
            raise malformed(f"device {type(value).__name__} is not a string")
        return "CPU" if value.lower() == "cpu" else value

    @staticmethod
    def address_space(space: Any) -> str | None:
        if space is None or space.name == "ALU":
            return None
        return "register" if space.name == "REG" else space.name.lower()

    def opt(self, opt: Any) -> dict[str, Any]:
        name = opt.op.name
        if name == "TC":
            tc_select, opt_level, use_tc = opt.arg
            arg: dict[str, Any] = {"TensorCore": {"tc_select": tc_select, "opt_level": opt_level, "use_tc": use_tc}}
        elif name == "SWAP":
            arg = {"Swap": {"other_axis": opt.arg}}
        else:
            arg = {"Int": 0 if opt.arg is None else opt.arg}
        return {"op": name, "axis": opt.axis, "arg": arg}

    def launch(self, value: Any, ids: dict[Any, int]) -> dict[str, Any]:
        if isinstance(value, self.tg.UOp):
            if value.op.name != "CONST":
                return {"kind": "node", "node": ids[value]}
            value = value.arg
        if isinstance(value, bool):
            raise malformed("a launch size is a bool")
        if isinstance(value, float):
            return {"kind": "float", "bits": float_bits(value)}
        if isinstance(value, int) and -2**63 <= value <= U64_MAX:
            return {"kind": "uint" if value > I64_MAX else "int", "value": value}
        raise malformed(f"launch size {value!r} out of range")

    def arg(self, u: Any, ids: dict[Any, int], stage: str) -> dict[str, Any]:  # noqa: C901 - one case per op
        op, arg = u.op.name, u.arg
        kind = type(arg).__name__
        if op == "CONST":
            return {"kind": "const", "value": self.const(arg, u.dtype)}
        if op in ("CAST", "BITCAST"):
            return {"kind": "d_type", "value": self.dtype(u.dtype)}
        if op == "PAD":
            return self.pad(u)
        if op == "SINK":
            if arg is None:
                return {"kind": "none"}
            if kind != "KernelInfo":
                raise malformed(f"unsupported SINK metadata type {kind}")
            for field in ("axis_types", "estimates", "beam"):
                if getattr(arg, field, None) not in ((), False, None, 0):
                    raise divergence(f"KernelInfo.{field}={getattr(arg, field)!r} has no canonical form")
            name = ANSI.sub("", arg.name)
            return {"kind": "sink", "name": None if stage in ("kernel_ast", "scheduled") and name == "test" else name,
                    "opts_to_apply": None if arg.opts_to_apply is None else [self.opt(o) for o in arg.opts_to_apply],
                    "applied_opts": [self.opt(o) for o in arg.applied_opts],
                    "dont_use_locals": bool(arg.dont_use_locals)}
        if op == "CONTIGUOUS":
            if arg is None:
                return {"kind": "hints", "values": []}
            hints = []
            for o in arg:
                if o.arg is not None and not isinstance(o.arg, int):
                    raise malformed(f"CONTIGUOUS hint argument {o.arg!r} is not an int")
                hints.append({"op": o.op.name, "axis": o.axis, "arg": o.arg})
            return {"kind": "hints", "values": hints}
        if arg is None:
            if op in NO_ARG_OPS:
                return {"kind": "none"}
            raise divergence(f"{op} has no Svod canonical operation")
        if op in ("PARAM", "BUFFER") and kind == "ParamArg":
            return {"kind": "param", "slot": arg.slot, "dtype": self.dtype(arg.dtype),
                    "vmin_vmax": None if arg.vmin_vmax is None else [self.const(v, arg.dtype) for v in arg.vmin_vmax],
                    "multiple_of": arg.multiple_of, "name": arg.name,
                    "address_space": self.address_space(arg.addrspace), "axis": arg.axis,
                    "device": None if arg.device is None else self.device(arg.device), "volatile": bool(arg.volatile)}
        if op == "RANGE" and isinstance(arg, tuple) and arg and type(arg[-1]).__name__ == "AxisType":
            return {"kind": "range", "axis": list(arg[:-1]), "renumbered": stage != "rangeified",
                    "axis_type": arg[-1].name}
        if op in ("REDUCE", "ALLREDUCE") and isinstance(arg, tuple) and len(arg) == 2:
            if op == "REDUCE":
                return {"kind": "reduce", "op": arg[0].name, "axes": None, "num_axes": arg[1]}
            return {"kind": "all_reduce", "op": arg[0].name, "device": self.device(arg[1])}
        if op in ("MSELECT", "GETTUPLE") and isinstance(arg, int):
            return {"kind": "index", "value": arg}
        if op == "SPECIAL" and isinstance(arg, str):
            return {"kind": "name", "value": arg}
        if op in ("GETADDR", "COPY"):
            return {"kind": "device", "name": self.device(arg)}
        if op == "SLICE" and isinstance(arg, int):
            return {"kind": "size", "value": arg}
        if op == "PERMUTE" and isinstance(arg, tuple):
            return {"kind": "axes", "values": list(arg)}
        if op == "FLIP" and isinstance(arg, tuple):
            return {"kind": "bool_axes", "values": [bool(x) for x in arg]}
        if op == "STAGE" and kind == "BufferizeOpts":
            local = arg.addrspace.name == "LOCAL" and isinstance(arg.device, int) and not isinstance(arg.device, bool)
            return {"kind": "stage", "device": None if local or arg.device is None else self.device(arg.device),
                    "local_axis": {"path": [arg.device], "renumbered": True} if local else None,
                    "address_space": "register" if arg.addrspace.name == "REG" else arg.addrspace.name.lower(),
                    "removable": bool(arg.removable)}
        if op == "CALL" or op == "FUNCTION":
            if kind != "CallInfo":
                raise malformed(f"unsupported {op} metadata type {kind}")
            if arg.grad_fxn is not None:
                raise malformed(f"{op} with a gradient function")
            if getattr(arg, "aux", None):
                raise divergence(f"{op} aux {arg.aux!r} has no canonical form (schema v7 requires empty metadata)")
            return {"kind": "call", "grad_tag": None, "metadata": [], "name": arg.name,
                    "precompile": bool(arg.precompile), "precompile_backward": bool(arg.precompile_backward)}
        if op == "WMMA" and isinstance(arg, tuple) and len(arg) == 5:
            dims, dtype_in, device, threads, upcast = arg
            ups = [[{"axis": {"path": [a], "renumbered": True}, "extent": n} for a, n in axes]
                   for axes in (upcast if upcast is not None else ((), (), ()))]
            return {"kind": "wmma", "dims": list(dims), "dtype_in": self.dtype(dtype_in),
                    "dtype_out": self.dtype(u.dtype), "device": self.device(device), "threads": threads,
                    "upcast_a": ups[0], "upcast_b": ups[1], "upcast_c": ups[2]}
        if op == "INS":
            return {"kind": "ins", "opcode": arg if isinstance(arg, str) else arg.name, "attributes": []}
        if op in ("CUSTOM", "CUSTOMI") and isinstance(arg, str):
            return {"kind": "code", "value": arg}
        if op == "CUSTOM_FUNCTION":
            named = {"encdec": "EncDec", "graph": "Graph"}.get(str(arg))
            if named is None:
                raise malformed(f"CUSTOM_FUNCTION {arg!r} has no canonical form")
            return {"kind": "custom_function", "kind_name": named}
        if op == "PROGRAM" and kind == "ProgramInfo":
            return self.program(arg, ids)
        if op in ("SOURCE", "BINARY"):
            raise divergence(f"{op} is rejected in non-verbose canonical documents")
        raise malformed(f"unsupported {op} metadata type {kind}")

    def pad(self, u: Any) -> dict[str, Any]:
        try:
            begin = list(u.src[1].as_shape)
            extent = list(u.src[2].as_shape)
            inner = list(self.shape_of(u.src[0]) or ())
        except Exception as e:
            raise malformed(f"PAD extents cannot be read: {type(e).__name__}: {e}") from None
        end = [e - s - b if all(isinstance(x, int) for x in (e, s, b)) else None
               for e, s, b in zip(extent, inner, begin, strict=False)]
        if len(end) != len(begin) or any(not isinstance(x, int) or x < 0 for x in begin + end):
            raise malformed(f"PAD extents {begin} / {extent} are symbolic or negative")
        return {"kind": "pad", "begin": begin, "end": end}

    def program(self, info: Any, ids: dict[Any, int]) -> dict[str, Any]:
        target = info.target
        for field in ("renderer", "arch", "interface", "indices"):
            if getattr(target, field, ""):
                raise divergence(f"PROGRAM target {field} {getattr(target, field)!r} has no canonical form")
        if not getattr(target, "device", ""):
            raise divergence("PROGRAM target has no device")
        if len(info.global_size) != 3 or (info.local_size is not None and len(info.local_size) != 3):
            raise malformed("PROGRAM launch sizes need exactly 3 entries")
        return {"kind": "program", "name": info.name,
                "global_size": [self.launch(v, ids) for v in info.global_size],
                "local_size": None if info.local_size is None else [self.launch(v, ids) for v in info.local_size],
                "vars": [ids[v] for v in info.vars], "globals": list(info.globals), "outs": list(info.outs),
                "ins": list(info.ins), "target": self.device(target.device)}


class CanonicalCapture:
    """Canonical documents of a case (tensor, rangeified) and of each kernel (kernel_ast to linearized)."""

    def __init__(self, tg: Tinygrad, recorder: Any) -> None:
        self.tg, self.recorder = tg, recorder
        self.serializer = Serializer(tg)
        target = tg.attr("tinygrad.helpers", "Target")
        renderer_class = tg.attr("tinygrad.renderer", "Renderer")
        self.full_rewrite = tg.attr("tinygrad.codegen", "full_rewrite_to_sink")
        self.linearize = tg.attr("tinygrad.codegen", "do_linearize")
        self.program_info = tg.attr(tg.ops_module, "ProgramInfo")
        missing = [name for name, obj in (("Target", target), ("Renderer", renderer_class),
                                          ("full_rewrite_to_sink", self.full_rewrite), ("do_linearize", self.linearize),
                                          ("ProgramInfo", self.program_info)) if obj is None]
        self.unavailable = f"this tinygrad has no {', '.join(missing)}" if missing else None
        self.renderer = renderer_class(target("CPU")) if not missing else None
        self.captured: dict[str, Any] | None = None
        self.wanted: dict[tuple[str, str], list[str]] = {}
        recorder.observers.append(self.observe)

    def observe(self, name: str, sink: Any, result: Any) -> None:
        if self.captured is None:
            return
        for which, value in (("input", sink), ("output", result)):
            for stage in self.wanted.get((name, which), ()):
                self.captured.setdefault(stage, value)

    @contextlib.contextmanager
    def capturing(self, wanted: dict[tuple[str, str], list[str]]) -> Iterator[dict[str, Any]]:
        self.captured, self.wanted = {}, wanted
        try:
            yield self.captured
        finally:
            self.captured, self.wanted = None, {}

    def entries(self, order: list[str], graphs: dict[str, Any], wanted: dict[tuple[str, str], list[str]]
                ) -> dict[str, Any]:
        where = {stage: name for (name, _which), stages in wanted.items() for stage in stages}
        out: dict[str, Any] = {}
        for stage in order:
            try:
                if stage not in graphs:
                    raise Unrepresentable("StageNotReached", f"no pass named {where.get(stage, stage)!r} ran")
                out[stage] = {"document": self.serializer.document(stage, [graphs[stage]])}
            except Unrepresentable as e:
                out[stage] = e.entry()
            except Exception as e:  # a tinygrad object not shaped as the schema expects
                out[stage] = malformed(f"{type(e).__name__}: {e}").entry()
        return out

    def kernel_documents(self, ast: Any) -> dict[str, Any]:
        """kernel_ast to linearized for one kernel, lowered again with the base CPU renderer (output discarded)."""
        if self.unavailable:
            return {stage: Unrepresentable("NotAvailable", self.unavailable).entry() for stage in KERNEL_STAGE_ORDER}
        graphs: dict[str, Any] = {"kernel_ast": ast}
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    self.recorder.scope(describe=False), self.capturing(KERNEL_STAGES) as captured:
                final = self.full_rewrite(ast, self.renderer)
                graphs.update(captured)
                program = self.tg.UOp(self.tg.Ops.PROGRAM, src=(final,),
                                      arg=self.program_info.from_sink(final, self.renderer.target))
                graphs["program"] = program
                graphs["linearized"] = self.linearize(self.renderer, program, final)
        except Exception as e:
            failure = malformed(f"lowering with the base CPU renderer failed: {type(e).__name__}: {e}").entry()
            done = self.entries([stage for stage in KERNEL_STAGE_ORDER if stage in graphs], graphs, KERNEL_STAGES)
            return {stage: done.get(stage, failure) for stage in KERNEL_STAGE_ORDER}
        return self.entries(KERNEL_STAGE_ORDER, graphs, KERNEL_STAGES)

    @contextlib.contextmanager
    def schedule_capture(self) -> Iterator[dict[str, Any]]:
        """tensor and rangeified from the scheduler's passes; `kernel_graph`: what `get_kernel_graph` returns, the
        whole kernel graph Svod dumps as its `kernel_ast` stage (the reference script's production kernel_ast)."""
        hook = kernel_graph_hook(self.tg)
        with self.capturing(SCHEDULE_STAGES) as captured:
            hook.active = captured
            try:
                yield captured
            finally:
                hook.active = None

    def case_documents(self, captured: dict[str, Any]) -> dict[str, Any]:
        out = self.entries(CASE_STAGE_ORDER, captured, SCHEDULE_STAGES)
        if "kernel_graph" in captured:
            try:  # Svod names the stage kernel_ast; tgstore keeps it apart from the kernels' kernel_ast documents
                out["kernel_graph"] = {"document": self.serializer.document("kernel_ast", [captured["kernel_graph"]])}
            except Unrepresentable as e:
                out["kernel_graph"] = e.entry()
            except Exception as e:
                out["kernel_graph"] = malformed(f"{type(e).__name__}: {e}").entry()
        else:
            reason = "this tinygrad has no get_kernel_graph" if self.tg.attr(
                "tinygrad.schedule.rangeify", "get_kernel_graph") is None else "get_kernel_graph did not run"
            out["kernel_graph"] = Unrepresentable("NotAvailable", reason).entry()
        return out


class KernelGraphHook:
    """`get_kernel_graph` wrapped once per process, for good, wherever a loaded tinygrad module holds it: it stores
    what the function returns into the capture that is active, and nothing else. Installed once because tinygrad
    compiles PatternMatcher rules with a copy of their module's globals (the rule `lower_sink_to_linear` in
    `tinygrad/schedule/__init__.py` calls get_kernel_graph): a wrapper installed per case and removed after it is
    frozen into that copy at the first case, so every later case called the first case's wrapper (`get_kernel_graph
    did not run` for every case but the first of a suite)."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.active: dict[str, Any] | None = None

        def get_kernel_graph(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self.active is not None:
                self.active.setdefault("kernel_graph", result)
            return result

        get_kernel_graph.__wrapped__ = original  # type: ignore[attr-defined]
        self.wrapper = get_kernel_graph

    def install(self, tg: Any) -> None:
        """Into every loaded module holding the original (again when modules were imported since)."""
        if self.original is None:  # an era without get_kernel_graph: nothing to wrap
            return
        for _n, mod in tg.loaded_modules():
            d = getattr(mod, "__dict__", {})
            if d.get("get_kernel_graph") is self.original:
                d["get_kernel_graph"] = self.wrapper


_HOOK: KernelGraphHook | None = None


def kernel_graph_hook(tg: Any) -> KernelGraphHook:
    global _HOOK
    original = tg.attr("tinygrad.schedule.rangeify", "get_kernel_graph")
    if _HOOK is None:
        _HOOK = KernelGraphHook(getattr(original, "__wrapped__", original))
    _HOOK.install(tg)
    return _HOOK
