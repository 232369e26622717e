"""Svod's log of the multi-output case `custom_addmul` (tgstore/cases/builtin.py): one `Tensor::custom_kernel`
writing a+b and a*b, two STOREs in one kernel.

What Svod does with it, read from its source (npatsakula/svod; facts, not code):
* `tensor/src/test/unit/custom_kernel.rs` `test_tensor_custom_kernel_builds_after_call_outputs`: `custom_kernel`
  gives the body one placeholder per tensor (outputs first) and returns one output per placeholder, each an AFTER
  of the one CALL: several outputs of one kernel are supported, as in tinygrad.
* the schedule's END merge (`UOp::group(computations).end(ranges)`, sibling ENDs sharing their ranges): two stores
  over one range are a GROUP under one END, as tinygrad's `UOp.group(...).end(i)`; the C renderer treats GROUP as a
  structural no-op (`matches!(node.op(), Op::Noop | Op::Group(..))`, "Tinygrad cstyle.py:175").
* the kernel then goes through the optimizer like any other (`schedule/src/optimizer/mod.rs`): TRACE `kernel
  initial` {ast.initial, node_count}, the five DEBUG `pre-opt: ...` events {ast.pre, node_count, elapsed_ms}; the
  LLVM renderer's TRACE `llvm codegen: final generated code` {generated_code}; the runtime's DEBUG `Compiling LLVM
  IR` {kernel.name, ir.length}. Svod's UOp::tree() prints each node as `[id] OP(arg) : DType shape=[...]`, a node
  seen before as `[id] → (see above)` (tests/fixtures/svod/docs).

The tree is tinygrad 0.14.0's custom_addmul_16 at its first pass (17 nodes) in Svod's spelling; the log is cut
after the pre-optimization events (the post-opt stages depend on Svod's heuristic opts, which are not derived
here), so parity compares kernel-initial and the pre-opt stages and says the later ones are not in the log.
"""

from __future__ import annotations

from svod_fixtures import OPT, Clock, cargo_preamble, event, node_count

KERNEL = "custom_addmul_16"
TEST = "test::unit::custom_kernel::test_tensor_custom_kernel_addmul::llvm"
INITIAL = """\
[30] SINK[KERNEL] : Scalar(Void)
└── [29] END : Scalar(Void) shape=[]
    ├── [28] GROUP : Scalar(Void) shape=[]
    │   ├── [26] STORE : Scalar(Void) shape=[]
    │   │   ├── [20] INDEX : Scalar(Float32) shape=[]
    │   │   │   ├── [10] PARAM(slot=0) : Scalar(Float32) shape=[Const(16)]
    │   │   │   │   └── [1] CONST(Int(16)) : Scalar(WeakInt) shape=[]
    │   │   │   └── [14] RANGE(R0, Weak) : Scalar(WeakInt) shape=[]
    │   │   │       └── [1] → (see above)
    │   │   └── [24] Add : Scalar(Float32) shape=[]
    │   │       ├── [22] INDEX : Scalar(Float32) shape=[]
    │   │       │   ├── [12] PARAM(slot=2) : Scalar(Float32) shape=[Const(16)]
    │   │       │   │   └── [1] → (see above)
    │   │       │   └── [14] → (see above)
    │   │       └── [23] INDEX : Scalar(Float32) shape=[]
    │   │           ├── [13] PARAM(slot=3) : Scalar(Float32) shape=[Const(16)]
    │   │           │   └── [1] → (see above)
    │   │           └── [14] → (see above)
    │   └── [27] STORE : Scalar(Void) shape=[]
    │       ├── [21] INDEX : Scalar(Float32) shape=[]
    │       │   ├── [11] PARAM(slot=1) : Scalar(Float32) shape=[Const(16)]
    │       │   │   └── [1] → (see above)
    │       │   └── [14] → (see above)
    │       └── [25] Mul : Scalar(Float32) shape=[]
    │           ├── [22] → (see above)
    │           └── [23] → (see above)
    └── [14] → (see above)
"""
CODE = f"""define void @{KERNEL}(ptr noalias align 32 %data0, ptr noalias align 32 %data1, \
ptr noalias align 32 %data2, ptr noalias align 32 %data3) #0 {{
entry:
  ret void
}}
"""
PRE = ["pre-opt: movement ops complete", "pre-opt: load collapse complete", "pre-opt: split ranges complete",
       "pre-opt: symbolic + flatten complete", "pre-opt: simplify ranges complete"]


def addmul_log() -> str:
    """The test's log (`--test-threads=1`), cut after the pre-optimization events."""
    clock = Clock()
    lines = cargo_preamble(TEST)
    first = event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": INITIAL}, node_count=node_count(INITIAL))
    lines.append(f"test {TEST} ... {first}")
    lines += [event(clock, "DEBUG", OPT, message, **{"ast.pre": INITIAL}, node_count=node_count(INITIAL),
                    elapsed_ms=0) for message in PRE]
    lines.append(event(clock, "TRACE", "svod_codegen::llvm::text", "llvm codegen: final generated code",
                       generated_code=CODE))
    lines.append(event(clock, "DEBUG", "svod_runtime::llvm", "Compiling LLVM IR", **{"kernel.name": KERNEL},
                       **{"ir.length": len(CODE)}))
    lines += ["ok", "", "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 811 filtered out; finished in "
              "0.05s", ""]
    return "\n".join(lines) + "\n"
