"""The bench scripts are not run by the suite (their figures are timings), but they must keep working: each one
imports what it uses from tgstore and accepts every option bench/README.md shows for it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from slack import generous

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "bench").glob("bench_*.py"))
README = (ROOT / "bench" / "README.md").read_text()


def documented_options(script: Path) -> set[str]:
    """Every `--option` bench/README.md writes after `bench/<script>` on a command line."""
    options: set[str] = set()
    for line in README.splitlines():
        if f"bench/{script.name}" in line:
            command = line.split("#", 1)[0]
            options |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", command))
    return options


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_bench_script_imports_and_takes_the_options_its_readme_shows(script: Path) -> None:
    assert f"bench/{script.name}" in README, f"{script.name} is not in bench/README.md"
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=generous(30),
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script.name}")
    accepted = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", done.stdout))
    assert documented_options(script) <= accepted, documented_options(script) - accepted


def test_the_readme_shows_sweep_options_so_the_check_above_can_fail() -> None:
    assert {"--commits", "--renderers", "--cases", "--repo", "--rev", "--jobs", "--db"} <= documented_options(
        ROOT / "bench" / "bench_sweep.py")


# Each bench at its smallest size (--smallest), run to the end: it must print each figure it is there for. The
# figures themselves are timings on whatever machine runs the tests, so no value is judged here, only that each is
# a number. Those that took 15 s or more on the loaded 2-core machine (about 20 s in CI) are marked slow.
FIGURES = {
    "bench_extract": ["extract_c_ratio", "extract_all_ratio", "stage_capture_ratio", "ingest_parse_ratio",
                      "ingest_unchanged_cpu_seconds_c", "ingest_unchanged_cpu_seconds_stages"],
    "bench_storage": ["full_commit_bytes", "stages_over_no_stages_ratio", "unchanged_commit_bytes",
                      "match_counts_only_commit_bytes"],
    "bench_rewrites": ["rewrites_cpu_ratio", "rewrites_bundle_ratio", "rewrites_db_ratio", "rewrites_ingest_ratio"],
    "bench_fresh": ["fresh_suite_seconds_per_case", "fresh_identical_share"],
    "bench_capture": ["capture_kernels_per_second", "capture_over_plain_ratio"],
    "bench_timing": ["time_overhead_seconds_per_case", "calibration_cv"],
    "bench_queries": ["db_bytes_12", "unchanged_commit_bytes_12", "query_max_seconds_12", "page_max_seconds_12",
                      "page_max_bytes_12"],
    "bench_sweep": ["sweep_bound_ratio", "sweep_cpu_ratio"],
    "bench_compile_times": ["compile_times_cpu_ratio", "compile_times_session_bytes",
                            "unchanged_timed_commit_bytes_with_compile_times"],
    "bench_skip": ["skip_share", "copied_by_what_ran", "facts_identical"],
    "bench_svod_log": ["svod_log_ingest_ratio", "svod_log_peak_mb", "svod_ingest_first_line_seconds"],
    "bench_svod_fuzz": ["svod_fuzz_inputs"],
    "bench_cli": ["cli_help_seconds", "cli_runs_seconds", "cli_query_seconds", "cli_ingest_svod_empty_seconds",
                  "mcp_call_seconds", "cli_runs_cpu_seconds"],
    "bench_regressions": ["false_alarm_ar1", "false_alarm_drift", "detection_step_110", "runs_only_drift",
                          "segment_seconds", "segment_peak_mb"],
    "bench_regressions_cli": ["regressions_cli_seconds_200x1", "regressions_cli_peak_mb_200x1",
                              "regressions_cli_seconds_50x5"],
    "bench_detection_grid": ["detection_grid_worst_false_alarm", "family_false_alarm_indep2", "family_false_alarm_ar1"],
}
SLOW = {"bench_extract", "bench_rewrites", "bench_queries", "bench_sweep", "bench_timing", "bench_skip",
        "bench_compile_times"}  # 15 s or more, loaded


def test_every_bench_has_a_smallest_run_below() -> None:
    assert set(FIGURES) == {s.stem for s in SCRIPTS}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in FIGURES])
def test_bench_runs_to_its_figures_at_its_smallest_size(name: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / f"{name}.py"), "--smallest"], capture_output=True,
                          text=True, timeout=generous(), cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    printed = dict(re.findall(r"^figure (\S+) (\S+)", done.stdout, re.M))
    assert set(FIGURES[name]) <= set(printed), (set(FIGURES[name]) - set(printed), done.stdout[-2000:])
    assert all(float(v) == float(v) for k, v in printed.items() if k in FIGURES[name]), printed  # numbers, not nan
    if name == "bench_extract":  # WGSL cannot render the float64 case: skipped on both sides, and counted
        assert "baseline {'WGSL': 1}, extraction {'WGSL': 1}" in done.stdout, done.stdout
        assert "WARNING" not in done.stdout
    if name == "bench_fresh":
        assert float(printed["fresh_identical_share"]) == 1.0
    if name == "bench_skip":  # the edited AMD runtime is read by no CPU extraction: copied, with the same facts
        assert (float(printed["copied_by_what_ran"]), float(printed["facts_identical"])) == (1.0, 1.0), printed
