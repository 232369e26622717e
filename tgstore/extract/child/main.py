"""The extraction child's main: set tinygrad's environment, import it, run the cases, write the bundle."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import pathlib
import platform
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# None of these imports tinygrad: the target tinygrad is imported by Extractor(), after tinygrad_env set its
# environment, so that a tinygrad that will not import is recorded instead of failing the child.
from . import BUNDLE_VERSION, DEFAULT_RENDERERS, DEFAULT_STAGE_RENDERERS
from .capture import capture
from .case import load_cases
from .extractor import Extractor, open_default_device
from .header import capture_identity, describe_tinygrad, device_env, run_settings, suite_identity
from .inputs import InputWatch
from .lifetime import die_with_parent
from .lower import selected_renderers
from .machine import calibrate, codegen_thread_env, machine
from .reference import reference_ns
from .text import BundleWriter, error_text, now, set_root
from .timing import WARMUP
from .workers import Emit, can_fork, run_in_workers


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m child",
                                 description="tgstore extraction child: write a bundle for the tinygrad on PYTHONPATH")
    ap.add_argument("--out", required=True, help="bundle path (JSON lines)")
    ap.add_argument("--cases", action="append", default=[],
                    help="case file (repeatable); default: builtin.py of tgstore/cases if found")
    ap.add_argument("--backend", default="CPU")
    ap.add_argument("--renderers", default=None,
                    help=f"comma-separated; default {','.join(DEFAULT_RENDERERS)}; 'all' for all known")
    ap.add_argument("--stages", default=",".join(DEFAULT_STAGE_RENDERERS),
                    help="renderers whose lowering passes are recorded (comma-separated), 'all' or 'none'")
    ap.add_argument("--rewrites", type=int, default=0,
                    help="record up to N rewrite steps per pass (the steps tinygrad's VIZ trace holds); 0: off")
    ap.add_argument("--debug", type=int, default=4, help="tinygrad DEBUG level while a case runs")
    ap.add_argument("--suite-name", default=None)
    ap.add_argument("--capture-json", default=None,
                    help="capture mode: run this command (a JSON list: python SCRIPT, pytest ARGS, ...) and record "
                         "every kernel tinygrad lowers, instead of running case files")
    ap.add_argument("--cwd", default=None, help="capture mode: the command's working directory")
    ap.add_argument("--git-json", default=None,
                    help='header git info as JSON {"sha","date","subject","position"}, instead of asking git')
    ap.add_argument("--tinygrad-root", default=None, help="dir holding tinygrad/ (default: first PYTHONPATH entry)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="run the cases in this many forked worker processes (the bundle is the same); timing and "
                         "compile times run in one")
    ap.add_argument("--time", action="store_true",
                    help="also compile every kernel with the device's compiler and time it (timing.py)")
    ap.add_argument("--compile-times", action="store_true",
                    help="record how long scheduling and each kernel's lowering took, per named pass (implied by "
                         "--time)")
    ap.add_argument("--time-runs", type=int, default=None,
                    help="timed runs per kernel after the warm-up (default: as many as fit ~0.15 s, 5 to 50)")
    ap.add_argument("--time-threads", type=int, default=None,
                    help="CPU threads a timed kernel may use (default: NUM_CPU_THREADS capped at the usable cores)")
    ap.add_argument("--time-timeout", type=float, default=60.0,
                    help="seconds one kernel may take to compile and run before it is recorded as a timeout")
    return ap.parse_args(argv)


def tinygrad_env(root: pathlib.Path, backend: str) -> dict[str, str]:
    """The environment tinygrad is imported with (recorded in the header)."""
    for d in [p.stem[4:].upper() for p in (root / "tinygrad" / "runtime").glob("ops_*.py")] + ["DEV", "DEBUG", "VIZ"]:
        os.environ.pop(d, None)
    env = device_env(root, backend)
    env.update({
        "TRACK_MATCH_STATS": "1",  # match counts; rewrite steps are the child's own (step_log.py), not tinygrad's trace
        "PRINT_MATCH_STATS": "0",
        "CACHELEVEL": "0",
        "DISABLE_COMPILER_CACHE": "1",
        **codegen_thread_env(),  # CPU kernels are split for this many threads, whatever the machine's cores
        "CAPTURE_PROCESS_REPLAY": "0",
        "RUN_PROCESS_REPLAY": "0",
        "SCACHE": "0",  # 0.13+ schedule cache: a repeated graph would skip the scheduler's passes
        "PARALLEL": "0",  # no worker processes: they would import an unwrapped tinygrad
    })
    os.environ.update(env)
    return env


class UsageError(Exception):
    """A bad argument or a missing tinygrad: one line on stderr, exit status 2."""


@dataclass
class Inputs:
    """What the arguments name, checked: the tinygrad, the case files or the command to capture, the renderers."""

    root: pathlib.Path
    case_files: list[pathlib.Path]
    capture_argv: list[str] | None
    renderers: list[str]
    stage_renderers: list[str]


def main(argv: list[str] | None = None) -> int:
    """Set tinygrad's environment, import it, run the cases (or the captured command), write the bundle."""
    if argv is None:
        die_with_parent(int(os.environ.get("TGSTORE_PARENT_PID") or 0) or None)
    args = parse_args(argv)
    if argv is None and os.environ.get("PYTHONHASHSEED") != "0":
        reexec_with_fixed_hash_seed()
    started = now()
    try:
        inputs = read_inputs(args)
        described = describe_tinygrad(inputs.root, git_override(args))  # reads every file: before the watch
        # what the run reads, for a sweep's skip (history/skip.py); the case files are the suite, not its inputs
        watch = InputWatch(inputs.root, ignored=[*map(str, inputs.case_files), str(pathlib.Path(args.out).resolve())])
        watch.start()
        env = tinygrad_env(inputs.root, args.backend)
        out = BundleWriter(pathlib.Path(args.out))
        header = bundle_header(args, inputs, env, started, described)
    except UsageError as exc:
        print(f"child: {exc}", file=sys.stderr)
        return 2
    emit = Emit(out.write)
    ex = import_tinygrad(args, inputs, header, out, emit)
    if ex is None:
        return 3
    write_header(ex, args, header, out)
    if inputs.capture_argv is not None:
        return capture_command(ex, inputs.root, inputs.capture_argv, args.cwd, out, settings_of(header, inputs, args))
    cases = load_case_files(inputs.case_files, out)
    # timings want the machine to themselves: one process
    jobs = 1 if args.time or args.compile_times or not can_fork() else max(1, min(args.jobs, len(cases)))
    return run_cases(ex, cases, out, read_record(watch, header, inputs, args), jobs=jobs, emit=emit, watch=watch)


def reexec_with_fixed_hash_seed() -> None:
    """Set iteration order (e.g. dtype sets printed in UPat reprs, some rewrite orders) follows the str hash seed:
    pin it so the same tinygrad gives the same bytes; this needs a fresh interpreter."""
    os.environ["PYTHONHASHSEED"] = "0"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def read_inputs(args: argparse.Namespace) -> Inputs:
    root = find_root(args)
    set_root(root)
    case_files = [pathlib.Path(c).resolve() for c in args.cases]
    if not case_files:
        default = pathlib.Path(__file__).resolve().parent.parent.parent / "cases" / "builtin.py"
        if not default.is_file():
            raise UsageError("no --cases given and no builtin.py in tgstore/cases")
        case_files = [default]
    capture_argv: list[str] | None = None
    if args.capture_json:
        try:
            capture_argv = [str(a) for a in json.loads(args.capture_json)]
        except (ValueError, TypeError):
            raise UsageError(f"--capture-json is not a JSON list: {args.capture_json!r}") from None
    renderers = selected_renderers(args.renderers, DEFAULT_RENDERERS)
    stage_renderers = [r for r in selected_renderers(args.stages, DEFAULT_STAGE_RENDERERS) if r in renderers]
    return Inputs(root, case_files, capture_argv, renderers, stage_renderers)


def git_override(args: argparse.Namespace) -> dict[str, Any] | None:
    """The commit the parent names for the tinygrad (a sweep's archive has no .git)."""
    if not args.git_json:
        return None
    try:
        return json.loads(args.git_json)
    except ValueError:
        raise UsageError(f"--git-json is not JSON: {args.git_json!r}") from None


def bundle_header(args: argparse.Namespace, inputs: Inputs, env: dict[str, str], started: str,
                  described: dict[str, Any]) -> dict[str, Any]:
    """The header record; its `features` (and `timing`) are filled in once tinygrad is imported."""
    return {
        "kind": "header", "bundle_version": BUNDLE_VERSION, "producer": "tgstore-child", "started_at": started,
        "python": platform.python_version(), "platform": platform.platform(),
        "tinygrad": described, "backend": args.backend,
        "renderers": inputs.renderers, "stages": inputs.stage_renderers, "rewrites_limit": args.rewrites,
        "debug_level": args.debug,
        "suite": capture_identity(inputs.capture_argv) if inputs.capture_argv is not None
        else suite_identity(inputs.case_files, args.suite_name), "features": {}, "env": env,
    }


def import_tinygrad(args: argparse.Namespace, inputs: Inputs, header: dict[str, Any],
                    out: BundleWriter, emit: Emit) -> Extractor | None:
    """The extractor over the target tinygrad (imported here), writing to `emit`; None when it would not import,
    recorded as a missing `tinygrad` in a bundle of the header alone."""
    try:
        return Extractor(inputs.root, emit, inputs.renderers, inputs.stage_renderers, args.rewrites, args.debug,
                         timing=(args.backend, args.time_runs, args.time_timeout, args.time_threads) if args.time
                         else None, compile_times=args.time or args.compile_times)
    except Exception:
        out.write(header)
        out.write({"kind": "missing", "feature": "tinygrad", "reason": error_text(), "case": None})
        out.close()
        print(traceback.format_exc(), file=sys.stderr)
        return None


def write_header(ex: Extractor, args: argparse.Namespace, header: dict[str, Any], out: BundleWriter) -> None:
    """The header with what the import found (features, the timing block), then what this era lacks."""
    header["features"] = ex.features
    if args.time or args.compile_times:  # the machine the times belong to
        header["timing"] = timing_header(ex, args)
    out.write(header)
    for m in ex.missing:
        out.write({"kind": "missing", "case": None, **m})


def load_case_files(case_files: list[pathlib.Path], out: BundleWriter) -> list[tuple[str, Callable, str | None]]:
    """Every case of the files, a name taken twice suffixed with its file's stem; a file that fails to load is
    recorded as missing and the others still run."""
    cases: list[tuple[str, Callable, str | None]] = []
    for i, cf in enumerate(case_files):
        try:
            for name, fn, doc in load_cases(cf, i):
                while name in {c[0] for c in cases}:
                    name = f"{name}@{cf.stem}"
                cases.append((name, fn, doc))
        except Exception:
            out.write({"kind": "missing", "feature": f"cases:{cf}", "reason": error_text(),
                       "case": None})
    return cases


def settings_of(header: dict[str, Any], inputs: Inputs, args: argparse.Namespace) -> dict[str, Any]:
    """The run's settings (child/settings.py): what a stored run is asked to hold."""
    return run_settings(suite_hash=header["suite"]["hash"], backend=args.backend, renderers=inputs.renderers,
                        stages=inputs.stage_renderers, rewrites=args.rewrites, debug=args.debug)


def read_record(watch: InputWatch, header: dict[str, Any], inputs: Inputs,
                args: argparse.Namespace) -> Callable[[], dict[str, Any]]:
    """The end record's `inputs`: what the run read and used, and its settings."""
    return lambda: {**watch.record(), "settings": settings_of(header, inputs, args)}


def run_cases(ex: Extractor, cases: list[tuple[str, Callable, str | None]], out: BundleWriter,
              inputs_read: Callable[[], dict[str, Any]], *, jobs: int, emit: Emit, watch: InputWatch) -> int:
    """Every case's record, in one process or in `jobs` forked workers (the same records), then the end record."""
    open_default_device(ex.tg)
    ex.patterns.scan()
    settle_heap()
    failed = 0
    if jobs > 1:
        records = run_in_workers(ex, cases, jobs, emit, watch, out.write)
    else:
        records = (ex.runner.run(name, fn, doc) for name, fn, doc in cases)
    for rec in records:
        failed += rec["status"] == "error"
        out.write(rec)
    out.write({**end_record(ex, len(cases), failed), "inputs": inputs_read()})
    out.close()
    return 0


def settle_heap() -> None:
    """Collect what set-up left behind, then freeze the survivors (tinygrad, its matchers, the renderers) out of the
    collector's sight: the full collection after each case (caches.GraphCaches.clear) then looks only at what cases
    made, about a quarter of a second less per case. What a collection frees is unchanged: frozen objects were alive."""
    gc.collect()
    gc.freeze()


def timing_header(ex: Extractor, args: argparse.Namespace) -> dict[str, Any]:
    """The header's `timing` block: the machine, tinygrad's timer in this era, the calibration figure and the
    reference kernel's time (reference.py)."""
    threads = ex.timer.threads if ex.timer else None
    return {"machine": machine(args.backend, threads=threads), "timer": ex.timer.kind if ex.timer else None,
            "runs": args.time_runs, "warmup": WARMUP if args.time else None,  # None: compile times only
            "calibration_ns": calibrate() if (ex.timer and ex.timer.kind) or args.compile_times else None,
            "reference_ns": reference_ns() if ex.timer and ex.timer.kind else None}


def end_record(ex: Extractor, cases: int, failed: int) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "end", "finished_at": now(), "cases": cases, "failed_cases": failed}
    if (ex.timer is not None and ex.timer.kind) or ex.runner.options.compile_times:
        record["calibration_end_ns"] = calibrate()  # the same loop after the run: did the load change meanwhile?
    return record


def capture_command(ex: Extractor, root: pathlib.Path, argv: list[str], cwd: str | None, out: BundleWriter,
                    settings: dict[str, Any]) -> int:
    """Capture mode: run the command, then write one case per origin (pytest test, or the whole command) holding
    the kernels first lowered there. Its inputs are its settings alone: the command runs the commit's own files, so
    a capture run is never copied to another commit."""
    if cwd:
        os.chdir(cwd)
    hooks, command = capture(ex.tg, root, argv)
    out.write(command)
    ex.patterns.scan()
    failed = 0
    for origin in hooks.origins.values():
        rec = ex.runner.lowered_case(origin.name, origin.kernels, None)
        rec["missing"].append({"feature": "match_counts", "reason": "capture mode counts no matches per case"})
        failed += rec["status"] == "error"
        out.write(rec)
    out.write({**end_record(ex, len(hooks.origins), failed), "inputs": {"settings": settings}})
    out.close()
    return 0


def find_root(args: argparse.Namespace) -> pathlib.Path:
    """The directory holding the target tinygrad/ package, put first on sys.path."""
    if args.tinygrad_root:
        root = pathlib.Path(args.tinygrad_root).resolve()
    else:
        spec = importlib.util.find_spec("tinygrad")
        if spec is None or not spec.origin:
            raise UsageError("no tinygrad found: set PYTHONPATH to the dir holding tinygrad/")
        root = pathlib.Path(spec.origin).resolve().parent.parent
    if not (root / "tinygrad" / "__init__.py").is_file():
        raise UsageError(f"{root} does not hold a tinygrad/ package")
    if str(root) not in [str(pathlib.Path(p).resolve()) for p in sys.path if p]:
        sys.path.insert(0, str(root))
    return root
