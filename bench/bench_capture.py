"""Capture throughput: kernels stored per second of `tgstore extract --capture`. Prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_capture.py                                   # the models suite's GPT-2, realized
    .venv/bin/python bench/bench_capture.py --tinygrad ~/src/tinygrad -- pytest test/unit/test_masked_tensor.py
    .venv/bin/python bench/bench_capture.py --smallest            # the built-in softmax case, realized

The default program realizes the built-in `models` suite's GPT-2 forward (its kernels compile with clang and run on
the CPU). With a tinygrad checkout and a command after --, that command is captured in the checkout (a test file).
Both the capture and the same command without tgstore are timed, alternated, --repeat times (medians), so the
figure says what capture costs too. The command alone runs with the tinygrad settings the extraction child gives it
(no compiler or disk cache, the same CPU thread count, so the same kernels compiled the same way): like with like.
- capture_kernels_per_second: distinct kernels stored / wall seconds of the capture.
- capture_over_plain_ratio: the capture's wall time over the command's own (target <= 1.5).
- capture_over_plain_cpu_ratio: the same in CPU seconds (user + system of the processes): on a loaded machine
  the steadier of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
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
    ap.add_argument("--repeat", type=int, default=3)
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
        env = plain_env(root)
        plain_argv = ([sys.executable, *command[1:]] if command[0].startswith("python")
                      else [sys.executable, "-m", *command])
        out = Path(tmp) / "b.jsonl"
        capture_argv = [sys.executable, "-m", "tgstore", "extract", "--tinygrad", str(root), "--renderers",
                        args.renderers, "--stages", "none", "-o", str(out), "--capture", "--", *command]
        repeat = 1 if args.smallest else args.repeat
        plains, captures = [], []
        for _ in range(repeat):  # alternated, so both see the same machine load
            plains.append(timed(plain_argv, cwd, env))
            captures.append(timed(capture_argv, cwd, None))
        wall, cpu = (statistics.median(c[i] for c in captures) for i in (0, 1))
        plain_wall, plain_cpu = (statistics.median(p[i] for p in plains) for i in (0, 1))
        records = [json.loads(line) for line in out.read_text().splitlines()]
        kernels = sum(len(r["schedule"]) for r in records if r["kind"] == "case")
        status = next(r["exit_status"] for r in records if r["kind"] == "command")
        print(f"# {' '.join(command)}: {kernels} kernels captured in {wall:.1f} s, {cpu:.1f} CPU s (the command "
              f"alone {plain_wall:.1f} s, {plain_cpu:.1f} CPU s; medians of {repeat}; wall s capture "
              f"{', '.join(f'{c[0]:.1f}' for c in captures)}, alone {', '.join(f'{p[0]:.1f}' for p in plains)}); "
              f"exit status alone {sorted({p[2] for p in plains})}, captured {status}", flush=True)
        figure("capture_kernels_per_second", kernels / wall)
        figure("capture_over_plain_ratio", wall / plain_wall, "target <= 1.5")
        figure("capture_over_plain_cpu_ratio", cpu / plain_cpu, "target <= 1.5")


def plain_env(root: Path) -> dict[str, str]:
    """The environment the extraction child runs tinygrad with (child/main.py's tinygrad_env), for the command
    alone."""
    from tgstore.extract.child.main import tinygrad_env

    saved = dict(os.environ)
    try:
        return {**tinygrad_env(root, "CPU"), "PATH": saved.get("PATH", ""), "HOME": saved.get("HOME", "/tmp"),
                "PYTHONPATH": str(root), "PYTHONHASHSEED": "0"}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and its children, exit status) of one run; a capture that fails
    stops the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 and "tgstore" in argv:
        raise SystemExit(proc.stderr[-3000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.returncode


if __name__ == "__main__":
    main()
