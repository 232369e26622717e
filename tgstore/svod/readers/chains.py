"""Which optimize-phase stages of one program provably belong to the same kernel: the links every reading of the log
agrees on, never a guess.

What Svod's source guarantees (npatsakula/svod, read Dec 2026; facts, not code):
* every kernel prints the same sequence of stage kinds, in order, under the log's switches
  (`schedule/src/optimizer/mod.rs`: `apply_pre_optimization`, `optimize_kernel_with_config_impl`,
  `apply_post_optimization_configured_with_capture`; tgstore.svod.emission holds the order), `kernel initial` twice
  (before pre-optimization and as the post-optimization input);
* kernels are optimized on `SVOD_THREADS` threads at once (`tensor/src/realize.rs` `map_on_threads`: inline when 1,
  rayon otherwise), so their sequences interleave whole event by whole event;
* node ids come from one process-wide counter and identical nodes are one node (`ir/src/uop/hash_consing.rs`: a
  global table of live UOps, `UOP_ID_COUNTER`): kernels share the ids of identical sub-graphs, so shared ids prove
  nothing. A whole graph is one root id, though: two trees with the same root are the same graph.

So a reading of the log is a choice, for every pair of consecutive kinds (i, i+1), of which kind-i stage each
kind-(i+1) stage follows (an earlier one, at most one each); the pairs are independent of one another. A link is
proven when every such choice makes it, and kernels are what the proven links chain together:
* with order alone, a kind-(i+1) stage is tied to a kind-i stage exactly when the two form a block of their own
  (no other stage of either kind is waiting between them): one optimizing thread gives nothing but such blocks;
* same-graph evidence narrows the choice: a `[per-stage]` line's count and a `[dump-stage]` tree's root are those
  of its stage's event (`print_stage` prints the graph the event just logged), and equal roots at consecutive
  kinds are one graph (a pass that changed nothing). The one assumption: two different kernels of a schedule never
  hold the same whole graph (Svod's kernels are distinct jobs keyed by their AST's content);
* `kernel initial` is first or second by counting: each `pre-opt: movement` needs an earlier first one, each
  second one an earlier `pre-opt: simplify ranges` and each post-opt stage an earlier second one.
Where the order of two streams is lost (nextest keeps stdout and stderr apart) only kinds of one stream are paired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tgstore.svod.emission import KERNEL_INITIAL_FIRST, KERNEL_INITIAL_SECOND

MAX_BLOCK = 48  # a block with more stages than this is left unproven (the matching is quadratic in it)


@dataclass
class Item:
    """One optimize-phase stage as the chain model sees it."""

    kinds: tuple[int, ...]  # emission positions it can have (two for `kernel initial`)
    stream: int  # 0: one combined stream; 1 stdout, 2 stderr when a runner kept them apart
    root: int | None = None  # the id of its tree's root
    count: int | None = None  # its node count
    name: str | None = None  # the kernel name its canonical document carries (the bare name, optimize phase)
    graph: str | None = None  # which graph it prints: stages of one label print one graph (None: a document)
    order: int = 0  # its place in the program's reading order


@dataclass
class Links:
    """The proven links of a program's stages (indices into the item list)."""

    parent: list[int]
    kind_of: list[int | None]  # the position each item provably has (None: a `kernel initial` left undecided)
    linked: list[bool]  # whether an item has a proven link to the previous kind of its kernel
    kinds: list[int] = field(default_factory=list)  # the program's kinds in emission order

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def chains(self) -> list[list[int]]:
        """The items grouped by proven kernel, each group in log order, groups by their first item."""
        groups: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            groups.setdefault(self.find(i), []).append(i)
        return sorted(groups.values(), key=lambda g: g[0])


def classify_initial(items: Sequence[Item], kinds: list[int], complete: bool) -> list[int | None] | None:
    """For each item its proven kind: every other item has one; a `kernel initial` is first or second where every
    count that fits the log agrees (None where both fit). F(k), the firsts among the first k `kernel initial`s, is
    bounded by the neighbour kinds seen around it: each first successor (`pre-opt: movement`) needs an earlier
    first, each second an earlier predecessor (`pre-opt: simplify ranges`), each post-opt successor an earlier
    second; F grows by 0 or 1 per `kernel initial`. Where the bounds leave one step only, that one is proven."""
    out: list[int | None] = [it.kinds[0] if len(it.kinds) == 1 else None for it in items]
    ki = [i for i, it in enumerate(items) if len(it.kinds) > 1]
    at = {k: n for n, k in enumerate(kinds)}
    if not ki or KERNEL_INITIAL_SECOND not in at or KERNEL_INITIAL_FIRST not in at:
        return out
    stream = items[ki[0]].stream

    streams: dict[int, set[int]] = {}
    for i, kind in enumerate(out):
        if kind is not None:
            streams.setdefault(kind, set()).add(items[i].stream)

    def neighbour(offset_from: int, step: int) -> int | None:
        """The nearest kind on that side whose stages share the `kernel initial` events' order (one stream)."""
        n = at[offset_from] + step
        while 0 <= n < len(kinds):
            kind = kinds[n]
            if kind not in (KERNEL_INITIAL_FIRST, KERNEL_INITIAL_SECOND) and kind in streams and \
                    streams[kind] <= {0, stream}:
                return kind
            n += step
        return None

    first_next = neighbour(KERNEL_INITIAL_FIRST, 1)
    before_second = neighbour(KERNEL_INITIAL_SECOND, -1)
    after_second = neighbour(KERNEL_INITIAL_SECOND, 1)
    big = len(items) + 1
    n1 = n5 = na = 0
    at_ki: list[int] = []  # simplify-ranges events before each `kernel initial`
    upto: list[tuple[int, int]] = []  # (movement, post-opt successor) events before each KI and at the end
    ki_items = set(ki)
    for i, kind in enumerate(out):
        if i in ki_items:
            upto.append((n1, na))
            at_ki.append(n5 if before_second is not None else big)
        elif kind == first_next and kind is not None:
            n1 += 1
        elif kind == before_second and kind is not None:
            n5 += 1
        elif kind == after_second and kind is not None:
            na += 1
    upto.append((n1, na))
    if upto[0] != (0, 0):
        return None  # a stage that needs a `kernel initial` before any: the log does not fit
    total = len(ki)
    lo = [0] * (total + 1)
    hi = [0] * (total + 1)
    for k in range(1, total + 1):
        lo[k] = max(upto[k][0], k - at_ki[k - 1], 0)
        hi[k] = min(k - upto[k][1], k)
    for k in range(1, total + 1):
        lo[k] = max(lo[k], lo[k - 1])
        hi[k] = min(hi[k], hi[k - 1] + 1)
        if lo[k] > hi[k]:
            return None
    if complete:
        if first_next is not None:
            lo[total], hi[total] = max(lo[total], n1), min(hi[total], n1)
        if after_second is not None:
            lo[total], hi[total] = max(lo[total], total - na), min(hi[total], total - na)
        if before_second is not None:
            lo[total], hi[total] = max(lo[total], total - n5), min(hi[total], total - n5)
    for k in range(total, 0, -1):
        if lo[k] > hi[k]:
            return None
        lo[k - 1] = max(lo[k - 1], lo[k] - 1)
        hi[k - 1] = min(hi[k - 1], hi[k])
    for n, i in enumerate(ki, start=1):
        if lo[n] > hi[n - 1]:
            out[i] = KERNEL_INITIAL_FIRST
        elif hi[n] <= lo[n - 1]:
            out[i] = KERNEL_INITIAL_SECOND
    return out


def _same_graph_ok(a: Item, b: Item) -> bool:
    """Whether b can follow a in one kernel by what each shows of its graph."""
    if a.name is not None and b.name is not None and a.name != b.name:
        return False
    if a.graph is not None and a.graph == b.graph:
        if a.root is not None and b.root is not None and a.root != b.root:
            return False
        if a.count is not None and b.count is not None and a.count != b.count:
            return False
    return True


def _identity(a: Item, b: Item) -> bool:
    return a.root is not None and a.root == b.root


def _forced_in_block(items: Sequence[Item], a_side: list[int], b_side: list[int], perfect: bool
                     ) -> list[tuple[int, int]] | None:
    """The (a, b) pairs every allowed matching of the block makes (b after a; same-graph evidence allowed); None when
    no matching fits."""
    if len(a_side) + len(b_side) > MAX_BLOCK:
        return []
    edges: dict[int, list[int]] = {}
    for b in b_side:
        cands = [a for a in a_side if items[a].order < items[b].order and _same_graph_ok(items[a], items[b])]
        ident = [a for a in cands if _identity(items[a], items[b])]
        edges[b] = ident if len(ident) == 1 else cands
    for b, cands in edges.items():  # an identity taken by one b is no one else's
        if len(cands) == 1 and _identity(items[cands[0]], items[b]):
            for other in b_side:
                if other != b and len(edges[other]) > 1 and cands[0] in edges[other]:
                    edges[other] = [a for a in edges[other] if a != cands[0]]
    match_b: dict[int, int] = {}
    match_a: dict[int, int] = {}

    def augment(b: int, seen: set[int]) -> bool:
        for a in edges[b]:
            if a in seen:
                continue
            seen.add(a)
            if a not in match_a or augment(match_a[a], seen):
                match_a[a], match_b[b] = b, a
                return True
        return False

    for b in b_side:
        if not augment(b, set()):
            return None  # some stage has no predecessor
    if perfect and len(match_a) != len(a_side):
        return None
    # directed graph: unmatched a -> b, matched b -> a; a matched edge is avoidable when a and b share a strongly
    # connected component, or b is reachable from an unmatched a (a B-saturating matching may leave a's free)
    nodes = [("a", a) for a in a_side] + [("b", b) for b in b_side]
    succ: dict[tuple[str, int], list[tuple[str, int]]] = {n: [] for n in nodes}
    for b, cands in edges.items():
        for a in cands:
            if match_b.get(b) == a:
                succ[("b", b)].append(("a", a))
            else:
                succ[("a", a)].append(("b", b))
    comp = _scc(nodes, succ)
    free = [("a", a) for a in a_side if a not in match_a]
    reach: set[tuple[str, int]] = set(free)
    stack = list(free)
    while stack:
        n = stack.pop()
        for m in succ[n]:
            if m not in reach:
                reach.add(m)
                stack.append(m)
    return [(a, b) for b, a in match_b.items() if comp[("a", a)] != comp[("b", b)] and ("b", b) not in reach]


def _scc(nodes: list, succ: dict) -> dict:
    """Tarjan's strongly connected components, iterative: node -> component number."""
    index: dict = {}
    low: dict = {}
    comp: dict = {}
    on: set = set()
    stack: list = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on.add(node)
            recurse = False
            children = succ[node]
            while i < len(children):
                child = children[i]
                i += 1
                if child not in index:
                    work.append((node, i))
                    work.append((child, 0))
                    recurse = True
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            if recurse:
                continue
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on.discard(member)
                    comp[member] = index[node]
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return comp


MAX_LOSSES = 3  # lost lines a kind pair is read around (each may have been either kind or neither)


def _scenarios(losses: list[tuple[int, frozenset[int] | None]], options: tuple[int, ...]
               ) -> list[list[tuple[int, int]]]:
    """Every way the lost lines may have been of the given kinds: a list of (reading order, kind) to add each."""
    relevant = [(order, kinds) for order, kinds in losses if kinds is None or kinds & set(options)]
    if len(relevant) > MAX_LOSSES:
        return []
    out: list[list[tuple[int, int]]] = [[]]
    for order, kinds in relevant:
        out = [done + extra for done in out for extra in [[]] + [[(order, k)] for k in options
                                                                 if kinds is None or k in kinds]]
    return out


def link(items: Sequence[Item], complete: bool,
         losses: list[tuple[int, frozenset[int] | None]] | None = None) -> Links:
    """The proven links of one program's optimize-phase stages (in log order). `complete`: every kernel printed its
    whole sequence (no panic, no cut log), so every pair of consecutive kinds is matched one to one. `losses`: lines
    lost to a problem, each (reading order, the kinds it may have been; None: any). A lost line was one stage of
    one kind, or none: a link is proven when every way the lost lines fit the log makes it."""
    losses = losses or []
    kinds = sorted({k for it in items for k in it.kinds})
    kind_of = _classify(items, kinds, complete, losses)
    for i, it in enumerate(items):  # a `kernel initial` shows the graph of the stage it is the input of
        if len(it.kinds) > 1:
            it.graph = {KERNEL_INITIAL_FIRST: "kernel-initial", KERNEL_INITIAL_SECOND: "00-initial"}.get(kind_of[i])
    links = Links(list(range(len(items))), kind_of, [False] * len(items), kinds)
    undecided = [i for i, k in enumerate(kind_of) if k is None]
    by_kind: dict[int, list[int]] = {}
    for i, k in enumerate(kind_of):
        if k is not None:
            by_kind.setdefault(k, []).append(i)
    evidence: dict[int, set[int]] = {}  # an undecided `kernel initial` -> the kinds its shared roots give it
    pending: list[tuple[int, int]] = []
    streams = sorted({it.stream for it in items})
    sequences = [(None, kinds)] if streams in ([0], []) else [
        (stream, sorted({k for it in items if it.stream == stream for k in it.kinds})) for stream in streams]
    pairs = [(stream, seq[n], seq[n + 1]) for stream, seq in sequences for n in range(len(seq) - 1)]
    for stream, ka, kb in pairs:  # one stream's kinds in order: a runner that kept streams apart keeps no order across
        a_all = [i for i in by_kind.get(ka, []) if stream is None or items[i].stream == stream]
        b_all = [i for i in by_kind.get(kb, []) if stream is None or items[i].stream == stream]
        initial = KERNEL_INITIAL_FIRST in (ka, kb) or KERNEL_INITIAL_SECOND in (ka, kb)
        if initial and undecided:
            a_all = a_all + [i for i in undecided if ka in items[i].kinds and stream in (None, items[i].stream)]
            b_all = b_all + [i for i in undecided if kb in items[i].kinds and stream in (None, items[i].stream)]
            for a, b in _identities(items, a_all, b_all):
                for i, kind in ((a, ka), (b, kb)):
                    if kind_of[i] is None:
                        evidence.setdefault(i, set()).add(kind)
                pending.append((a, b))
            continue
        pending += _identities(items, a_all, b_all)
        forced: set[tuple[int, int]] | None = None
        for scenario in _scenarios(losses, (ka, kb)):
            found = _pair_links(items, a_all, b_all, ka, scenario, complete)
            if found is not None:
                forced = found if forced is None else forced & found
        pending += sorted(forced or ())
    contradicted = {i for i, kinds_seen in evidence.items() if len(kinds_seen) > 1}
    for i, kinds_seen in evidence.items():
        if i not in contradicted:
            kind_of[i] = next(iter(kinds_seen))
    for a, b in pending:
        if a not in contradicted and b not in contradicted:
            links.union(a, b)
            links.linked[b] = True
    return links


def _classify(items: Sequence[Item], kinds: list[int], complete: bool,
              losses: list[tuple[int, frozenset[int] | None]]) -> list[int | None]:
    """`classify_initial` over every way the lost lines may fit: a `kernel initial` keeps the kind all agree on."""
    plain = [it.kinds[0] if len(it.kinds) == 1 else None for it in items]
    if not any(len(it.kinds) > 1 for it in items):
        return plain
    options = tuple(k for k in kinds)
    agreed: list[int | None] | None = None
    for scenario in _scenarios(losses, options) or []:
        extra = [Item((KERNEL_INITIAL_FIRST, KERNEL_INITIAL_SECOND) if k in (KERNEL_INITIAL_FIRST,
                                                                              KERNEL_INITIAL_SECOND) else (k,),
                      0, order=order) for order, k in scenario]
        merged = sorted([(it.order, 0, i) for i, it in enumerate(items)] + [(it.order, 1, n) for n, it in
                                                                            enumerate(extra)])
        seq = [items[i] if side == 0 else extra[i] for _o, side, i in merged]
        decided = classify_initial(seq, kinds, complete)
        if decided is None:
            continue  # the lost lines cannot have been so
        mine = [decided[n] for n, (_o, side, _i) in enumerate(merged) if side == 0]
        agreed = mine if agreed is None else [a if a == b else None for a, b in zip(agreed, mine, strict=True)]
    if agreed is None:
        return plain
    return [a if len(it.kinds) > 1 else p for a, p, it in zip(agreed, plain, items, strict=True)]


def _pair_links(items: Sequence[Item], a_all: list[int], b_all: list[int], ka: int,
                scenario: list[tuple[int, int]], complete: bool) -> set[tuple[int, int]] | None:
    """The links order and same-graph evidence force between two consecutive kinds when the lost lines were as the
    scenario says; None when they cannot have been so."""
    pool = list(items) + [Item((k,), 0, order=order) for order, k in scenario]
    extra = list(range(len(items), len(pool)))
    a_side = a_all + [i for i, (_o, k) in zip(extra, scenario, strict=True) if k == ka]
    b_side = b_all + [i for i, (_o, k) in zip(extra, scenario, strict=True) if k != ka]
    found = _pairs(pool, a_side, b_side, complete)
    if found is None:
        return None
    return {(a, b) for a, b in found if a < len(items) and b < len(items)}


def _identities(items: Sequence[Item], a_side: list[int], b_side: list[int]) -> list[tuple[int, int]]:
    """Links a shared root proves alone: a kind-(i+1) stage whose graph is exactly one earlier kind-i stage's."""
    by_root: dict[int, list[int]] = {}
    for a in a_side:
        if items[a].root is not None:
            by_root.setdefault(items[a].root, []).append(a)
    out = []
    for b in b_side:
        if items[b].root is None or items[b].root not in by_root:
            continue
        same = [a for a in by_root[items[b].root] if items[a].order < items[b].order]
        if len(same) == 1:
            out.append((same[0], b))
    return out


def _pairs(items: Sequence[Item], a_side: list[int], b_side: list[int], complete: bool
           ) -> list[tuple[int, int]] | None:
    """Forced (a, b) links of one kind pair: blocks of the merged sequence where the kind-i stages waiting for their
    successor fall to none are independent; a block of one of each is a link, a larger one is matched. None when no
    reading fits (a stage with no possible predecessor, or, complete, one with no successor)."""
    merged = sorted([(items[a].order, 0, a) for a in a_side] + [(items[b].order, 1, b) for b in b_side])
    out: list[tuple[int, int]] = []
    block_a: list[int] = []
    block_b: list[int] = []
    balance = 0
    for _o, side, i in merged:
        if side == 0:
            block_a.append(i)
            balance += 1
        else:
            block_b.append(i)
            balance -= 1
        if balance < 0:
            return None  # a stage with no possible predecessor
        if balance == 0:
            found = _block(items, block_a, block_b, True)
            if found is None:
                return None
            out += found
            block_a, block_b = [], []
    if block_a:  # the last block never closed: kernels cut short (a panic, a killed job)
        if complete:
            return None
        found = _block(items, block_a, block_b, False) if block_b else []
        if found is None:
            return None
        out += found
    return out


def _block(items: Sequence[Item], a_side: list[int], b_side: list[int], perfect: bool
           ) -> list[tuple[int, int]] | None:
    if len(a_side) == 1 and len(b_side) == 1:
        a, b = a_side[0], b_side[0]
        return [(a, b)] if _same_graph_ok(items[a], items[b]) else None
    return _forced_in_block(items, a_side, b_side, perfect and len(a_side) == len(b_side))
