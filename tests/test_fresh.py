"""A case's stored passes, graphs, programs and match counts are those of the case lowered alone in a fresh process,
whatever ran before it in the suite (tinygrad's graph memo caches and buffer numbering are reset per case)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tgstore.extract.runner import BUILTIN_CASES
from tgstore.pipeline import ExtractionPlan, extract_bundle

RELEASE = "0.14.0"
ONLY = '''import pathlib
exec(compile(pathlib.Path({path!r}).read_text(), {path!r}, "exec"), globals())
for _k in [k for k in list(globals()) if k.startswith("case_") and k[5:] not in {names!r}]:
    del globals()[_k]
'''
BEFORE = ["add", "broadcast", "reduce_sum_full", "sum_rows", "conv2d", "movement", "softmax"]  # fill the caches
TARGETS = ["matmul", "layernorm"]


def cases_file(tmp: Path, label: str, names: list[str]) -> Path:
    path = tmp / f"{label}.py"
    path.write_text(ONLY.format(path=str(BUILTIN_CASES), names=names))
    return path


def extract(root: Path, tmp: Path, label: str, names: list[str]) -> dict[str, dict[str, Any]]:
    out = tmp / f"{label}.jsonl"
    result = extract_bundle(root, out, ExtractionPlan(case_files=[cases_file(tmp, label, names)], renderers=["C"],
                                                      stages="C"))
    assert result.status == "ok", result.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    # pattern keys are numbered per bundle: name matches by the rule itself
    rules = {r["key"]: (r["matcher"], r["upat"], r["file"], r["line"]) for r in recs if r["kind"] == "pattern"}
    cases = {r["name"]: r for r in recs if r["kind"] == "case"}
    for case in cases.values():
        case["matches"] = [{**m, "pattern": rules[m["pattern"]]} for m in case["matches"]]
    return cases


def fingerprint(case: dict[str, Any]) -> dict[str, Any]:
    def passes(entries: list[dict] | None) -> list[tuple] | None:
        return None if entries is None else [(p["name"], p["depth"], p["node_count"], p["graph"]) for p in entries]
    return {"schedule_passes": passes(case["schedule_passes"]),
            "programs": [[(p["name"], p["source"], passes(p["passes"])) for p in item["programs"]]
                         for item in case["schedule"]],
            "matches": sorted(((m["pattern"], m["matches"]) for m in case["matches"]), key=repr)}


def test_a_case_in_the_suite_stores_what_it_stores_alone(tinygrad_release, tmp_path: Path) -> None:
    root = tinygrad_release(RELEASE)
    in_suite = extract(root, tmp_path, "suite", BEFORE + TARGETS)
    for name in TARGETS:
        alone = extract(root, tmp_path, f"alone_{name}", [name])[name]
        assert in_suite[name]["status"] == alone["status"] == "ok"
        assert fingerprint(in_suite[name]) == fingerprint(alone), name
        assert len(alone["schedule"][0]["programs"][0]["passes"]) > 20


def test_without_the_reset_earlier_cases_change_a_case(tinygrad_release, tmp_path: Path, monkeypatch) -> None:
    """The reset is what makes them equal: keeping tinygrad's caches (a switch for bench/bench_fresh.py)
    changes what some target case stores."""
    root = tinygrad_release(RELEASE)
    monkeypatch.setitem(os.environ, "TGSTORE_KEEP_GRAPH_CACHES", "1")
    in_suite = extract(root, tmp_path, "suite", BEFORE + TARGETS)
    monkeypatch.delitem(os.environ, "TGSTORE_KEEP_GRAPH_CACHES")
    alone = {name: extract(root, tmp_path, f"alone_{name}", [name])[name] for name in TARGETS}
    assert any(fingerprint(in_suite[n]) != fingerprint(alone[n]) for n in TARGETS)
