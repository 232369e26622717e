"""The era spelling rules (tgstore/spelling/eras.py) on graphs tinygrad 0.13.0 and 0.14.0 really stored for the core
cases (tests/fixtures/eras/graphs.json: softmax's kernel AST and two of its passes, sum_rows after `lower all index
dtypes`, a symbolic variable; and softmax's first codegen pass and its schedule's `replace bufs` either side of
tinygrad #16421, 7d38edffdb and 1e7f1dcf49, where PARAM's arg became a ParamArg): what differs in spelling only
compares equal, and no rule hides a real change: every graph mutated at random thousands of times (an op, a
constant, a value's dtype, a range, a reduction, a buffer's slot or device, an edge) compares different from the
graph it came from."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import pytest

from tgstore.spelling.eras import normalized, spelling_hash

GRAPHS = json.loads((Path(__file__).parent / "fixtures" / "eras" / "graphs.json").read_text())
ALU = ["ADD", "MUL", "MAX", "SUB", "CMPLT", "CMPNE", "AND", "OR", "XOR", "IDIV", "MOD", "SHL", "SHR", "WHERE",
       "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "NEG", "TRUNC"]
VALUE_DTYPES = ["dtypes.float", "dtypes.half", "dtypes.int", "dtypes.bool", "dtypes.uchar", "dtypes.long"]
MUTATIONS_PER_GRAPH = 1500


@pytest.mark.parametrize(("older", "newer"), [
    ("softmax_ast_0.13", "softmax_ast_0.14"),  # PARAM, RANGE's axis type, REDUCE's arg, literals
    ("softmax_flatten_range_0.13", "softmax_flatten_range_0.14"),  # the same in a pass graph
    ("variable_0.13", "variable_0.14"),  # DEFINE_VAR / PARAM with vmin_vmax
    ("softmax_first_pass_before_16421", "softmax_first_pass_after_16421"),  # PARAM arg 0 / ParamArg(0)
    ("softmax_replace_bufs_before_16421", "softmax_replace_bufs_after_16421"),  # a DEVICE source / device='CPU'
])
def test_what_differs_in_spelling_only_compares_equal(older: str, newer: str) -> None:
    assert GRAPHS[older] != GRAPHS[newer]
    assert spelling_hash(GRAPHS[older]) == spelling_hash(GRAPHS[newer])


@pytest.mark.parametrize(("older", "newer"), [
    ("softmax_postopt_0.13", "softmax_postopt_0.14"),  # 0.13 keeps a CONST 0 among REDUCE's ranges: a real change
    ("sum_rows_index_dtypes_0.13", "sum_rows_index_dtypes_0.14"),  # vectorized loads at 0.13, scalar at 0.14
])
def test_a_real_change_between_the_eras_stays_one(older: str, newer: str) -> None:
    assert spelling_hash(GRAPHS[older]) != spelling_hash(GRAPHS[newer])


def test_each_pass_graph_rule_spells_both_eras_alike() -> None:
    """The rules written for pass graphs, each on a node pair written as 0.13.0 and 0.14.0 wrote it."""
    pairs = [
        # a register: DEFINE_REG with its size in the pointer (0.13) / BUFFER REG with a size source (0.14)
        ([["DEFINE_REG", "dtypes.float.ptr(1, AddrSpace.REG)", "0", []]],
         [["CONST", "dtypes.int", "1", []],
          ["BUFFER", "dtypes.float", "ParamArg(0, dtypes.float, addrspace=AddrSpace.REG)", [0]]]),
        # AFTER typed as the pointer (0.13) or the element (0.14)
        ([["DEFINE_REG", "dtypes.float.ptr(1, AddrSpace.REG)", "0", []],
          ["AFTER", "dtypes.float.ptr(1, AddrSpace.REG)", "None", [0]]],
         [["CONST", "dtypes.int", "1", []],
          ["BUFFER", "dtypes.float", "ParamArg(0, dtypes.float, addrspace=AddrSpace.REG)", [0]],
          ["AFTER", "dtypes.float", "None", [1]]]),
        # PARAM's size as CAST(int, CONST) once index dtypes are lowered (0.14)
        ([["PARAM", "dtypes.float.ptr(64)", "1", []]],
         [["CONST", "dtypes.weakint", "64", []], ["CAST", "dtypes.int", "dtypes.int", [0]],
          ["PARAM", "dtypes.float", "ParamArg(1, dtypes.float, device='CPU')", [1]]]),
        # an index constant cast to int (0.14) and the int constant (0.13)
        ([["CONST", "dtypes.int", "16", []], ["RANGE", "dtypes.int", "(0, AxisType.REDUCE)", [0]]],
         [["CONST", "dtypes.weakint", "16", []], ["CAST", "dtypes.int", "dtypes.int", [0]],
          ["RANGE", "dtypes.int", "(0, AxisType.REDUCE)", [1]]]),
        # the kernel's name in KernelInfo (renamed with an n1 suffix at one era)
        ([["SINK", "dtypes.void", "KernelInfo(name='r_4_16n1', axis_types=(), applied_opts=(Opt(op=OptOps.UNROLL, "
                                  "axis=0, arg=4),), opts_to_apply=None)", []]],
         [["SINK", "dtypes.void", "KernelInfo(name='r_4_16', axis_types=(), applied_opts=(Opt(op=OptOps.UNROLL, "
                                  "axis=0, arg=4),), opts_to_apply=None)", []]]),
    ]
    for older, newer in pairs:
        assert spelling_hash(older) == spelling_hash(newer), (older, newer)


def sizes(nodes: list[list]) -> set[int]:
    """A buffer's size (a CONST, or a CAST of one, under PARAM or BUFFER): compared by its value, the size written
    into the pointer type as 0.13 wrote it, so its dtype is not part of the graph's meaning."""
    found = set()
    for op, _dtype, _arg, src in nodes:
        if op in ("PARAM", "BUFFER"):
            for s in src:
                found.add(s)
                found.update(nodes[s][3] if nodes[s][0] == "CAST" else [])
    return found


def mutate(nodes: list[list], rng: random.Random) -> tuple[list[list], str] | None:
    """One real change to the graph (what no spelling rule may hide), or None when the chosen kind does not apply."""
    g = copy.deepcopy(nodes)
    i = rng.randrange(len(g))
    op, dtype, arg, src = g[i]
    kind = rng.choice(["op", "const", "dtype", "range", "reduce", "slot", "swap", "drop", "opts", "device"])
    if kind == "op" and op in ALU:
        g[i][0] = rng.choice([o for o in ALU if o != op])
    elif kind == "const" and op == "CONST" and re.search(r"-?\d", str(arg)) and str(arg) != "Invalid":
        g[i][2] = re.sub(r"(-?\d+)", lambda m: str(int(m.group(1)) + rng.randint(1, 9)), str(arg), count=1)
    elif kind == "dtype" and dtype in VALUE_DTYPES and op not in ("CAST", "BITCAST") and i not in sizes(nodes):
        g[i][1] = rng.choice([d for d in VALUE_DTYPES if d != dtype])
    elif kind == "range" and op == "RANGE" and re.match(r"^\((\d+),", str(arg)):
        g[i][2] = re.sub(r"^\((\d+),", lambda m: f"({int(m.group(1)) + rng.randint(1, 5)},", str(arg))
    elif kind == "reduce" and op == "REDUCE" and "Ops." in str(arg):
        current = re.search(r"Ops\.(\w+)", str(arg)).group(1)
        other = rng.choice([o for o in ("ADD", "MAX", "MUL") if o != current])
        g[i][2] = str(arg).replace(f"Ops.{current}", f"Ops.{other}")
    elif kind == "slot" and op in ("PARAM", "DEFINE_GLOBAL", "DEFINE_REG") and re.search(r"\d", str(arg)) \
            and "vmin_vmax" not in str(arg):  # a symbolic variable is named, not numbered (0.13 has no slot)
        g[i][2] = re.sub(r"(\d+)", lambda m: str(int(m.group(1)) + rng.randint(1, 9)), str(arg), count=1)
    elif kind == "swap" and len(src) >= 2 and len(set(src)) >= 2:
        a, b = rng.sample(range(len(src)), 2)
        if src[a] == src[b]:
            return None
        src[a], src[b] = src[b], src[a]
    elif kind == "drop" and len(src) >= 2 and op not in ("PARAM", "BUFFER"):
        del src[rng.randrange(len(src))]
    elif kind == "device" and (op == "DEVICE" or "device='" in str(arg) and not str(arg).startswith(
            "ParamArg(") or re.match(r"^ParamArg\(-?\d+, device='", str(arg))):  # 0.14's is the run's backend
        g[i][2] = re.sub(r"'(\w+)", lambda m: f"'{m.group(1)}X", str(arg), count=1)
    elif kind == "opts" and op == "SINK" and "arg=" in str(arg) and "applied_opts=(Opt" in str(arg):
        g[i][2] = re.sub(r"arg=(\d+)", lambda m: f"arg={int(m.group(1)) + rng.randint(1, 7)}", str(arg), count=1)
    else:
        return None
    return g, kind


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_no_rule_hides_a_real_change(name: str) -> None:
    nodes = GRAPHS[name]
    original = spelling_hash(nodes)
    rng = random.Random(name)
    assert normalized(nodes)
    tried: dict[str, int] = {}
    while sum(tried.values()) < MUTATIONS_PER_GRAPH:
        found = mutate(nodes, rng)
        if found is None:
            continue
        changed, kind = found
        tried[kind] = tried.get(kind, 0) + 1
        assert spelling_hash(changed) != original, (name, kind, [n for n, m in zip(nodes, changed, strict=True)
                                                                 if n != m])
    assert len(tried) >= 4, tried  # several kinds of change were made, not one
