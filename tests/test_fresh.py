"""Every fact a case stores is what the case stores lowered alone in a fresh process, whatever ran before it in the
suite: its passes and graphs, programs, match counts (matches and tries), rewrite steps, canonical documents,
kernel ASTs and DEBUG text. tinygrad's graph memo caches, buffer numbering and the renderers' last kernel are reset
per case, devices are opened before the first, and the collector waits between cases (child/case.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tgstore.extract.runner import BUILTIN_CASES
from tgstore.pipeline import ExtractionPlan, extract_bundle

ONLY = '''import pathlib
exec(compile(pathlib.Path({path!r}).read_text(), {path!r}, "exec"), globals())
for _k in [k for k in list(globals()) if k.startswith("case_") and k[5:] not in {names!r}]:
    del globals()[_k]
'''
BEFORE = ["add", "broadcast", "reduce_sum_full", "sum_rows", "conv2d", "movement", "softmax"]  # fill the caches
TARGETS = ["cast", "matmul", "layernorm", "float64_mean"]  # the last: WGSL fails on it, with a traceback
# 0.12: `UOp.const` keeps every constant it made in a functools cache its code does not mark as graph work;
# 0.14: the C-style and PTX renderers keep their last kernel's UOps (both made later cases differ before)
RELEASES = ["0.12.0", "0.14.0"]
VARYING = ("seconds", "started_at", "finished_at")  # wall-clock figures, different on every run


def cases_file(tmp: Path, label: str, names: list[str]) -> Path:
    path = tmp / f"{label}.py"
    path.write_text(ONLY.format(path=str(BUILTIN_CASES), names=names))
    return path


def extract(root: Path, tmp: Path, label: str, names: list[str], workers: int = 1,
            renderers: list[str] | None = None) -> list[dict[str, Any]]:
    """The bundle's records, as users extract: every renderer (unless named), the default stages and 20 rewrite
    steps a pass."""
    out = tmp / f"{label}-{workers}.jsonl"
    plan = ExtractionPlan(case_files=[cases_file(tmp, label, names)], rewrites=20, workers=workers,
                          renderers=renderers)
    result = extract_bundle(root, out, plan)
    assert result.status == "ok", result.stderr
    return [without_timings(json.loads(line)) for line in out.read_text().splitlines() if line.strip()]


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def case_facts(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each case's record, its match counts naming the rule itself (pattern keys are numbered per bundle)."""
    rules = {r["key"]: {k: v for k, v in r.items() if k != "key"} for r in records if r["kind"] == "pattern"}
    cases = {r["name"]: r for r in records if r["kind"] == "case"}
    for case in cases.values():
        case["matches"] = sorted(({**m, "pattern": rules[m["pattern"]]} for m in case["matches"]), key=repr)
    return cases


@pytest.mark.parametrize("release", RELEASES)
def test_a_case_in_the_suite_stores_what_it_stores_alone(tinygrad_release, tmp_path: Path, release: str) -> None:
    root = tinygrad_release(release)
    in_suite = case_facts(extract(root, tmp_path, "suite", BEFORE + TARGETS))
    for name in TARGETS:
        alone = case_facts(extract(root, tmp_path, f"alone_{name}", [name]))[name]
        assert in_suite[name]["status"] == alone["status"] == "ok"
        assert len(alone["schedule"][0]["programs"][0]["passes"]) > 20 and alone["debug"] and alone["matches"]
        for fact in alone:  # one by one, so that a failure names the fact
            assert in_suite[name][fact] == alone[fact], (name, fact)


def test_without_the_reset_earlier_cases_change_a_case(tinygrad_release, tmp_path: Path, monkeypatch) -> None:
    """The reset is what makes them equal: keeping tinygrad's caches (a switch for bench/bench_fresh.py)
    changes what some target case stores."""
    root = tinygrad_release("0.14.0")
    monkeypatch.setitem(os.environ, "TGSTORE_KEEP_GRAPH_CACHES", "1")
    in_suite = case_facts(extract(root, tmp_path, "suite", BEFORE + TARGETS))
    monkeypatch.delitem(os.environ, "TGSTORE_KEEP_GRAPH_CACHES")
    alone = {name: case_facts(extract(root, tmp_path, f"alone_{name}", [name]))[name] for name in TARGETS}
    assert any(in_suite[n]["schedule"] != alone[n]["schedule"] for n in TARGETS)


# An earlier case that left state behind and a later case that met it, each found by extracting the whole suite and
# every case alone on the release: 0.10's `View.__add__` cache (it resolves the index expressions it builds, running
# the symbolic rules), 0.11's `views_to_real_strides` cache (it calls `views_to_indexed_uops`, so a hit skipped the
# "indexing sym" passes), and Tensor's random-number tensors from `rand` (0.11's kernelize map substitutes over every
# live tensor, so they joined each later schedule's graphs).
LEFT_BEHIND = [("0.10.0", "argmax", "interpolate"), ("0.11.0", "attention_manual", "topk"), ("0.11.0", "rand", "fp8")]


@pytest.mark.parametrize(("release", "earlier", "later"), LEFT_BEHIND)
def test_what_an_earlier_case_left_is_gone_before_a_later_one(tinygrad_release, tmp_path: Path, release: str,
                                                              earlier: str, later: str) -> None:
    root = tinygrad_release(release)
    after = case_facts(extract(root, tmp_path, "pair", [earlier, later], renderers=["C"]))[later]
    alone = case_facts(extract(root, tmp_path, "alone", [later], renderers=["C"]))[later]
    assert after["status"] == alone["status"] == "ok"
    for fact in alone:
        assert after[fact] == alone[fact], (later, fact)
