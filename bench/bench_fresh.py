"""Suite vs alone: each case's stored passes, graphs and match counts inside the whole suite must equal those of the
case extracted alone in a fresh process (tinygrad's memo caches would otherwise let a case skip passes that earlier
cases ran). Prints every difference, and the time per case with and without clearing tinygrad's graph caches.

    python bench/bench_fresh.py --tinygrad /path/holding/tinygrad [--cases matmul,softmax] [--renderers C] [--no-clear]
    python bench/bench_fresh.py --smallest    # the installed tinygrad, a suite of two cases

Figures: fresh_identical_share (cases identical in the suite and alone, over those compared: must be 1) and
fresh_suite_seconds_per_case (and fresh_keep_caches_seconds_per_case with --no-clear).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import BUILTIN, ROOT, SMALLEST_CASES, SMALLEST_HELP, case_file, figure

REPO = ROOT
sys.path[:0] = [str(ROOT)]

ONE_CASE = '''"""Only case_{name} of {path}, for a fresh-process comparison."""
import pathlib
exec(compile(pathlib.Path({path!r}).read_text(), {path!r}, "exec"), globals())
for _k in [k for k in list(globals()) if k.startswith("case_") and k != "case_{name}"]:
    del globals()[_k]
'''


def extract(root: Path, out: Path, case_file: Path, renderers: str, env: dict[str, str] | None = None) -> float:
    cmd = [sys.executable, "-m", "child", "--out", str(out), "--cases", str(case_file), "--renderers", renderers,
           "--stages", renderers, "--tinygrad-root", str(root)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, **(env or {}),
                                         "PYTHONPATH": f"{REPO / 'tgstore' / 'extract'}{os.pathsep}{root}"},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def fingerprint(case: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on the suite: pass names, depths, node counts and graphs; programs; match counts."""
    def passes(ps: list[dict] | None) -> list[tuple] | None:
        return None if ps is None else [(p["name"], p["depth"], p.get("node_count"), p.get("graph")) for p in ps]
    return {"status": case["status"], "schedule_passes": passes(case.get("schedule_passes")),
            "programs": [[(p["renderer"], p["name"], p["source"], passes(p.get("passes"))) for p in it["programs"]]
                         for it in case["schedule"]],
            "matches": sorted(((m["pattern"], m["matches"]) for m in case.get("matches", [])), key=repr)}


def cases_of(bundle: Path) -> dict[str, dict[str, Any]]:
    recs = [json.loads(line) for line in bundle.read_text().splitlines() if line.strip()]
    # pattern keys are numbered per bundle: name matches by the rule itself
    rules = {r["key"]: (r["matcher"], r["upat"], r["file"], r["line"]) for r in recs if r["kind"] == "pattern"}
    cases = {r["name"]: r for r in recs if r["kind"] == "case"}
    for case in cases.values():
        case["matches"] = [{**m, "pattern": rules[m["pattern"]]} for m in case.get("matches", [])]
    return cases


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in a:
        if a[key] != b[key]:
            if key.endswith("passes") and a[key] and b[key]:
                return f"{key}: {len(a[key])} passes in the suite, {len(b[key])} alone"
            return key
    return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tinygrad", type=Path, help="directory holding the tinygrad package (default: the installed one)")
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all of the suite)")
    ap.add_argument("--renderers", default="C")
    ap.add_argument("--no-clear", action="store_true", help="also time the suite without clearing graph caches")
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    args = ap.parse_args()
    from tgstore.extract.runner import resolve_tinygrad_root

    args.tinygrad = resolve_tinygrad_root(args.tinygrad)
    with tempfile.TemporaryDirectory() as tmp:
        suite_file = BUILTIN
        if args.smallest:
            suite_file, args.cases = case_file(SMALLEST_CASES.split(","), Path(tmp) / "smallest.py"), None
        suite_out = Path(tmp) / "suite.jsonl"
        suite_s = extract(args.tinygrad, suite_out, suite_file, args.renderers)
        suite = cases_of(suite_out)
        names = args.cases.split(",") if args.cases else list(suite)
        print(f"suite: {len(suite)} cases in {suite_s:.1f}s ({suite_s / max(len(suite), 1):.2f}s per case)")
        figure("fresh_suite_seconds_per_case", suite_s / max(len(suite), 1))
        if args.no_clear:
            out = Path(tmp) / "noclear.jsonl"
            s = extract(args.tinygrad, out, suite_file, args.renderers, {"TGSTORE_KEEP_GRAPH_CACHES": "1"})
            print(f"suite without clearing: {s:.1f}s ({s / max(len(suite), 1):.2f}s per case)")
            figure("fresh_keep_caches_seconds_per_case", s / max(len(suite), 1))
            kept = cases_of(out)
            skipped = [n for n in names if fingerprint(kept[n]) != fingerprint(suite[n])]
            print(f"cases whose record changes when caches are kept: {len(skipped)} {skipped}")
        differ = 0
        for name in names:
            one = Path(tmp) / f"one_{name}.py"
            one.write_text(ONE_CASE.format(name=name, path=str(suite_file)))
            out = Path(tmp) / f"one_{name}.jsonl"
            extract(args.tinygrad, out, one, args.renderers)
            alone = cases_of(out)[name]
            a, b = fingerprint(suite[name]), fingerprint(alone)
            if a != b:
                differ += 1
                print(f"DIFFERS {name}: {first_difference(a, b)}")
        print(f"{len(names) - differ} of {len(names)} cases identical in the suite and alone")
        figure("fresh_identical_share", (len(names) - differ) / max(len(names), 1), "must be 1")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
