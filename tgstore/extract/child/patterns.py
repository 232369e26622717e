"""PatternMatcher rules: every rule of every matcher this tinygrad builds, and how often each matched per case.

Rules come from three places: module-level matchers, class-level matchers (a renderer's `extra_matcher`), and
matchers built at run time (inside functions, while lowering). The last are found by watching PatternMatcher's
constructor, so the recorded rule set is complete whether or not a rule fired: a rule missing at a later commit
was removed, not merely idle.

Era table (what differs):
* match counts: `match_stats` dict filled by `TrackedPatternMatcher` when TRACK_MATCH_STATS >= 1 (all eras here);
  absent -> recorded as missing `match_counts`. Where the matcher's table holds `(UPat, match, early_reject)` entries
  (0.11+), its `rewrite` is replaced by `counting_rewrite`, which counts the same tries and matches without timing
  each try (tinygrad's timing made extraction ~12% slower) and reports each match to the rewrite-step log
  (`--rewrites`, rewrites.StepLog); 0.10's `(UPat, fxn, early_reject, has_ctx)` entries keep tinygrad's own (and
  record no steps).
* a rule's location: `UPat.location` (file, line) where it exists.
* a rule's text: `repr(UPat)` up to 0.12; 0.13+ has no repr, so `UPat.printable()` or the rule's source line.

Matches of the rules of tinygrad's own UPat compiler (the module holding `upat_compile`, 0.11+: its matchers turn a
rule into Python the first time a matcher is used) are left out of a case's counts: which case first uses a matcher
depends on the suite, and they rewrite tinygrad's rules, not the case's graph.

So that the rules of module-level matchers do not depend on which modules the suite happened to import, every module
of the compiler's packages (COMPILER_PACKAGES, those that exist in the era) is imported first. Rules of matchers
built at run time (`matcher` null) are only known once built: a later commit that does not build them has "not
built" them, which `patterns_changed` tells apart from "removed".
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import pathlib
import pkgutil
from collections.abc import Callable
from typing import Any

from .api import Tinygrad
from .step_log import StepLog
from .text import clean

# Where tinygrad compiles a rule into Python (0.11+); its module's own matchers' matches are not a case's.
UPAT_COMPILER = ("tinygrad.uop.upat", "upat_compile")
COMPILER_PACKAGES = ["tinygrad.codegen", "tinygrad.uop", "tinygrad.schedule", "tinygrad.renderer", "tinygrad.shape"]


def import_compiler_modules(tg: Tinygrad) -> list[str]:
    """Import every module of the compiler's packages; returns the ones that failed to import."""
    failed = []
    for package_name in COMPILER_PACKAGES:
        package = tg.module(package_name)
        for info in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=package_name + "."):
            try:
                importlib.import_module(info.name)
            except Exception:
                failed.append(info.name)
    return failed


def caches_src_ops(untracked_rewrite: Callable) -> bool:
    """Whether this era's untracked PatternMatcher.rewrite keeps each UOp's set of source ops on the UOp
    (`uop.__dict__['_src_ops']`, 0.13+): where it does, the counting rewrite keeps it too."""
    return "_src_ops" in getattr(getattr(untracked_rewrite, "__code__", None), "co_consts", ())


def counting_rewrite(tinygrad_rewrite: Callable, match_stats: dict, steps: StepLog | None = None,
                     cache_src_ops: bool = False) -> Callable:
    """TrackedPatternMatcher.rewrite without its per-try timers: the same rules tried in the same order, the same
    result, the same counts in `match_stats[upat][0]` (matched) and `[1]` (tried past the early reject). With a step
    log, each match that returns a UOp is also a step of the pass it happens in (as in tinygrad's own trace). With
    `cache_src_ops`, a UOp's source ops are computed once and kept on it, as the untracked rewrite does.
    tinygrad's DEBUG text names the line that called a rule, `match(uop, ctx)` below: text.clean drops the line
    number, so a stored case's `debug` says `patterns.py` wherever that line moves."""

    def rewrite(self: Any, uop: Any, ctx: Any = None) -> Any:
        pats = self.pdict.get(uop.op)
        if not pats:
            return None
        if len(pats[0]) != 3:  # not (UPat, match, early_reject): this era's own rewrite
            return tinygrad_rewrite(self, uop, ctx)
        if not cache_src_ops:
            src_ops = {u.op for u in uop.src}
        elif (src_ops := uop.__dict__.get("_src_ops")) is None:
            uop.__dict__["_src_ops"] = src_ops = {u.op for u in uop.src}
        for upat, match, early_reject in pats:
            if not early_reject.issubset(src_ops):
                continue
            stats = match_stats.get(upat)
            if stats is None:
                stats = match_stats[upat] = [0, 0, 0.0, 0.0]
            stats[1] += 1
            ret = match(uop, ctx)
            if ret is not None and ret is not uop:
                stats[0] += 1
                if steps is not None and steps.current is not None and hasattr(ret, "op"):
                    steps.current.add(uop, ret, getattr(upat, "location", None))
                return ret
        return None

    rewrite.__wrapped__ = tinygrad_rewrite  # type: ignore[attr-defined]
    return rewrite


@functools.cache
def _realpath(p: str) -> str:
    return str(pathlib.Path(p).resolve())


@functools.cache
def _source_lines(path: str) -> list[str]:
    try:
        return pathlib.Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []


class PatternRegistry:
    """Emits one `pattern` record per distinct rule (before the first case that refers to it) and the per-case
    match counts by record key."""

    def __init__(self, tg: Tinygrad, root: pathlib.Path, write: Callable[[dict], None], *,
                 steps: StepLog | None = None) -> None:
        self.tg, self.root, self.write = tg, root.resolve(), write
        self.base = next((c for c in type.mro(tg.PatternMatcher) if c.__name__ == "PatternMatcher"),
                         tg.PatternMatcher)
        self.keys: dict[Any, str] = {}  # UPat (by identity, which it keeps alive) -> record key
        self.by_content: dict[tuple, str] = {}  # record identity -> key (identical rules share one record)
        self.scanned: set[str] = set()  # module names already scanned
        self.built: list[Any] = []  # matchers constructed since the last scan
        self.match_stats = getattr(tg.ops, "match_stats", None)
        tracked = getattr(tg.ops, "TrackedPatternMatcher", None)
        self.counts = isinstance(self.match_stats, dict) and tracked is not None and tg.PatternMatcher is tracked
        if self.counts:
            tracked.rewrite = counting_rewrite(tracked.rewrite, self.match_stats, steps,
                                               caches_src_ops(self.base.rewrite))
        self.has_location = hasattr(tg.UPat(tg.Ops.SINK), "location")
        compiler = getattr(inspect.unwrap(tg.attr(*UPAT_COMPILER) or len), "__code__", None)  # functools.cache wraps it
        self.compiler_file = str(pathlib.Path(compiler.co_filename).resolve()) if compiler else None
        self._watch_constructor()

    def _watch_constructor(self) -> None:
        init, built = self.base.__init__, self.built

        @functools.wraps(init)
        def watched_init(pm: Any, *args: Any, **kwargs: Any) -> None:
            init(pm, *args, **kwargs)
            built.append(pm)

        self.base.__init__ = watched_init

    # ---- finding matchers
    def _module_matchers(self) -> list[tuple[Any, str | None, str]]:
        """(matcher, name, module file) for module- and class-level matchers of modules not scanned yet."""
        found = []
        for modname, mod in self.tg.loaded_modules():
            if modname in self.scanned or type(mod).__name__ == "_StubModule":
                continue
            self.scanned.add(modname)
            try:
                items = list(vars(mod).items())
            except Exception:
                continue
            mfile = getattr(mod, "__file__", None) or ""
            for attr, val in items:
                if isinstance(val, self.base):
                    found.append((val, attr, mfile))
                elif isinstance(val, type) and getattr(val, "__module__", None) == modname:
                    for cattr, cval in list(vars(val).items()):
                        if isinstance(cval, self.base):
                            found.append((cval, f"{val.__name__}.{cattr}", mfile))
        return found

    def scan(self) -> None:
        """Emit records for the rules of matchers found since the last scan (new modules, matchers built)."""
        candidates: dict[Any, list[tuple[Any, Any, str | None, str]]] = {}
        named = self._module_matchers()
        built, self.built[:] = list(self.built), []
        for pm, name, mfile in [*named, *((pm, None, "") for pm in built)]:
            for pat in getattr(pm, "patterns", []):
                try:
                    upat, fxn = pat[0], pat[1]
                except Exception:
                    continue
                if upat not in self.keys:
                    candidates.setdefault(upat, []).append((upat, fxn, name, mfile))
        new = []
        for cands in candidates.values():
            upat = cands[0][0]
            loc_file = str(getattr(upat, "location", ("",))[0])
            # a rule held by several matchers is named after the one defined in the rule's own file
            own = [c for c in cands if c[2] and c[3] and _realpath(c[3]) == _realpath(loc_file)] if loc_file else []
            named_cands = [c for c in cands if c[2]]
            upat, fxn, name, _ = sorted(own or named_cands or cands, key=lambda c: (c[3], c[2] or ""))[0]
            new.append((self.record(upat, fxn, name), upat))
        new.sort(key=lambda r: (r[0]["file"] or "", r[0]["line"] or 0, r[0]["matcher"] or "", r[0]["upat"],
                                r[0]["function"] or ""))
        for rec, upat in new:
            self._assign(upat, rec)

    def _assign(self, upat: Any, rec: dict) -> str:
        """The key of `upat`'s rule; a rule not seen before (by content) is written first."""
        key = self.adopt(rec)
        self.keys[upat] = key
        return key

    def adopt(self, rec: dict) -> str:
        """The run's key of the rule `rec` describes (its `key` is ignored): the key of an identical rule seen
        before, else the next one, the record written under it. Also how a worker's rule joins the run
        (workers.py): the same rule has the same content in every process."""
        identity = (rec["matcher"], rec["ops"], rec["upat"], rec["function"], rec["file"], rec["line"])
        key = self.by_content.get(identity)
        if key is None:
            key = f"p{len(self.by_content)}"
            self.by_content[identity] = key
            self.write({**rec, "key": key})
        return key

    def record(self, upat: Any, fxn: Any, matcher: str | None) -> dict:
        ops = getattr(upat, "op", None)
        ops_s = ",".join(sorted(getattr(o, "name", str(o)) for o in ops)) if ops else ""
        loc = getattr(upat, "location", None)
        file, line, source = None, None, None
        if loc:
            with contextlib.suppress(Exception):
                p = pathlib.Path(_realpath(str(loc[0])))
                file = p.relative_to(self.root).as_posix() if p.is_relative_to(self.root) else p.as_posix()
                line = int(loc[1])
                lines = _source_lines(str(p))
                source = lines[line - 1].strip() if 0 < line <= len(lines) else None
        try:
            up = clean(repr(upat))
        except Exception as e:
            up = f"<unprintable UPat: {type(e).__name__}>"
        if up.startswith("<"):  # no __repr__ (0.13+): tinygrad's printable form, else the rule's source line
            with contextlib.suppress(Exception):
                up = clean(upat.printable()) if callable(getattr(upat, "printable", None)) else up
            if up.startswith("<") and source:
                up = source
        return {"kind": "pattern", "key": "", "matcher": matcher, "ops": ops_s, "upat": up,
                "function": getattr(fxn, "__name__", type(fxn).__name__) if fxn is not None else None,
                "file": file, "line": line, "source": source}

    # ---- counting
    def compiles_rules(self, upat: Any) -> bool:
        """Whether the rule is one of tinygrad's UPat compiler's own (see the module docstring)."""
        location = getattr(upat, "location", None)
        if self.compiler_file is None or not location:
            return False
        with contextlib.suppress(Exception):
            return _realpath(location[0]) == self.compiler_file  # cached: resolving a path is a few lstat calls
        return False

    def snapshot(self) -> dict[Any, tuple[int, int]]:
        if not self.counts:
            return {}
        return {p: (int(v[0]), int(v[1])) for p, v in list(self.match_stats.items())}

    def matches(self, before: dict[Any, tuple[int, int]]) -> list[dict[str, Any]]:
        """Per record key, how often its rules matched and were tried since `before` (rules that never matched are
        left out). Emits records for rules seen for the first time."""
        after = self.snapshot()
        deltas = []
        for p, (m, t) in after.items():
            m0, t0 = before.get(p, (0, 0))
            if m - m0 > 0 and not self.compiles_rules(p):
                deltas.append((p, m - m0, t - t0))
        self.scan()
        for p, _m, _t in deltas:
            if p not in self.keys:  # matched, yet held by no matcher seen: still recorded
                self._assign(p, self.record(p, None, None))
        summed: dict[str, list[int]] = {}
        for p, m, t in deltas:
            entry = summed.setdefault(self.keys[p], [0, 0])
            entry[0] += m
            entry[1] += t
        return [{"pattern": key, "matches": m, "tries": t}
                for key, (m, t) in sorted(summed.items(), key=lambda kv: int(kv[0][1:]))]
