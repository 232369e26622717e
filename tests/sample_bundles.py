"""Small, hand-written extraction bundles (docs/bundle-format.md) and a database built from them.

Three tinygrad commits of one suite on CPU, renderers C and LLVM:

- A (v0.13.0): cases `add` (1 kernel) and `matmul` (2 kernels); patterns fold_add, a lambda, fold_mul_zero.
  The run lacks `schedule_linear` (a run-level missing record).
- B (v0.14.0): `matmul` kernel 0 changed (a bigger AST, new C and LLVM source); kernel 1 identical, but its C source
  changed (a renderer change); new case `relu` (missing `uops`); pattern `fold_mul` added, `fold_mul_zero` removed,
  the lambda moved two lines down (the same rule).
- C (v0.14.1): the extraction crashed: no end record, stderr kept; `add` raised; `matmul` and `relu` as at B.

Tests use `SampleDb` for the names and shas; helpers take any ingested database, so the same tests can run on real
extraction data by building a different `SampleDb`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgstore.bundle import read_bundle
from tgstore.db import open_engine, upgrade
from tgstore.store.ingest import ingest_bundle
from tgstore.store.runs import ExtractionOutcome

SHA_A = "a1" * 20
SHA_B = "b2" * 20
SHA_C = "c3" * 20
SUITE = {"name": "builtin", "hash": "5e" * 32, "files": ["/abs/builtin.py"]}

PATTERNS_A = [
    {"key": "p1", "matcher": "symbolic_simple", "ops": "ADD",
     "upat": "UPat(Ops.ADD, src=(UPat.var('x'), UPat.cvar('c')))",
     "function": "fold_add", "file": "tinygrad/uop/symbolic.py", "line": 40},
    {"key": "p2", "matcher": "symbolic_simple", "ops": "MUL",
     "upat": "UPat(Ops.MUL, src=(UPat.var('x'), UPat.const(1)))",
     "function": "<lambda>", "file": "tinygrad/uop/symbolic.py", "line": 50},
    {"key": "p3", "matcher": "symbolic", "ops": "MUL", "upat": "UPat(Ops.MUL, src=(UPat.var('x'), UPat.const(0)))",
     "function": "fold_mul_zero", "file": "tinygrad/uop/symbolic.py", "line": 60},
]
PATTERNS_B = [
    PATTERNS_A[0],
    {**PATTERNS_A[1], "line": 52},  # moved: still the same rule
    {"key": "p4", "matcher": "symbolic", "ops": "MUL", "upat": "UPat(Ops.MUL, src=(UPat.var('x'), UPat.var('y')))",
     "function": "fold_mul", "file": "tinygrad/uop/symbolic.py", "line": 70},
]


def nodes(*ops: str) -> list[dict[str, Any]]:
    """A chain of UOps, each using the previous one: enough for a distinct, countable AST."""
    return [{"op": op, "dtype": "dtypes.float" if op != "SINK" else "dtypes.void", "arg": "None",
             "src": [i - 1] if i else []} for i, op in enumerate(ops)]


def graph(*ops: str) -> list[list[Any]]:
    """The compact graph form of `nodes(*ops)` (a pass graph record's nodes)."""
    return [[n["op"], n["dtype"], n["arg"], n["src"]] for n in nodes(*ops)]


def graph_hash(nodes_: list[list[Any]]) -> str:
    return hashlib.sha256(json.dumps(nodes_, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def passes(ops: tuple[str, ...]) -> list[dict[str, Any]]:
    """Two codegen passes of the C program: "expander" grows the chain by a RANGE, "final rewrite" keeps it."""
    grown = graph(*ops[:-1], "RANGE", ops[-1])
    return [{"position": 0, "name": "expander", "depth": 0, "node_count": len(grown), "changed": True,
             "seconds": 0.001, "graph": graph_hash(grown)},
            {"position": 1, "name": "final rewrite", "depth": 0, "node_count": len(grown), "changed": False,
             "seconds": 0.001, "graph": graph_hash(grown)}]


def graph_records(*kernels: dict[str, Any]) -> list[dict[str, Any]]:
    """The graph records the kernels' passes refer to, each once."""
    found = {}
    for k in kernels:
        ops = tuple(n["op"] for n in k["nodes"])
        grown = graph(*ops[:-1], "RANGE", ops[-1])
        found[graph_hash(grown)] = {"kind": "graph", "hash": graph_hash(grown), "nodes": grown}
    return list(found.values())


def kernel(position: int, name: str, ops: tuple[str, ...], c_source: str, llvm_source: str,
           pyrender: str | None = None) -> dict[str, Any]:
    return {
        "position": position, "root_op": ops[-1], "nodes": nodes(*ops),
        "ast_text": "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n" + "\n".join(f"  UOp(Ops.{op})," for op in ops)
                    + "\n))",
        "pyrender": pyrender if pyrender is not None else "\n".join(f"c{i} = UOp(Ops.{op})" for i, op in
                                                                     enumerate(ops)) + f"\nast = c{len(ops) - 1}",
        "programs": [
            {"renderer": "C", "name": name, "source": c_source, "error": None,
             "uops": [{"op": "DEFINE_GLOBAL", "dtype": "dtypes.float.ptr(16)", "arg": "0", "src": []}],
             "passes": passes(ops)},
            {"renderer": "LLVM", "name": name, "source": llvm_source, "error": None, "uops": None},
        ],
    }


ADD_KERNEL = kernel(0, "E_4", ("DEFINE_GLOBAL", "LOAD", "ADD", "STORE", "SINK"),
                    "void E_4(float* restrict data0, float* restrict data1) {\n"
                    "  for (int i = 0; i < 4; i++) {\n    data0[i] = data1[i] + 1.0f;\n  }\n}",
                    "define void @E_4(ptr %data0, ptr %data1) {\n  ret void\n}")
MATMUL_K0_A = kernel(0, "r_16_16", ("DEFINE_GLOBAL", "LOAD", "MUL", "REDUCE", "STORE", "SINK"),
                     "void r_16_16(float* restrict data0, float* restrict data1, float* restrict data2) {\n"
                     "  float acc0 = 0.0f;\n  for (int k = 0; k < 16; k++) {\n"
                     "    acc0 += data1[k] * data2[k];\n  }\n  data0[0] = acc0;\n}",
                     "define void @r_16_16(ptr %data0) {\n  ret void\n}")
MATMUL_K0_B = kernel(0, "r_16_16_4", ("DEFINE_GLOBAL", "LOAD", "LOAD", "MUL", "REDUCE", "STORE", "SINK"),
                     "void r_16_16_4(float* restrict data0, float* restrict data1, float* restrict data2) {\n"
                     "  float4 acc0 = (float4)(0.0f);\n  for (int k = 0; k < 4; k++) {\n"
                     "    acc0 += *((float4*)(data1 + k*4)) * *((float4*)(data2 + k*4));\n  }\n"
                     "  data0[0] = acc0.x + acc0.y + acc0.z + acc0.w;\n}",
                     "define void @r_16_16_4(ptr %data0) {\n  ret void\n}")
MATMUL_K1 = ("DEFINE_GLOBAL", "LOAD", "EXP2", "STORE", "SINK")
MATMUL_K1_A = kernel(1, "E_16", MATMUL_K1, "void E_16(float* restrict data0) {\n  data0[0] = exp2(data0[0]);\n}",
                     "define void @E_16(ptr %data0) {\n  ret void\n}")
MATMUL_K1_B = kernel(1, "E_16", MATMUL_K1,
                     "void E_16(float* restrict data0) {\n  data0[0] = __builtin_exp2f(data0[0]);\n}",
                     "define void @E_16(ptr %data0) {\n  ret void\n}")
RELU_KERNEL = kernel(0, "E_8", ("DEFINE_GLOBAL", "LOAD", "MAX", "STORE", "SINK"),
                     "void E_8(float* restrict data0) {\n  data0[0] = fmax(data0[0], 0.0f);\n}",
                     "define void @E_8(ptr %data0) {\n  ret void\n}")


def case(name: str, schedule: list[dict[str, Any]], matches: dict[str, tuple[int, int]] | None = None,
         status: str = "ok", error: str | None = None, missing: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"kind": "case", "name": name, "status": status, "error": error, "seconds": 0.25,
            "debug": f"scheduled {name}: {len(schedule)} items\n*** CPU {name}", "schedule": schedule,
            "matches": [{"pattern": key, "matches": m, "tries": t} for key, (m, t) in (matches or {}).items()],
            "missing": missing or []}


def header(sha: str, version: str, date: str, subject: str) -> dict[str, Any]:
    return {"kind": "header", "bundle_version": 1, "producer": "tgstore-child", "started_at": date,
            "python": "3.11.7", "platform": "Linux-test-x86_64",
            "tinygrad": {"path": "/abs/tinygrad", "version": version, "tree_hash": sha[:8] * 8,
                         "git": {"sha": sha, "date": date, "subject": subject}},
            "backend": "CPU", "renderers": ["C", "LLVM"], "debug_level": 4, "suite": SUITE,
            "features": {"tensor_schedule": True, "pyrender": True}}


def write_bundle(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def bundle_a() -> list[dict[str, Any]]:
    return [header(SHA_A, "0.13.0", "2026-01-10T12:00:00+00:00", "older: scalar matmul"),
            {"kind": "missing", "feature": "schedule_linear", "reason": "no tinygrad.engine.schedule.linear",
             "case": None},
            *({"kind": "pattern", **p} for p in PATTERNS_A),
            *graph_records(ADD_KERNEL, MATMUL_K0_A, MATMUL_K1_A),
            case("add", [ADD_KERNEL], {"p1": (3, 10)}),
            case("matmul", [MATMUL_K0_A, MATMUL_K1_A], {"p1": (7, 20), "p2": (2, 20), "p3": (1, 20)}),
            {"kind": "end", "finished_at": "2026-01-10T12:00:05+00:00", "cases": 2, "failed_cases": 0}]


def bundle_b() -> list[dict[str, Any]]:
    return [header(SHA_B, "0.14.0", "2026-02-10T12:00:00+00:00", "newer: upcast matmul"),
            *({"kind": "pattern", **p} for p in PATTERNS_B),
            *graph_records(ADD_KERNEL, MATMUL_K0_B, MATMUL_K1_B, RELU_KERNEL),
            case("add", [ADD_KERNEL], {"p1": (3, 10)}),
            case("matmul", [MATMUL_K0_B, MATMUL_K1_B], {"p1": (5, 20), "p4": (9, 30), "p2": (2, 20)}),
            case("relu", [RELU_KERNEL], {"p1": (1, 4)}, missing=[{"feature": "uops", "reason": "no linearizer"}]),
            {"kind": "end", "finished_at": "2026-02-10T12:00:05+00:00", "cases": 3, "failed_cases": 0}]


ADD_TRACEBACK = ("Traceback (most recent call last):\n  File \"tinygrad/tensor.py\", line 120, in add\n"
                 "AssertionError: shape mismatch in add")
CRASH_STDERR = ("loading tinygrad\nFatal Python error: Segmentation fault\n\n"
                "Current thread 0x01 (most recent call first)")


def bundle_c() -> list[dict[str, Any]]:
    return [header(SHA_C, "0.14.1", "2026-03-10T12:00:00+00:00", "newest: add broke"),
            *({"kind": "pattern", **p} for p in PATTERNS_B),
            *graph_records(MATMUL_K0_B, MATMUL_K1_B, RELU_KERNEL),
            case("add", [], status="error", error=ADD_TRACEBACK),
            case("matmul", [MATMUL_K0_B, MATMUL_K1_B], {"p1": (5, 20), "p4": (9, 30), "p2": (2, 20)}),
            case("relu", [RELU_KERNEL], {"p1": (1, 4)}, missing=[{"feature": "uops", "reason": "no linearizer"}])]
    # no end record: the extraction crashed after the last case


MACHINE = {"fingerprint": "5a3b1e0f5a3b1e0f", "hostname": "sample-host", "cpu_model": "Sample CPU", "cores": 4,
           "device": "CPU", "compiler": "clang", "compiler_version": "clang version 14", "settings": {}}


def timed(records: list[dict[str, Any]], matmul_factor: int) -> list[dict[str, Any]]:
    """The bundle as extracted with --time: 100 µs per kernel (x matmul_factor for matmul's first kernel)."""
    records = json.loads(json.dumps(records))
    for record in records:
        if record["kind"] == "header":
            record["timing"] = {"machine": MACHINE, "timer": "time_program_uop", "runs": 5, "warmup": 2,
                                "calibration_ns": 20_000_000}
        if record["kind"] == "case":
            for item in record["schedule"]:
                ns = 100_000 * (matmul_factor if record["name"] == "matmul" and item["position"] == 0 else 1)
                item["timing"] = {"status": "ok", "ns_min": ns, "ns_median": ns + 1000, "ns_max": ns + 5000,
                                  "spread": 0.01, "samples": [ns, ns + 1000, ns + 5000], "ops": 4096,
                                  "mem": 8192, "program": item["programs"][0]["name"], "error": None}
                for program in item["programs"]:  # compile times: 2 ms per lowering (x matmul_factor: expander)
                    expander = 0.001 * matmul_factor
                    program["compile"] = {"renderer": program["renderer"], "seconds": expander + 0.001,
                                          "passes": [["expander", 0, expander], ["final rewrite", 0, 0.001]]}
            record["compile"] = {"renderer": "schedule", "seconds": 0.004, "passes": [["schedule", 0, 0.004]]}
    return records


@dataclass
class SampleDb:
    """An ingested database and what the tests may ask of it."""

    path: Path
    sha_a: str = SHA_A
    sha_b: str = SHA_B
    sha_c: str = SHA_C
    version_a: str = "0.13.0"
    version_b: str = "0.14.0"
    cases: list[str] = field(default_factory=lambda: ["add", "matmul", "relu"])


def build_sample_db(directory: Path) -> SampleDb:
    """Create `directory/sample.db` with the real migrations and ingest the three bundles above."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sample.db"
    engine = open_engine(path)
    upgrade(engine)
    ingest_bundle(engine, read_bundle(write_bundle(directory / "a.jsonl", bundle_a())))
    ingest_bundle(engine, read_bundle(write_bundle(directory / "b.jsonl", bundle_b())))
    ingest_bundle(engine, read_bundle(write_bundle(directory / "c.jsonl", bundle_c())),
                  outcome=ExtractionOutcome("failed", returncode=-11, stderr=CRASH_STDERR))
    # kernel timings of a and b (--time): the runs stay, a timing session each; b's first matmul kernel is 3x slower
    ingest_bundle(engine, read_bundle(write_bundle(directory / "a_timed.jsonl", timed(bundle_a(), 1))))
    ingest_bundle(engine, read_bundle(write_bundle(directory / "b_timed.jsonl", timed(bundle_b(), 3))))
    engine.dispose()
    return SampleDb(path=path)


def is_svod_query(name: str) -> bool:
    """Queries over Svod data: checked on Svod fixtures in tests/test_svod.py, not on these bundles."""
    return name.startswith("svod_") or name == "parity_matrix"


def query_params(db: SampleDb) -> dict[str, dict[str, str]]:
    """Parameters for every query in queries/ that make it return rows on `db` (commits named three ways)."""
    return {
        "kernels_changed": {"a": db.sha_a[:8], "b": db.version_b},
        "sources_changed": {"a": db.sha_a[:8], "b": db.version_b, "renderer": ""},
        "patterns_changed": {"a": db.version_a, "b": db.sha_b},
        "uop_count_history": {"case_name": "matmul"},
        "source_history": {"case_name": "matmul", "renderer": "C"},
        "failed_runs": {},
        "top_patterns": {"commit": db.sha_b[:10], "case_name": "matmul"},
        "pattern_first_seen": {"pattern": "fold_mul"},
        "kernel_counts": {"case_name": "add"},
        "case_results_diff": {"a": db.sha_b, "b": db.sha_c[:6]},
        "runs_missing": {"feature": ""},
        "passes_changed": {"a": db.sha_a[:8], "b": db.version_b, "case_name": ""},
        "pass_history": {"case_name": "matmul", "renderer": "C", "kernel": ""},
        "op_first_pass": {"case_name": "matmul", "op": "RANGE", "commit": db.version_b},
        "commits": {},
        "case_at_commit": {"commit": db.version_b, "case_name": "matmul", "renderer": "C"},
        "passes_at_commit": {"commit": db.version_b, "case_name": "matmul", "kernel": ""},
        "kernel_time_history": {"case_name": "matmul", "machine": ""},
        "compile_time_history": {"case_name": "matmul", "renderer": "C", "machine": ""},
        "kernel_slowdowns": {"a": db.version_a, "b": db.sha_b[:8], "threshold": "0.5"},
    }
