"""Capture throughput: kernels stored per second of `tgstore extract --capture`. Prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_capture.py                                   # the models suite's GPT-2, realized
    .venv/bin/python bench/bench_capture.py --tinygrad ~/src/tinygrad -- pytest test/unit/test_masked_tensor.py
    .venv/bin/python bench/bench_capture.py --smallest            # the built-in softmax case, realized

The default program realizes the built-in `models` suite's GPT-2 forward (its kernels compile with clang and run on
the CPU). With a tinygrad checkout and a command after --, that command is captured in the checkout (a test file).
Both the capture and the same command without tgstore are timed, so the figure says what capture costs too.
- capture_kernels_per_second: distinct kernels stored / wall seconds of the capture.
- capture_over_plain_ratio: the capture's wall time over the command's own.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import SMALLEST_HELP, figure  # noqa: E402

from tgstore.extract.runner import resolve_tinygrad_root  # noqa: E402

PROGRAM = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("cases", sys.argv[1])
cases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cases)
getattr(cases, "case_" + sys.argv[2])().realize()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinygrad", type=Path, default=None)
    ap.add_argument("--renderers", default="C")
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP.split(" (")[0] + ": the built-in "
                    "softmax case realized instead of GPT-2; its figures mean nothing")
    ap.add_argument("command", nargs="*", help="after --: the command to capture, run in the tinygrad checkout")
    args = ap.parse_args()
    root = resolve_tinygrad_root(args.tinygrad)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        command = args.command
        if not command:
            (cwd / "program.py").write_text(PROGRAM)
            suite, case = ("builtin", "softmax") if args.smallest else ("models", "gpt2")
            command = ["python", "program.py", str(ROOT / "tgstore" / "cases" / f"{suite}.py"), case]
        elif args.tinygrad:
            cwd = root
        env = {**os.environ, "PYTHONPATH": str(root), "DEV": "CPU"}
        start = time.perf_counter()
        plain = subprocess.run([sys.executable, *command[1:]] if command[0].startswith("python")
                               else [sys.executable, "-m", *command], cwd=cwd, env=env, capture_output=True)
        plain_seconds = time.perf_counter() - start
        out = Path(tmp) / "b.jsonl"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "tgstore", "extract", "--tinygrad", str(root), "--renderers",
                               args.renderers, "--stages", "none", "-o", str(out), "--capture", "--", *command],
                              cwd=cwd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        kernels = sum(len(r["schedule"]) for r in map(json.loads, out.read_text().splitlines())
                      if r["kind"] == "case")
        print(f"# {' '.join(command)}: {kernels} kernels captured in {seconds:.1f} s (the command alone "
              f"{plain_seconds:.1f} s, exit {plain.returncode})", flush=True)
        figure("capture_kernels_per_second", kernels / seconds)
        figure("capture_over_plain_ratio", seconds / plain_seconds)


if __name__ == "__main__":
    main()
