"""tinygrad's memo caches that let a later case skip work a fresh process would do, found by feature and cleared
before each case, so that a case's passes, graphs and match counts are those of that case lowered alone.

tinygrad memoizes some graph computations with `functools.cache`: e.g. `schedule/indexing.py`'s `_apply_reshape`
runs a nested `graph_rewrite(..., name="reshape")` once per (shape, shape, ranges) for the whole process, so a case
run after another that reshaped the same way records one pass fewer than it does alone (and fewer rule matches).

Era table (what is searched, newest tinygrad first; nothing is named by version):
* every `functools.cache` / `lru_cache` wrapper bound at module level or as a class attribute (static methods
  included) in the loaded `tinygrad.*` modules;
* kept: caches that memoize graph work, i.e. whose function takes or returns UOps (annotations naming `UOp`) or
  whose code calls a rewrite (`graph_rewrite`, `simplify`, `substitute`, ...) or builds or resolves UOps (`UOp`,
  `resolve`: 0.10-0.11's `View` methods, whose arguments are Views);
* kept too: caches whose code calls one of those by its global name (transitively): graph work through it;
* kept too, from the first time one is found holding a UOp (`holds_uops`): any other cache but a builder's (0.12's
  `UOp.const` keeps every constant UOp it made, and says so neither in its annotations nor in its code);
* left alone: caches of pattern matchers, UPats, devices, dtypes, env lookups and names: they hold no graph, and
  rebuilding a matcher would only cost time (match counts are per matcher and stay correct).
The schedule cache (a dict, not a functools cache) is cleared by `schedule.Scheduler.clear_caches`.

Tensor's class-level state (the random-number generator's seed and tensors) is put back to its value after set-up
(ClassState). Process-wide counters that number what a case creates are put back to their value after set-up
(UNIQUE_COUNTERS):
buffer slots (`UOp.unique_num`, 0.11+) appear in the scheduler's pass graphs, so a case would otherwise store
different graphs depending on how many buffers earlier cases made.
"""

from __future__ import annotations

import copy
import dis
import gc
import inspect
import itertools
import os
import types
from collections.abc import Iterator
from typing import Any

from .api import Tinygrad

# Names in a cached function's code (or a nested function's) that mean it rewrites graphs, or builds or resolves
# UOps (0.10-0.11's View methods: `View.__add__` resolves index expressions it builds, which runs the symbolic rules,
# so a later case merging the same views matched fewer rules than it does alone).
REWRITE_NAMES = frozenset({"graph_rewrite", "graph_rewrite_map", "simplify", "ssimplify", "substitute", "rewrite",
                           "UOp", "resolve"})
# Process-wide `itertools.count`s numbering new UOps: (module, class, attribute).
UNIQUE_COUNTERS = [("tinygrad.uop.ops", "UOp", "unique_num")]  # 0.11+; 0.10 has none
# Return annotations that mark a builder of rewrite machinery, never cleared.
BUILDERS = ("PatternMatcher", "UPat", "Callable", "Compiled", "Renderer")


def cache_wrappers(mod: types.ModuleType) -> Iterator[tuple[str, Any]]:
    """(qualified name, functools cache wrapper) defined in the module, at module level or one class deep."""
    for attr, value in list(vars(mod).items()):
        if isinstance(value, type) and value.__module__ == mod.__name__:
            for cattr, cvalue in list(vars(value).items()):
                fn = cvalue.__func__ if isinstance(cvalue, (staticmethod, classmethod)) else cvalue
                if _is_cache(fn):
                    yield f"{mod.__name__}.{attr}.{cattr}", fn
        elif _is_cache(value) and getattr(value, "__module__", None) == mod.__name__:
            yield f"{mod.__name__}.{attr}", value


def _is_cache(obj: Any) -> bool:
    return callable(getattr(obj, "cache_clear", None)) and callable(getattr(obj, "cache_info", None)) \
        and hasattr(obj, "__wrapped__")


def builds_machinery(fn: Any) -> bool:
    """Whether a cached function builds rewrite machinery (a matcher, a renderer, a device): never cleared."""
    annotations = getattr(inspect.unwrap(fn), "__annotations__", {})
    return any(b in str(annotations.get("return", "")) for b in BUILDERS)


def memoizes_graphs(fn: Any) -> bool:
    """Whether a cached function memoizes graph work (so that a hit skips passes or rule matches)."""
    wrapped = inspect.unwrap(fn)
    annotations = {k: str(v) for k, v in getattr(wrapped, "__annotations__", {}).items()}
    if builds_machinery(fn):
        return False
    if any("UOp" in v for v in annotations.values()):
        return True
    code = getattr(wrapped, "__code__", None)
    return code is not None and bool(REWRITE_NAMES & _names(code))


def _globals_called(fn: Any) -> list[Any]:
    """What the global names a cached function's code (or a nested function's) loads are bound to."""
    wrapped = inspect.unwrap(fn)
    code, namespace = getattr(wrapped, "__code__", None), getattr(wrapped, "__globals__", {})
    names = {i.argval for c in _codes(code) for i in dis.get_instructions(c) if i.opname == "LOAD_GLOBAL"} \
        if code is not None else set()
    return [namespace[name] for name in names if name in namespace]


def _names(code: types.CodeType) -> set[str]:
    return {name for c in _codes(code) for name in c.co_names}


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A function's code and the code of the functions (lambdas, comprehensions) nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def holds_uops(fn: Any, uop: type) -> bool:
    """Whether a functools cache holds a UOp among its arguments or results (one level into tuples and lists;
    an lru_cache's entries are lists)."""
    if not fn.cache_info().currsize:
        return False
    for table in gc.get_referents(fn):
        if type(table) is dict and any(_has(k, uop) or _has(v, uop) for k, v in table.items()):
            return True
    return False


def _has(value: Any, uop: type, depth: int = 2) -> bool:
    if isinstance(value, uop):
        return True
    return depth > 0 and isinstance(value, (tuple, list)) and any(_has(v, uop, depth - 1) for v in value)


class GraphCaches:
    """The graph memo caches of the loaded tinygrad, found again when modules were imported since (lazy imports)."""

    def __init__(self, tg: Tinygrad) -> None:
        self.tg = tg
        self.found: dict[str, Any] = {}
        self.others: dict[str, Any] = {}  # not cleared so far: cleared from the first time they hold a UOp
        self.misses: dict[str, int] = {}  # each of the others' misses when last found holding none
        self.scanned: set[str] = set()

    def scan(self) -> None:
        known = len(self.found) + len(self.others)
        for name, mod in self.tg.loaded_modules():
            if name in self.scanned:
                continue
            self.scanned.add(name)
            for qualname, fn in cache_wrappers(mod):
                if memoizes_graphs(fn):
                    self.found[qualname] = fn
                elif not builds_machinery(fn):
                    self.others[qualname] = fn
        if len(self.found) + len(self.others) != known:
            self._follow_calls()
        # what the code does not say, the contents do: 0.12's `UOp.const` (unannotated, no rewrite) keeps every
        # constant UOp it made, so a later case met earlier cases' UOps (and what they had cached on themselves)
        for qualname, fn in list(self.others.items()):
            if qualname not in self.others:  # found meanwhile: it calls one found holding a UOp
                continue
            misses = fn.cache_info().misses
            if misses == self.misses.get(qualname):
                continue  # no entry added since it was last looked at (each miss adds one)
            if holds_uops(fn, self.tg.UOp):
                self.found[qualname] = self.others.pop(qualname)
                self._follow_calls()
            else:
                self.misses[qualname] = misses

    def _follow_calls(self) -> None:
        """A cache whose code calls a graph memo cache by its global name does graph work through it: 0.11's
        `views_to_real_strides` (Views in, ints out) calls `views_to_indexed_uops`, so a hit skipped the "indexing
        sym" passes that a case run alone records. Followed until nothing more is found."""
        while True:
            found = {id(fn) for fn in self.found.values()}
            calling = [qualname for qualname, fn in self.others.items()
                       if any(id(callee) in found for callee in _globals_called(fn))]
            if not calling:
                return
            for qualname in calling:
                self.found[qualname] = self.others.pop(qualname)

    def clear(self, collect: bool = True) -> int:
        """Empty every graph memo cache; the number of entries dropped. With `collect`, also collect garbage
        (about 0.1 s with tinygrad loaded: once per case, not per renderer)."""
        if os.environ.get("TGSTORE_KEEP_GRAPH_CACHES"):  # bench/bench_fresh.py measures what clearing costs
            return 0
        self.scan()
        dropped = 0
        for fn in self.found.values():
            dropped += fn.cache_info().currsize
            fn.cache_clear()
        if collect:  # what the last case left in reference cycles (UOps, and what they cached on themselves) goes
            gc.collect()
        return dropped

    @property
    def names(self) -> list[str]:
        return sorted(self.found)


class UniqueCounters:
    """The numbering counters of this era, restored to their set-up value before each case."""

    def __init__(self, tg: Tinygrad) -> None:
        self.owners = [(owner, attr) for module, cls, attr in UNIQUE_COUNTERS
                       if isinstance(getattr(owner := tg.attr(module, cls), attr, None), itertools.count)]
        self.start = {attr: self._peek(owner, attr) for owner, attr in self.owners}

    @staticmethod
    def _peek(owner: Any, attr: str) -> int:
        value = next(getattr(owner, attr))
        setattr(owner, attr, itertools.count(value))
        return value

    def reset(self) -> None:
        for owner, attr in self.owners:
            setattr(owner, attr, itertools.count(self.start[attr]))


class ClassState:
    """A class's plain data attributes (numbers, strings, dicts, lists), put back to their value after set-up before
    each case. tinygrad's Tensor keeps its random-number state there (`_seed`, and per device the seed and counter
    tensors `rand` makes): kept alive, those tensors joined every later case's schedule graphs (0.11's "Apply
    Kernelize Map" substitutes over every live tensor), which a case run alone does not have."""

    PLAIN = (bool, int, float, str, type(None), dict, list)

    def __init__(self, owner: type | None) -> None:
        self.owner = owner
        self.saved = {name: copy.copy(value) for name, value in vars(owner).items()
                      if not name.startswith("__") and type(value) in self.PLAIN} if owner is not None else {}

    def reset(self) -> None:
        for name, value in self.saved.items():
            setattr(self.owner, name, copy.copy(value))  # a dict or list: a new one, as set-up left it
