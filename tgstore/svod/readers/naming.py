"""Whether a kernel name can be the name of a chain of optimize-phase stages (a veto), and whether its trees spell it.

A log whose kernels were optimized one after another on one thread files the n-th chain under the n-th name the
compile phase prints (the schedule's order in both phases); a run on Svod's pool whose kernels happened not to
overlap prints the same shape, in any order in either phase. What the names say rules such a pairing out where it
cannot hold, and proves it where a block's trees spell a name only one kernel has.

Svod names a kernel as tinygrad's `get_optimized_ast` does
(tinygrad/codegen/opt/postrange.py at 0.14; Svod's `Scheduler`, schedule/src/optimizer/scheduler.rs, sorts its
ranges the same way): `r` for a kernel that reduces, `E` otherwise, then the size of each range of the optimized AST
(not those of size 1, not DEVICE), ordered by axis type (`axis_to_pos`: LOOP/WEAK, THREAD/GLOBAL, WARP, LOCAL/
GROUP_REDUCE, UPCAST, REDUCE, UNROLL) then axis number, then the counter's `nK` (`r_8_16_4`: the WEAK range of 8,
the REDUCE range of 16, the UNROLL range of 4). A chain whose `00-initial` tree (the optimized AST) spells another
name (or, at DEBUG level, its `08-post_opt_sym` tree: a symbolic pass keeps the ranges), or that reduces under an
`E_` name, is not that kernel's. Two kernels of one shape stay unchecked: their blocks are told apart only by the
order of one optimizing thread (tgstore.svod.readers.attribute). Trees that spell a name only one kernel of the
program has are that kernel's.
"""

from __future__ import annotations

import re

from tgstore.svod.readers.model import Stage, bare_name
from tgstore.svod.tree import Tree

NAME = re.compile(r"^(?P<kind>[rE])_(?P<dims>\d+(?:_\d+)*)$")
SIZE = re.compile(r"^Int\((\d+)\)$")
EARLY = ("kernel-initial", "kernel-initial-or-00", "pre-movement", "pre-load-collapse", "pre-split-ranges",
         "pre-symbolic", "pre-simplify-ranges", "00-initial", "08-post_opt_sym", "09-pre_expand")


def name_fits(name: str | None, stages: list[Stage]) -> bool:
    """False when the name cannot be the kernel of these stages (see the module); True when it can, or when the
    name or the trees say nothing."""
    return _spells(name, stages) is not False


def name_shown(name: str | None, stages: list[Stage]) -> bool:
    """Whether the trees spell the name: it reduces as they do and their optimized AST's ranges are its sizes."""
    return _spells(name, stages) is True


def spelled_name(stages: list[Stage]) -> str | None:
    """The bare name the stages' trees spell (`r_8_16_4`), or None when they do not say it whole."""
    early = [s.tree for s in stages if s.tree is not None and s.label in EARLY]
    optimized = next((s.tree for label in OPTIMIZED for s in stages if s.tree is not None and s.label == label), None)
    dims = _dims(optimized) if optimized is not None and early else None
    if not dims:
        return None
    reduces = any(node.op == "REDUCE" for tree in early for node in tree.nodes.values())
    return ("r_" if reduces else "E_") + "_".join(str(d) for d in dims)


def _spells(name: str | None, stages: list[Stage]) -> bool | None:
    """Whether the stages' trees spell the name; None when the name or the trees say nothing of it."""
    m = NAME.match(bare_name(name)) if name else None
    if m is None:
        return None
    early = [s.tree for s in stages if s.tree is not None and s.label in EARLY]
    if not early:
        return None
    reduces = any(node.op == "REDUCE" for tree in early for node in tree.nodes.values())
    if reduces != (m.group("kind") == "r"):
        return False
    optimized = next((s.tree for label in OPTIMIZED for s in stages if s.tree is not None and s.label == label), None)
    dims = _dims(optimized) if optimized is not None else None
    return None if dims is None else dims == [int(d) for d in m.group("dims").split("_")]


# the trees that show the optimized AST's ranges: `00-initial` (TRACE), else the first post-opt pass's (DEBUG)
OPTIMIZED = ("00-initial", "08-post_opt_sym")
# tinygrad's axis_to_pos (uop/ops.py at 0.14) by Svod's AxisType names (Debug)
AXIS_POSITION = {"Device": -2, "Weak": -1, "Loop": -1, "Thread": 0, "Global": 0, "Warp": 1, "Local": 2,
                 "Upcast": 3, "GroupReduce": 2, "Reduce": 4, "Unroll": 5}
RANGE = re.compile(r"^R(\d+), (\w+)$")


def _dims(tree: Tree) -> list[int] | None:
    """The sizes a name gives the tree's ranges, in its order; None when a range says less than that needs (a
    symbolic size, an axis type the table does not know) or the tree has SPECIALs (the name starts with those)."""
    ranges: list[tuple[int, int, int]] = []
    for node in tree.nodes.values():
        if node.op == "SPECIAL":
            return None
        if node.op != "RANGE":
            continue
        m = RANGE.match(node.args or "")
        source = tree.nodes.get(node.children[0]) if node.children else None
        size = SIZE.match(source.args or "") if source is not None and source.op == "CONST" else None
        if m is None or size is None or m.group(2) not in AXIS_POSITION:
            return None
        if m.group(2) != "Device" and int(size.group(1)) > 1:
            ranges.append((AXIS_POSITION[m.group(2)], int(m.group(1)), int(size.group(1))))
    return [size for _p, _a, size in sorted(ranges)]
