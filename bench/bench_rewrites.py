"""The cost of recording rewrite steps (`--rewrites N`, on by default at 20 a pass): extraction CPU seconds (the
child's user+system time, the least of `--repeats` runs, so other load on the machine counts as little as it can),
bundle bytes and database bytes, with and without steps.

    python bench/bench_rewrites.py [--tinygrad DIR] [--cases matmul,softmax,...] [--rewrites 20] [--repeats 2]
"""

from __future__ import annotations

import argparse
import ast
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILTIN = REPO / "tgstore" / "cases" / "builtin.py"
HEAVY = "matmul,softmax,layernorm,conv2d,transformer_block,sum_rows,mlp_gelu,argmax,transcendental,sdpa_causal"


def case_file(names: list[str], out: Path) -> Path:
    """The named built-in cases (and their `case_x.context = ...` lines) as a case file of their own."""
    text = BUILTIN.read_text()
    lines = text.splitlines()
    kept = ["from tinygrad import Tensor, dtypes"]
    wanted = {f"case_{n}" for n in names}
    for node in ast.parse(text).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        owner = getattr(getattr(target, "value", None), "id", None)
        if (isinstance(node, ast.FunctionDef) and node.name in wanted) or owner in wanted:
            kept.append("\n".join(lines[node.lineno - 1:node.end_lineno]))
    out.write_text("\n\n\n".join(kept) + "\n")
    return out


def cpu_seconds(cmd: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tinygrad", type=Path, default=None, help="default: the installed tinygrad")
    ap.add_argument("--cases", default=HEAVY)
    ap.add_argument("--rewrites", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    tgstore = [sys.executable, "-m", "tgstore"]
    where = ["--tinygrad", str(args.tinygrad)] if args.tinygrad else []
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        cases = case_file(args.cases.split(","), tmpdir / "cases.py")
        figures: dict[int, dict[str, float]] = {}
        for rewrites in (0, args.rewrites):
            bundle, db = tmpdir / f"b{rewrites}.jsonl", tmpdir / f"d{rewrites}.db"
            seconds = []
            for _ in range(args.repeats):
                seconds.append(cpu_seconds([*tgstore, "extract", "-o", str(bundle), *where, "--cases", str(cases),
                                            "--rewrites", str(rewrites)]))
            ingest = cpu_seconds([*tgstore, "ingest", "--db", str(db), "--bundle", str(bundle)])
            figures[rewrites] = {"cpu": min(seconds), "bundle": bundle.stat().st_size, "db": db.stat().st_size,
                                 "ingest": ingest}
            print(f"rewrites={rewrites}: extraction CPU {min(seconds):.2f} s (runs: "
                  f"{', '.join(f'{s:.2f}' for s in seconds)}), bundle {bundle.stat().st_size:,} B, ingest CPU "
                  f"{ingest:.2f} s, database {db.stat().st_size:,} B")
        off, on = figures[0], figures[args.rewrites]
        print(f"figure rewrites_cpu_ratio {on['cpu'] / off['cpu']:.3f}  # extraction CPU with steps over without; "
              "target: within the noise of extraction (<= 1.05)")
        print(f"figure rewrites_bundle_ratio {on['bundle'] / off['bundle']:.2f}  # reported")
        print(f"figure rewrites_db_ratio {on['db'] / off['db']:.2f}  # reported")
        print(f"figure rewrites_ingest_ratio {on['ingest'] / off['ingest']:.2f}  # reported")


if __name__ == "__main__":
    main()
