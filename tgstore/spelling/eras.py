"""Kernel ASTs in one spelling across tinygrad eras, so that a diff can ignore changes of spelling only. Each rule
rewrites one node from a later era's spelling into the earliest stored one; a rule is a line of SPELLINGS:

- PARAM: 0.14 writes the element dtype, `ParamArg(slot, dtype, device=...)` and the buffer size as a CONST source;
  0.13 and before wrote `dtype.ptr(size)` and the slot alone. Normalized to the latter (the size CONST, then unused,
  goes too; the device is the run's backend).
- PARAM after tinygrad #16421 (1e7f1dcf49, "add ParamArgs"): a kernel buffer's arg is `ParamArg(slot)` where the
  commit before wrote the slot alone: the slot. A schedule's buffer is `ParamArg(slot, device='CPU')` where the
  commit before wrote the slot with a `DEVICE 'CPU'` source after its size: the slot, with the graph's DEVICE node as
  that source (where the graph has none, or the device is several, left as it is). A variable's range and name, or an
  axis, were sources of other kinds before: a change of structure, left as it is.
- RANGE: 0.14 marks the ranges of a kernel AST that the optimizer may still reshape `AxisType.WEAK` where 0.13 wrote
  `AxisType.LOOP`. Normalized to LOOP.
- REDUCE: the arg's second field is `()` at 0.13 and `0` at 0.14 on the same reductions (the reduced ranges are
  its sources in both): only the reducing op is kept.
- CAST: 0.14 repeats the target dtype as the arg where 0.13 left it None: the arg is dropped (the dtype says it).
- CONST Invalid (an index that is never valid): typed weakint at 0.13, bool at 0.14: untyped.
- CONST integer literals: dtypes.int at 0.12-0.13 where 0.14 writes the weak dtypes.weakint (an index constant is
  weakint in both): one name, weakint. Float literals: `2.0` at 0.12, `ConstFloat(2.0)` at 0.13-0.14: the number.
- SINK: 0.12 leaves a kernel's arg None where 0.14 writes a KernelInfo with no optimization applied or asked for:
  such a KernelInfo is None.
- DEFINE_GLOBAL (0.10-0.11) is PARAM's earlier name, with the slot as its arg: renamed PARAM.
- dtypes.index (0.11-0.12) is dtypes.weakint's earlier name (0.13): renamed weakint; 0.14 types float literals
  dtypes.weakfloat where 0.13 wrote dtypes.float: renamed float.
- INDEX: some eras type it as the pointer (`dtypes.float.ptr(4)`), others as the element: the element.
- Node order: eras toposort a graph differently, so graphs are compared by a hash of the root over its sources
  (spelling_hash), not position by position.

Pass graphs (the IR after each codegen pass) add, from the built-in suite at 0.13.0 and 0.14.0:
- PARAM's size source is `CAST(dtypes.int, CONST)` once index dtypes are lowered (0.14), a CONST before.
- Registers: 0.13 writes `DEFINE_REG dtype.ptr(n, AddrSpace.REG)` (arg: its slot), 0.14 `BUFFER dtype
  ParamArg(slot, dtype, addrspace=AddrSpace.REG)` with the size as a CONST source: the former (LOCAL alike).
- AFTER is typed as the pointer it orders (0.13) or as the element (0.14): the element, as INDEX.
- A CONST cast to dtypes.int (0.14 lowers index constants so) is the constant.
- Symbolic variables: `DEFINE_VAR dtype ('name', lo, hi)` at 0.13, `PARAM dtype ParamArg(-k, dtype, vmin_vmax=(lo,
  hi), ..., name='name')` with an empty shape (a STACK of nothing) as its source at 0.14: the former.
- SINK's KernelInfo names the kernel (`r_4_16n1` at one era, `r_4_16` at another): the name is left out (the
  generated source, compared as stored, still shows it).
- A PROGRAM's BINARY is typed void (0.13) or uchar (0.14): untyped.

What a rule may not hide (tests/test_spelling_eras.py mutates real graphs of both eras thousands of times): an op,
a constant's value, a dtype of a value, a range's size or axis number, a reduction's op, a buffer's slot or size,
a buffer's device where the graph spells it (a DEVICE node, #16421's ParamArg; 0.14's ParamArg device is the run's
backend), a kernel's optimizations, or any source (edges and their order).

Nodes are tgstore's encoding, [op, dtype, arg, [source positions]]; the root is the last node. Nodes no longer
reachable from the root after the rules are dropped and positions renumbered in the original order."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

Node = list[Any]
PARAM_ARG = re.compile(r"^ParamArg\((\d+), (dtypes\.[\w.]+)")  # 0.14's: the slot, then its dtype
SPACE_ARG = re.compile(r"^ParamArg\((\d+), ([\w.]+), addrspace=AddrSpace\.(REG|LOCAL)\)$")
BARE_PARAM_ARG = re.compile(r"^ParamArg\((-?\d+)\)$")  # #16421's repr of a buffer with no other field
DEVICE_PARAM_ARG = re.compile(r"^ParamArg\((-?\d+), device=('[^']*')\)$")  # #16421's, with one device
VARIABLE_ARG = re.compile(r"^ParamArg\(-\d+, [\w.]+, vmin_vmax=\((.*?), (.*?)\),.*\bname='([^']*)'")
KERNEL_NAME = re.compile(r"^KernelInfo\(name='[^']*', ")
REDUCE_OP = re.compile(r"^\((Ops\.\w+),")
CONST_FLOAT = re.compile(r"ConstFloat\((.*)\)")
POINTER = re.compile(r"\.ptr\([^)]*\)$")


def _size(src: list[int], nodes: list[Node]) -> tuple[list[int], str]:
    """A buffer's size source: a CONST, or (index dtypes lowered) a CAST of one; (that source, its value)."""
    for s in src:
        node = nodes[s]
        if node[0] == "CONST":
            return [s], str(node[2])
        if node[0] == "CAST" and len(node[3]) == 1 and nodes[node[3][0]][0] == "CONST":
            return [s], str(nodes[node[3][0]][2])
    return [], ""


def _param(node: Node, nodes: list[Node]) -> Node:
    op, dtype, arg, src = node
    variable = VARIABLE_ARG.match(str(arg))
    if variable:  # a symbolic variable (0.14): DEFINE_VAR ('name', lo, hi) as 0.13 wrote it, without 0.14's empty
        low, high, name = variable.groups()  # shape (a STACK of nothing)
        empty = [s for s in src if nodes[s][0] == "STACK" and not nodes[s][3] and nodes[s][1] == "dtypes.void"]
        return ["DEFINE_VAR", dtype, f"('{name}', {low}, {high})", [s for s in src if s not in empty]]
    if bare := BARE_PARAM_ARG.match(str(arg)):
        return [op, dtype, bare.group(1), src]
    if on := DEVICE_PARAM_ARG.match(str(arg)):
        device = next((n for n, node in enumerate(nodes) if node[0] == "DEVICE" and str(node[2]) == on.group(2)), None)
        return node if device is None else [op, dtype, on.group(1), [*src, device]]
    found = PARAM_ARG.match(str(arg))
    if not found:
        return node
    sizes, size = _size(src, nodes)
    pointer = dtype if ".ptr(" in str(dtype) else f"{dtype}.ptr({size})"
    return [op, pointer, _slot(found.group(1), found.group(2), dtype), [s for s in src if s not in sizes]]


def _slot(slot: str, arg_dtype: str, dtype: Any) -> str:
    """A buffer's slot, as 0.13 wrote its arg; ParamArg's own dtype kept where it is not the node's (never so in a
    graph tinygrad made: a rule keeps what it cannot prove redundant)."""
    return slot if arg_dtype == POINTER.sub("", str(dtype)) else f"{slot} ({arg_dtype})"


def _buffer(node: Node, nodes: list[Node]) -> Node:
    """A register or local buffer (0.14): DEFINE_REG / DEFINE_LOCAL with its size in the pointer type (0.13)."""
    found = SPACE_ARG.match(str(node[2]))
    if not found:
        return node
    slot, arg_dtype, space = found.groups()
    sizes, size = _size(node[3], nodes)
    return [f"DEFINE_{space}", f"{node[1]}.ptr({size}, AddrSpace.{space})", _slot(slot, arg_dtype, node[1]),
            [s for s in node[3] if s not in sizes]]


def _range(node: Node, nodes: list[Node]) -> Node:
    return [node[0], node[1], str(node[2]).replace("AxisType.WEAK", "AxisType.LOOP"), node[3]]


def _element_typed(node: Node, nodes: list[Node]) -> Node:
    """INDEX and AFTER: typed as the element, not the pointer it reaches."""
    return [node[0], POINTER.sub("", str(node[1])), node[2], node[3]]


def _reduce(node: Node, nodes: list[Node]) -> Node:
    found = REDUCE_OP.match(str(node[2]))
    return [node[0], node[1], found.group(1) if found else node[2], node[3]]


def _cast(node: Node, nodes: list[Node]) -> Node:
    src = node[3]
    if node[1] == "dtypes.int" and len(src) == 1 and nodes[src[0]][0] == "CONST" and not nodes[src[0]][3] \
            and nodes[src[0]][1] in ("dtypes.weakint", "dtypes.int", "dtypes.index"):
        return _const(["CONST", "dtypes.int", nodes[src[0]][2], []], nodes)  # an index constant lowered to int
    return [node[0], node[1], "None", src]


def _const(node: Node, nodes: list[Node]) -> Node:
    if str(node[2]) == "Invalid":
        return [node[0], "", node[2], node[3]]
    if found := CONST_FLOAT.fullmatch(str(node[2])):
        node = [node[0], node[1], found.group(1), node[3]]
    return [node[0], "dtypes.weakint", node[2], node[3]] if node[1] == "dtypes.int" else node


def _sink(node: Node, nodes: list[Node]) -> Node:
    arg = str(node[2])
    plain = arg.startswith("KernelInfo(") and "applied_opts=()" in arg and "opts_to_apply=None" in arg
    return [node[0], node[1], "None", node[3]] if plain else [node[0], node[1], KERNEL_NAME.sub("KernelInfo(", arg),
                                                             node[3]]


def _binary(node: Node, nodes: list[Node]) -> Node:
    return [node[0], "", node[2], node[3]]


def _define_global(node: Node, nodes: list[Node]) -> Node:
    return ["PARAM", *node[1:]]


# op -> the rule that rewrites a node of that op into the common spelling
SPELLINGS: dict[str, Callable[[Node, list[Node]], Node]] = {
    "PARAM": _param,
    "BUFFER": _buffer,
    "AFTER": _element_typed,
    "BINARY": _binary,
    "RANGE": _range,
    "DEFINE_GLOBAL": _define_global,
    "INDEX": _element_typed,
    "REDUCE": _reduce,
    "CAST": _cast,
    "CONST": _const,
    "SINK": _sink,
}
# a dtype's name in one era -> the common name
DTYPE_NAMES = {"dtypes.index": "dtypes.weakint", "dtypes.weakfloat": "dtypes.float"}


def roots(nodes: Sequence[Node]) -> list[int]:
    """The nodes no other node uses (a kernel's SINK; a pass graph may have more than one), in order; none for
    no nodes. The one definition: compare/graphs.py prints trees from these."""
    used = {s for node in nodes for s in node[3]}
    return [i for i in range(len(nodes)) if i not in used] or ([len(nodes) - 1] if nodes else [])


def normalized(nodes: list[Node]) -> list[Node]:
    """`nodes` in the common spelling, unreachable nodes dropped."""
    if not nodes:
        return []
    spelled = []
    for node in nodes:
        rule = SPELLINGS.get(str(node[0]))
        node = rule(node, nodes) if rule else node
        dtype = DTYPE_NAMES.get(str(node[1]), node[1])
        spelled.append([node[0], dtype, node[2], list(node[3])])
    keep, todo = set(), roots(nodes)  # what the graph computes; a source a rule dropped is left behind
    while todo:
        i = todo.pop()
        if i not in keep:
            keep.add(i)
            todo += spelled[i][3]
    order = _sources_first(spelled, sorted(keep))
    position = {old: new for new, old in enumerate(order)}
    return [[*spelled[i][:3], [position[s] for s in spelled[i][3]]] for i in order]


def _sources_first(nodes: list[Node], kept: list[int]) -> list[int]:
    """`kept` in their order, a node moved after its sources where a rule gave it a later one (a PARAM given the
    graph's DEVICE node): the order of a graph where every source comes first is kept as it is."""
    order: list[int] = []
    done: set[int] = set()
    for start in kept:
        stack = [(start, False)]
        while stack:
            i, expanded = stack.pop()
            if i in done:
                continue
            if expanded:
                done.add(i)
                order.append(i)
                continue
            stack.append((i, True))
            stack += [(s, False) for s in reversed(nodes[i][3]) if s not in done]
    return order


def spelling_hash(nodes: list[Node]) -> str:
    """A hash of the graph in the common spelling that does not depend on node order: each node's hash covers its
    op, dtype, arg and its sources' hashes in order; the root's is the graph's (several roots: their hashes,
    sorted, hashed again)."""
    spelled = normalized(nodes)
    hashes: list[str] = []
    sha = hashlib.sha256
    for op, dtype, arg, src in spelled:  # sources come before their users; fields never hold the separators
        text = "\x1e".join((str(op), str(dtype), str(arg), "\x1f".join(hashes[s] for s in src)))
        hashes.append(sha(text.encode("utf-8", "surrogatepass")).hexdigest())
    if not hashes:
        return ""
    tops = sorted(hashes[i] for i in roots(spelled))
    return tops[0] if len(tops) == 1 else sha("\x1f".join(tops).encode()).hexdigest()
