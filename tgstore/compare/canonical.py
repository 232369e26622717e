"""Svod's canonical UOp JSON (schema v7): checking a document against the schema's rules, its identity hash, and
an aligned node diff of two documents. Written from the schema document (`scripts/CANONICAL_SCHEMA_V7.md` in
npatsakula/morok); used for tinygrad's documents (extracted by tgstore) and Svod's (ingested from its dumps)."""

from __future__ import annotations

import difflib
import json
from typing import Any

from tgstore.store.content import document_hash  # noqa: F401  (svod/ imports it from here)

SCHEMA_VERSION = 7
GRAPH_KEYS = {"schema_version", "stage", "roots", "nodes"}
SCHEDULE_KEYS = {"schema_version", "stage", "items", "output_slots"}
NODE_KEYS = {"id", "op", "dtype", "shape", "arg", "src"}
SCALARS = {"void", "bool", "weakint", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "weakfloat", "fp8e4m3", "fp8e4m3fnuz", "fp8e5m2", "fp8e5m2fnuz", "float16", "bfloat16", "float32", "float64",
           "index"}
NO_ARG_OPS = set(
    "NOOP SINK GROUP INDEX MSTACK STACK RESHAPE EXPAND SHRINK IF ENDIF END BARRIER BIND TUPLE LINEAR DETACH "
    "CONTIGUOUS_BACKWARD AFTER PRECAST LOAD STORE ADD MUL SUB FLOORMOD CMOD MAX POW FLOORDIV CDIV FDIV CMPLT CMPLE "
    "CMPEQ CMPNE CMPGT CMPGE AND OR XOR SHL SHR THREEFRY WHERE MULACC EXP2 LOG2 SIN SQRT RECIPROCAL NEG TRUNC NOT ABS "
    "RSQRT EXP LOG COS TAN FLOOR CEIL ROUND SIGN ERF SQUARE".split())
# arg kind -> (its fields besides `kind`, the ops that may carry it)
ARG_KINDS: dict[str, tuple[set[str], set[str]]] = {
    "none": (set(), NO_ARG_OPS),
    "const": ({"value"}, {"CONST"}),
    "d_type": ({"value"}, {"CAST", "BITCAST"}),
    "index": ({"value"}, {"MSELECT", "GETTUPLE", "MULTI"}),
    "name": ({"value"}, {"SPECIAL"}),
    "device": ({"name"}, {"GETADDR", "COPY"}),
    "param": ({"slot", "dtype", "vmin_vmax", "multiple_of", "name", "address_space", "axis", "device", "volatile"},
              {"PARAM", "BUFFER"}),
    "size": ({"value"}, {"SLICE"}),
    "stage": ({"device", "local_axis", "address_space", "removable"}, {"STAGE"}),
    "axes": ({"values"}, {"PERMUTE"}),
    "bool_axes": ({"values"}, {"FLIP"}),
    "pad": ({"begin", "end"}, {"PAD"}),
    "reduce": ({"op", "axes", "num_axes"}, {"REDUCE", "REDUCE_AXIS"}),
    "all_reduce": ({"op", "device"}, {"ALLREDUCE"}),
    "range": ({"axis", "renumbered", "axis_type"}, {"RANGE"}),
    "constants": ({"values"}, {"VCONST"}),
    "define_var": ({"name", "min", "max"}, {"DEFINE_VAR"}),
    "call": ({"grad_tag", "metadata", "name", "precompile", "precompile_backward"}, {"CALL", "FUNCTION"}),
    "wmma": ({"dims", "dtype_in", "dtype_out", "device", "threads", "upcast_a", "upcast_b", "upcast_c"}, {"WMMA"}),
    "source": ({"code"}, {"SOURCE"}),
    "binary": ({"length"}, {"BINARY"}),
    "ins": ({"opcode", "attributes"}, {"INS"}),
    "hints": ({"values"}, {"CONTIGUOUS"}),
    "code": ({"value"}, {"CUSTOM", "CUSTOMI"}),
    "custom_function": ({"kind_name"}, {"CUSTOM_FUNCTION"}),
    "program": ({"name", "global_size", "local_size", "vars", "globals", "outs", "ins", "target"}, {"PROGRAM"}),
    "sink": ({"name", "opts_to_apply", "applied_opts", "dont_use_locals"}, {"SINK"}),
}
DTYPE_KINDS = {"scalar": {"name"}, "vector": {"scalar", "count"}, "pointer": {"base", "address_space", "size", "count"},
               "image": {"image_kind", "shape"}}
CONST_KINDS = {"invalid": set(), "bool": {"value"}, "int": {"value"}, "uint": {"value"}, "float": {"bits"}}


def _dtype_problem(dtype: Any) -> str | None:
    if not isinstance(dtype, dict) or dtype.get("kind") not in DTYPE_KINDS:
        return f"dtype {dtype!r} is not a tagged dtype"
    if set(dtype) - {"kind"} != DTYPE_KINDS[dtype["kind"]]:
        return f"dtype {dtype['kind']} has keys {sorted(dtype)}"
    if dtype["kind"] == "scalar" and dtype["name"] not in SCALARS:
        return f"unknown scalar dtype {dtype['name']!r}"
    return None


def _const_problem(value: Any) -> str | None:
    if not isinstance(value, dict) or value.get("kind") not in CONST_KINDS:
        return f"constant {value!r} is not a tagged constant"
    if set(value) - {"kind"} != CONST_KINDS[value["kind"]]:
        return f"constant {value['kind']} has keys {sorted(value)}"
    return None


def node_problems(node: dict[str, Any], index: int) -> list[str]:
    """What is wrong with one node of a graph document (ids and references are checked by the caller)."""
    where = f"node {index}"
    if set(node) != NODE_KEYS:
        return [f"{where}: keys {sorted(node)} are not {sorted(NODE_KEYS)}"]
    problems = []
    own = node["id"]
    if not isinstance(node["src"], list) or any(not isinstance(s, int) or not 0 <= s < own for s in node["src"]):
        problems.append(f"{where} ({node['op']}): a source is not an id smaller than its own ({node['src']})")
    if (p := _dtype_problem(node["dtype"])) is not None:
        problems.append(f"{where}: {p}")
    shape = node["shape"]
    if shape is not None:
        for dim in shape if isinstance(shape, list) else [shape]:
            kind = dim.get("kind") if isinstance(dim, dict) else None
            if kind == "symbolic" and not (isinstance(dim.get("node"), int) and 0 <= dim["node"] < own):
                problems.append(f"{where}: symbolic shape dimension {dim} is not an id smaller than its own")
            elif kind not in ("const", "symbolic", "infer"):
                problems.append(f"{where}: shape dimension {dim!r} is not const, symbolic or infer")
    arg = node["arg"]
    kind = arg.get("kind") if isinstance(arg, dict) else None
    if kind not in ARG_KINDS:
        problems.append(f"{where}: arg {arg!r} is not a tagged arg")
        return problems
    fields, ops = ARG_KINDS[kind]
    if node["op"] not in ops and not (kind == "none" and node["op"] == "SINK"):
        problems.append(f"{where}: {node['op']} cannot carry a {kind} arg")
    if set(arg) - {"kind"} != fields:
        problems.append(f"{where}: {kind} arg has keys {sorted(arg)}, not {sorted(fields | {'kind'})}")
    elif kind == "const" and (p := _const_problem(arg["value"])) is not None:
        problems.append(f"{where}: {p}")
    elif kind == "program":
        refs = [v.get("node") for size in (arg["global_size"], arg["local_size"] or []) for v in size
                if isinstance(v, dict) and v.get("kind") == "node"] + list(arg["vars"])
        if any(not isinstance(r, int) or not 0 <= r < own for r in refs):
            problems.append(f"{where}: a PROGRAM launch size or variable is not an id smaller than its own")
    return problems


def validate(document: Any) -> list[str]:
    """The schema's rules a document breaks (empty: valid). Graph documents: exact keys, schema_version 7, dense
    unique ids, every src, symbolic shape dimension and PROGRAM reference a smaller id, tagged dtypes, typed args
    exactly for the ops the schema lists. Schedule documents: the exact top-level keys and each item's `ast`."""
    if not isinstance(document, dict):
        return ["not a JSON object"]
    keys = set(document)
    if document.get("schema_version") != SCHEMA_VERSION:
        return [f"schema_version {document.get('schema_version')!r}, not {SCHEMA_VERSION}"]
    if keys == SCHEDULE_KEYS:
        problems = []
        for i, item in enumerate(document["items"]):
            problems += [f"item {i}: {p}" for p in validate(item.get("ast") if isinstance(item, dict) else None)]
        return problems
    if keys != GRAPH_KEYS:
        return [f"top-level keys {sorted(keys)} are neither a graph's {sorted(GRAPH_KEYS)} nor a schedule's"]
    if not isinstance(document["stage"], str) or not document["stage"]:
        return ["stage is not a nonempty string"]
    nodes = document["nodes"]
    ids = [n.get("id") if isinstance(n, dict) else None for n in nodes]
    if sorted(i for i in ids if isinstance(i, int)) != list(range(len(nodes))):
        return [f"ids are not dense and unique: {len(nodes)} nodes, ids {ids[:20]}"]
    problems = [p for n in nodes for p in node_problems(n, n["id"])]
    if any(not isinstance(r, int) or not 0 <= r < len(nodes) for r in document["roots"]):
        problems.append(f"roots {document['roots']} name ids that do not exist")
    return problems


def aligned_diff(a: dict[str, Any], b: dict[str, Any], context: int = 2) -> list[str]:
    """Two graph documents' nodes aligned by their op sequence (ids ordered), each node printed with its sources as
    ops so that alignment, not numbering, decides what differs; unified-diff lines."""
    def lines(doc: dict[str, Any]) -> list[str]:
        by_id = {n["id"]: n for n in doc["nodes"]}
        out = []
        for n in sorted(doc["nodes"], key=lambda n: n["id"]):
            src = ",".join(by_id[s]["op"] for s in n["src"] if s in by_id)
            arg = {k: v for k, v in n["arg"].items() if k != "kind"}
            out.append(f"{n['op']} {n['dtype'].get('name', n['dtype'])} shape={_shape_text(n['shape'])} "
                       f"arg={json.dumps(arg, sort_keys=True)} src=[{src}]")
        return out

    return list(difflib.unified_diff(lines(a), lines(b), "a", "b", n=context, lineterm=""))


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "-"
    return "[" + ",".join(str(d.get("value", "?")) if d.get("kind") == "const" else d.get("kind", "?")
                          for d in shape) + "]"
