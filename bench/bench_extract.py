"""Extraction and ingestion against tinygrad itself: prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_extract.py [--tinygrad DIR] [--cases FILE] [--repeat 3] [--only c,all,...] [--jobs N]
                                    [--smallest]

- extract_c_ratio, extract_all_ratio: `tgstore extract --stages none` (C only; all renderers) over the time of
  bench/baseline_tinygrad.py, which only imports tinygrad and schedules and renders the same cases with the same
  renderers in one process. The extraction runs its cases in `--jobs` worker processes (default: tgstore's own,
  the usable cores up to 4): `--jobs 1` measures one process against one. Both are whole processes (interpreter
  start included), medians of --repeat runs, alternated. A kernel a renderer cannot render (WGSL and float64)
  costs both sides the same failed lowering; both counts are printed.
  Each ratio is given in wall time and (`*_cpu_ratio`) in CPU seconds (user + system of the process and its
  children), the steadier of the two on a loaded machine; every run's seconds are printed (the spread).
- stage_capture_ratio: extraction with the default stages (C, LLVM passes and canonical documents) over the same
  extraction without, all renderers.
- ingest_parse_ratio: storing a bundle into a fresh database over reading (parsing and validating) it.
- ingest_unchanged_cpu_seconds_{c,stages}: what the single writer of a sweep pays for a commit whose output did not
  change: reading (parsing, validating) its bundle plus storing it as another commit when every artifact is already
  there. `_c`: the C-only bundle without stages (the sweep's plan); `_stages`: all renderers with the default stages.
  ingest_new_cpu_seconds_{c,stages}: reading plus storing into a fresh database (every artifact new: the most a
  changed commit costs). CPU seconds of this process (time.process_time), medians of --repeat: steadier than wall
  time on a shared machine; the read and store parts are printed.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import SMALLEST_CASES, SMALLEST_HELP, case_file, failed_lowerings, figure, parse_baseline, skipped_by  # noqa: E402

from tgstore.extract.runner import BUILTIN_CASES, resolve_tinygrad_root  # noqa: E402

BASELINE = ROOT / "bench" / "baseline_tinygrad.py"
ALL = "C,LLVM,PTX,CUDA,METAL,OPENCL,WGSL,HIP,X86"


Seconds = tuple[float, float]  # (wall, CPU)


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[Seconds, str]:
    """(wall, CPU) seconds the command took, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return (wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), proc.stdout


def timed(argv: list[str], env: dict[str, str] | None = None) -> Seconds:
    return run(argv, env)[0]


def baseline_argv(root: Path, cases: Path, renderers: str) -> tuple[list[str], dict[str, str]]:
    import os

    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root), "PYTHONHASHSEED": "0",
           "HOME": os.environ.get("HOME", "/tmp")}
    return [sys.executable, str(BASELINE), str(cases), renderers], env


LAST_BASELINE: dict[str, str] = {}


def baseline(root: Path, cases: Path, renderers: str) -> Seconds:
    seconds, stdout = run(*baseline_argv(root, cases, renderers))
    LAST_BASELINE.clear()
    LAST_BASELINE.update(parse_baseline(stdout))
    return seconds


def buildable_renderers(root: Path) -> str:
    """The renderers of ALL the baseline can construct here (its output line ends `renderers A,B,...`): a case file
    without cases, so that this costs an import."""
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "none.py"
        empty.write_text("")
        return parse_baseline(run(*baseline_argv(root, empty, ALL))[1])["renderers"]


JOBS: list[str] = []  # `tgstore extract`'s --jobs, when given (else its default: the usable cores, at most 4)


def extract(root: Path, cases: Path, renderers: str, stages: str, out: Path) -> Seconds:
    return timed([sys.executable, "-m", "tgstore", "extract", "--tinygrad", str(root), "--cases", str(cases),
                  "--renderers", renderers, "--stages", stages, "-o", str(out), *JOBS])


def median_pair(repeat: int, a, b) -> tuple[Seconds, Seconds]:
    """Medians (wall, CPU) of `repeat` runs of a and of b, alternated so that both see the same machine load;
    prints every run."""
    xs, ys = [], []
    for _ in range(repeat):
        xs.append(a())
        ys.append(b())
    for label, runs in (("a", xs), ("b", ys)):
        print(f"#   runs {label}: wall {', '.join(f'{w:.2f}' for w, _ in runs)} s; CPU "
              f"{', '.join(f'{c:.2f}' for _, c in runs)} s", flush=True)
    return ((statistics.median(w for w, _ in xs), statistics.median(c for _, c in xs)),
            (statistics.median(w for w, _ in ys), statistics.median(c for _, c in ys)))


def ratio_figures(name: str, ours: Seconds, base: Seconds, note: str) -> None:
    figure(name, ours[0] / base[0], note)
    figure(name.replace("_ratio", "_cpu_ratio"), ours[1] / base[1], note + " (CPU seconds)")


def ingest_seconds(bundle: Path, repeat: int) -> dict[str, Seconds]:
    """(wall, CPU) seconds, medians: reading `bundle` ("read"), storing it into a fresh database ("new"), storing
    it again as another commit ("unchanged": a new tree hash, every artifact already there, as for a commit whose
    output did not change). CPU seconds are this process's (time.process_time): ingestion runs in it."""
    from tgstore.bundle import read_bundle
    from tgstore.db import open_engine, upgrade
    from tgstore.store.ingest import ingest_bundle

    runs: dict[str, list[Seconds]] = {"read": [], "new": [], "unchanged": []}

    def timed(step: str, work, *args):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work(*args)
        runs[step].append((time.perf_counter() - wall, time.process_time() - cpu))
        return result

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            loaded = timed("read", read_bundle, bundle)
            engine = open_engine(Path(tmp) / f"{i}.db")
            upgrade(engine)
            timed("new", ingest_bundle, engine, loaded)
            loaded.header["tinygrad"] = {**loaded.tinygrad, "tree_hash": f"another-commit-{i}", "git": None}
            timed("unchanged", ingest_bundle, engine, loaded)
            engine.dispose()
    return {step: (statistics.median(w for w, _ in xs), statistics.median(c for _, c in xs))
            for step, xs in runs.items()}


def ingest_figures(label: str, bundle: Path, repeat: int) -> dict[str, Seconds]:
    took = ingest_seconds(bundle, repeat)
    read, new, unchanged = (took[step][1] for step in ("read", "new", "unchanged"))
    print(f"# ingest of the {label} bundle ({bundle.stat().st_size / 1e6:.1f} MB), CPU seconds: read {read:.2f}, "
          f"store into a fresh database {new:.2f}, store again as another commit {unchanged:.2f}", flush=True)
    figure(f"ingest_unchanged_cpu_seconds_{label}", read + unchanged, "target well under 1")
    figure(f"ingest_new_cpu_seconds_{label}", read + new, "reported, no target")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinygrad", type=Path, default=None, help="default: the installed tinygrad")
    ap.add_argument("--cases", type=Path, default=BUILTIN_CASES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="c,all,stages,ingest",
                    help="the figures to measure, of c, all, stages, ingest (ingest needs stages)")
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP)
    ap.add_argument("--jobs", type=int, default=None,
                    help="the extraction's worker processes (tgstore extract --jobs); default: its own default, the "
                         "usable cores (at most 4). The baseline is one process, as tinygrad is")
    args = ap.parse_args()
    if args.jobs is not None:
        JOBS[:] = ["--jobs", str(args.jobs)]
    only = set(args.only.split(","))
    root = resolve_tinygrad_root(args.tinygrad)
    with tempfile.TemporaryDirectory() as tmp:
        cases = args.cases
        if args.smallest:
            cases, args.repeat = case_file(SMALLEST_CASES.split(","), Path(tmp) / "smallest.py"), 1
        from tgstore.pipeline import default_workers

        print(f"# tinygrad {root}, cases {cases}, median of {args.repeat}; the extraction runs its cases in "
              f"{args.jobs or default_workers()} worker process(es)", flush=True)
        buildable = buildable_renderers(root)  # those that build without a GPU toolchain are compared
        print(f"# renderers compared: {buildable} (the others need a stubbed GPU compiler to construct)", flush=True)
        out = Path(tmp) / "b.jsonl"
        for label, renderers in (("c", "C"), ("all", buildable)):
            if label not in only:
                continue
            base, ours = median_pair(args.repeat, lambda r=renderers: baseline(root, cases, r),
                                     lambda r=renderers: extract(root, cases, r, "none", out))
            ours_failed, base_failed = failed_lowerings(out), skipped_by(LAST_BASELINE["skipped_by"])
            print(f"# {label} (a: baseline, b: extraction): baseline {base[0]:.2f} s ({base[1]:.2f} CPU s), tgstore "
                  f"extract --stages none {ours[0]:.2f} s ({ours[1]:.2f} CPU s); kernels a renderer "
                  f"could not render, skipped on both sides: baseline {base_failed or 0}, extraction "
                  f"{ours_failed or 0}; cases unsupported in this tinygrad: {LAST_BASELINE['unsupported']}",
                  flush=True)
            if ours_failed != base_failed:
                print("# WARNING: the two sides skipped different kernels: the ratio compares unlike work")
            ratio_figures(f"extract_{label}_ratio", ours, base, "target <= " + ("1.05" if label == "c" else "1.0"))
            if label == "c" and "ingest" in only:
                ingest_figures("c", out, args.repeat)
        if "stages" not in only:
            return
        without, with_stages = median_pair(args.repeat, lambda: extract(root, cases, buildable, "none", out),
                                           lambda: extract(root, cases, buildable, "C,LLVM", out))
        print(f"# stages (a: without, b: with): without {without[0]:.2f} s, with C,LLVM passes and canonical "
              f"documents {with_stages[0]:.2f} s")
        ratio_figures("stage_capture_ratio", with_stages, without, "reported, no target")
        if "ingest" not in only:
            return
        took = ingest_figures("stages", out, args.repeat)
        parse, store = took["read"][0], took["new"][0]
        print(f"# ingest of the bundle with stages ({out.stat().st_size / 1e6:.1f} MB), wall: parse {parse:.2f} s, "
              f"store {store:.2f} s")
        figure("ingest_parse_ratio", store / parse, "target <= 4")


if __name__ == "__main__":
    main()
