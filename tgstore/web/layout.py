"""A UOp graph drawn as SVG: a layered (Sugiyama-style) layout computed here, in milliseconds, with no system
package and no JavaScript (Graphviz's `dot` needs a Debian package and takes seconds on the thousand-node graphs of
the models suite; a JavaScript layout would leave the page empty without a browser running it).

Nodes come in toposort order, sources first (tgstore's encoding everywhere: [op, dtype, arg, [source positions]]).
Leaves (buffers, constants) sit in the top layer and each node one layer below its deepest source, so data flows
down to the SINK. Within a layer nodes are ordered by a few barycentre sweeps, which keeps a node's sources above
it in source order; edges are labelled with the source position where a node has several.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from tgstore.compare.uop_text import left_out

Node = Sequence[Any]  # [op, dtype, arg, [source positions]]

CHAR_WIDTH = 6.6  # px per character at the label font size (monospace 11px)
NODE_HEIGHT = 34
LAYER_GAP = 46
NODE_GAP = 14
MAX_ARG = 40  # characters of an arg shown in a label (the whole arg is in the node's tooltip)
SWEEPS = 4
LINE_HEIGHT = 13
FOLDED_OPS = frozenset({"CONST", "VCONST", "DEFINE_VAR"})
GHOST = ' opacity="0.45"'  # removed nodes, shown where they were
MARK_COLOURS = {"changed": "#e0301e", "added": "#1e9e3a", "removed": "#999999"}

# op -> family (colour), after tinygrad VIZ's grouping: memory, loads/stores, arithmetic, reduce, loops, ...
FAMILIES: dict[str, tuple[str, ...]] = {
    "buffer": ("BUFFER", "PARAM", "DEFINE_GLOBAL", "DEFINE_LOCAL", "DEFINE_REG", "DEFINE_ACC", "BUFFERIZE",
               "BUFFER_VIEW", "MSELECT", "MSTACK", "UNIQUE", "LUNIQUE", "DEVICE", "SLICE", "STAGE"),
    "memory": ("LOAD", "STORE", "INDEX", "PTRCAT", "COPY", "ASSIGN", "AFTER", "GEP", "VECTORIZE", "CAT"),
    "const": ("CONST", "VCONST", "DEFINE_VAR", "BIND", "NOOP"),
    "movement": ("RESHAPE", "PERMUTE", "EXPAND", "PAD", "SHRINK", "FLIP", "VIEW", "VALID", "MULTI", "CONTIGUOUS",
                 "CONTIGUOUS_BACKWARD", "DETACH"),
    "reduce": ("REDUCE", "REDUCE_AXIS", "ALLREDUCE", "WMMA", "CONTRACT", "UNROLL"),
    "loop": ("RANGE", "END", "ENDRANGE", "SPECIAL", "IF", "ENDIF", "BARRIER", "GROUP"),
    "kernel": ("SINK", "KERNEL", "CALL", "PROGRAM", "LINEAR", "SOURCE", "BINARY", "FUNCTION", "TUPLE", "GETTUPLE"),
    "cast": ("CAST", "BITCAST"),
}
FAMILY_OF = {op: family for family, ops in FAMILIES.items() for op in ops}
COLOURS = {  # fill, stroke
    "buffer": ("#e8dcf5", "#8a63b8"), "memory": ("#d8ecf8", "#3d7eb3"), "const": ("#eeeeee", "#8a8a8a"),
    "movement": ("#fdf0d2", "#c4911f"), "reduce": ("#fbd9d3", "#c24f3c"), "loop": ("#d9f2e0", "#3c9a5a"),
    "kernel": ("#dfe3e8", "#4a5563"), "cast": ("#f6e0f0", "#b0478f"), "alu": ("#fff8c6", "#a89a1d"),
}


def family(op: str) -> str:
    return FAMILY_OF.get(op, "alu")


@dataclass
class Placed:
    index: int
    layer: int
    x: float  # centre
    y: float  # top
    width: float
    lines: tuple[str, ...]  # op; dtype and arg; folded constants (when any)


def labels(node: Node) -> tuple[str, str]:
    """Two label lines: the op (with "+N not drawn" where the drawing's cap left N of its sources out), then dtype
    and arg (shortened)."""
    op, dtype, arg = str(node[0]), node[1], node[2]
    if (left := left_out(node)) and node[3]:
        op = f"{op} (+{left} not drawn)"
    dtype_text = "" if dtype in (None, "dtypes.void") else str(dtype).removeprefix("dtypes.")
    arg_text = "" if arg in (None, "None", "") else str(arg)
    if len(arg_text) > MAX_ARG:
        arg_text = arg_text[:MAX_ARG - 1] + "…"
    return op, " ".join(part for part in (dtype_text, arg_text) if part)


def layers(nodes: Sequence[Node]) -> list[int]:
    """Each node's layer: one below its deepest source, then leaves (constants, buffers, ranges) moved down to
    just above their first user, so they do not all crowd the top row with long edges."""
    depth = [0] * len(nodes)
    for i, node in enumerate(nodes):
        srcs = [s for s in node[3] if 0 <= s < i]
        depth[i] = 1 + max((depth[s] for s in srcs), default=-1)
    first_user: dict[int, int] = {}
    for i, node in enumerate(nodes):
        for s in node[3]:
            if 0 <= s < i:
                first_user[s] = min(first_user.get(s, depth[i]), depth[i])
    for i, node in enumerate(nodes):
        if not node[3] and i in first_user:
            depth[i] = first_user[i] - 1
    return depth


def order_layers(nodes: Sequence[Node], depth: list[int], hidden: Collection[int] = ()) -> list[list[int]]:
    """Nodes per layer, ordered to reduce crossings: barycentres of sources going down, of users going up."""
    count = max(depth, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(count)]
    for i, d in enumerate(depth):
        if i not in hidden:
            rows[d].append(i)
    users: list[list[tuple[int, int]]] = [[] for _ in nodes]  # (user, source position)
    for i, node in enumerate(nodes):
        for pos, s in enumerate(node[3]):
            if 0 <= s < i and s not in hidden:
                users[s].append((i, pos))
    where = {i: float(k) for row in rows for k, i in enumerate(row)}

    def barycentre(i: int, layer: int, down: bool) -> tuple[float, float]:
        if down:  # sources above, in source order
            refs = [where[s] + pos * 1e-3 for pos, s in enumerate(nodes[i][3]) if s in where and depth[s] < layer]
        else:
            refs = [where[u] for u, _pos in users[i]]
        return (sum(refs) / len(refs) if refs else where[i], where[i])

    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        for d in (range(1, count) if down else range(count - 2, -1, -1)):
            rows[d].sort(key=lambda i, d=d, down=down: barycentre(i, d, down))
            for k, i in enumerate(rows[d]):
                where[i] = float(k)
    return rows


def foldable(nodes: Sequence[Node]) -> set[int]:
    """Constants and variables without sources that some node uses: drawn in their users' labels, as tinygrad's
    VIZ does, instead of as boxes of their own."""
    used = {s for node in nodes for s in node[3]}
    return {i for i, node in enumerate(nodes) if str(node[0]) in FOLDED_OPS and not node[3] and i in used}


def folded_line(nodes: Sequence[Node], i: int, folded: Collection[int]) -> str:
    """The folded sources of node i, as `position:value` (a variable by its name)."""
    parts = []
    for pos, s in enumerate(nodes[i][3]):
        if s in folded:
            value = nodes[s][2]
            parts.append(f"{pos}:{short_arg(value)}")
    text = " ".join(parts)
    return text if len(text) <= MAX_ARG else text[:MAX_ARG - 1] + "…"


def short_arg(value: Any) -> str:
    text = str(value)
    if text.startswith("(") and "'" in text:  # DEFINE_VAR ('name', lo, hi): its name
        return text.split("'")[1]
    return text


def place(nodes: Sequence[Node], folded: Collection[int] = ()) -> tuple[list[Placed | None], float, float]:
    """Every node's box (None for folded ones); the drawing's width and height."""
    folded = set(folded)
    depth = layers(nodes)
    rows = order_layers(nodes, depth, folded)
    text = [labels(n) for n in nodes]
    if folded:
        text = [(a, b, folded_line(nodes, i, folded)) for i, (a, b, *_rest) in enumerate(text)]
    widths = [max(len(t) for t in lines) * CHAR_WIDTH + 16 for lines in text]
    row_widths = [sum(widths[i] for i in row) + NODE_GAP * max(len(row) - 1, 0) for row in rows]
    total_width = max(row_widths, default=0) + 2 * NODE_GAP
    placed: dict[int, Placed] = {}
    y = NODE_GAP
    for d, row in enumerate(rows):
        x = (total_width - row_widths[d]) / 2
        row_height = max((node_height(text[i]) for i in row), default=0)
        for i in row:
            placed[i] = Placed(i, d, x + widths[i] / 2, y, widths[i], text[i])
            x += widths[i] + NODE_GAP
        if row:
            y += row_height + LAYER_GAP
    height = y - LAYER_GAP + NODE_GAP if placed else 2 * NODE_GAP
    return [placed.get(i) for i in range(len(nodes))], total_width, height


def node_height(lines: Sequence[str]) -> float:
    return NODE_HEIGHT + (LINE_HEIGHT if len(lines) > 2 and lines[2] else 0)


def svg(nodes: Sequence[Node], *, highlight: Collection[int] = (), marks: dict[int, str] | None = None,
        fold: bool = False, link: str | None = None) -> str:
    """The graph as a standalone SVG document. Each node is a <g class="node"> holding its box, label and a <title>
    with the whole op, dtype and arg, and `data-src` (its drawn sources' positions, for the page's script);
    `highlight` marks nodes "changed", `marks` gives a class per node (changed, added, removed: removed ones are
    drawn ghosted). With `fold`, sourceless constants and variables are written into their users' labels."""
    marks = {**{i: "changed" for i in highlight}, **(marks or {})}
    folded = foldable(nodes) if fold else set()
    boxes, width, height = place(nodes, folded)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="tgstore-graph" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" font-family="ui-monospace, DejaVu Sans '
           f'Mono, monospace" font-size="11" data-nodes="{len(nodes) - len(folded)}" '
           f'data-folded-count="{len(folded)}">',
           '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
           'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#777"/></marker></defs>',
           '<g class="edges" fill="none" stroke="#999" marker-end="url(#arrow)">']
    # whole pixels and attributes shared through their group: a 2,258-node graph's page was 1.8 MB
    edge_labels = []
    for i, node in enumerate(nodes):
        b = boxes[i]
        if b is None:
            continue
        srcs = [s for s in node[3] if 0 <= s < i]
        for pos, s in enumerate(srcs):
            a = boxes[s]
            if a is None:
                continue
            x1, y1 = a.x, a.y + node_height(a.lines)
            x2 = b.x + (pos - (len(srcs) - 1) / 2) * min(12.0, b.width / (len(srcs) + 1))
            y2 = b.y
            mid = (y1 + y2) / 2
            ghost = " ghost" if marks.get(i) == "removed" else ""
            out.append(f'<path class="edge{ghost}" data-a="{s}" data-b="{i}" d="M{x1:.0f},{y1:.0f}C{x1:.0f},'
                       f'{mid:.0f} {x2:.0f},{mid:.0f} {x2:.0f},{y2:.0f}"/>')
            if len(srcs) > 2:  # source positions, staggered so neighbouring labels do not overlap
                edge_labels.append(f'<text data-b="{i}" x="{x2 + 2:.0f}" y="{y2 - 3 - 8 * (pos % 2):.0f}">{pos}</text>')
    out.append("</g>")
    out.append('<g class="edge-labels" font-size="9" fill="#666">' + "".join(edge_labels) + "</g>")
    out.append('<g class="nodes" text-anchor="middle">')
    for b, node in zip(boxes, nodes, strict=True):
        if b is None:
            continue
        fam = family(str(node[0]))
        fill, stroke = COLOURS[fam]
        mark = marks.get(b.index)
        cls = f"node {mark}" if mark else "node"
        folded_srcs = [s for s in node[3] if s in folded]
        tip = escape(f"#{b.index} {node[0]} {node[1]} {node[2]}"
                     + "".join(f"\n  src {pos}: {nodes[s][0]} {nodes[s][2]}" for pos, s in enumerate(node[3])
                               if s in folded))
        x = b.x - b.width / 2
        h = node_height(b.lines)
        href = f' data-href="{escape(link)}#n{b.index}"' if link else ""
        srcs = " ".join(str(s) for s in node[3] if s not in folded and 0 <= s < b.index)
        search = escape(" ".join(str(nodes[s][2]) for s in folded_srcs))
        ghost = ' stroke-dasharray="4 3"' if mark == "removed" else ""
        out.append(f'<g class="{cls}" id="n{b.index}" data-op="{escape(str(node[0]))}"'
                   + (f' data-src="{srcs}"' if srcs else "") + (f' data-folded="{search}"' if search else "")
                   + f"{href}{GHOST if mark == 'removed' else ''}>"
                   f"<title>{tip}</title>"
                   f'<rect x="{x:.0f}" y="{b.y:.0f}" width="{b.width:.0f}" height="{h:.0f}" rx="4" '
                   f'fill="{fill}" stroke="{MARK_COLOURS.get(mark or "", stroke)}"'
                   + (' stroke-width="3"' if mark else "") + f"{ghost}/>"
                   f'<text x="{b.x:.0f}" y="{b.y + 14:.0f}" font-weight="bold">{escape(b.lines[0])}</text>'
                   f'<text x="{b.x:.0f}" y="{b.y + 27:.0f}" fill="#333">{escape(b.lines[1])}</text>'
                   + (f'<text class="folded" x="{b.x:.0f}" y="{b.y + 40:.0f}" fill="#666">'
                      f"{escape(b.lines[2])}</text>" if len(b.lines) > 2 and b.lines[2] else "")
                   + "</g>")
    out.append("</g>")
    out.append("</svg>")
    return "".join(out)
