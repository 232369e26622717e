"""Rule-level parity: Svod's `pattern matched` and `kernel split` events read into kernels and passes
(tests/svod_rules.py builds the log as Svod prints it, citing the source lines), and `tgstore parity --rules` against
tinygrad 0.14's real rewrite steps for the same program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import rows, tgstore
from svod_fixtures import CASE, CASE_SOURCE
from svod_rules import CODEGEN_KEYS, KERNEL_SPLIT, PATTERN, POST_OPT, rules_log
from svod_runs import threaded_log

from tgstore.svod.readers import read_runs
from tgstore.svod.rules import op_of_key, span_passes


def test_matches_belong_to_the_pass_whose_event_follows_them() -> None:
    (log,) = read_runs([("rules.log", rules_log())])
    assert not log.problems and not log.loose_fires
    (kernel,) = log.kernels
    fires = {s.label: (s.fires.since, s.fires.counts) for s in kernel.stages if s.fires}
    expected = {label: keys for label, _message, _tree, keys in POST_OPT if keys}
    assert {label: counts for label, (_since, counts) in fires.items()} == expected
    assert fires["10-pm_reduce"] == ("09-pre_expand", {"Reduce": 2, "Index": 4})
    assert fires["08-post_opt_sym"][0] == "00-initial"  # the opts' rewrites end at the second `kernel initial`
    assert kernel.code_fires.counts == CODEGEN_KEYS and kernel.code_fires.since == "codegen"
    # the kernel cut's events are schedule stages; the matches before each are its pass's
    split = {s.label: s for s in log.schedule_stages if s.label.startswith("kernel split")}
    assert list(split) == [message for message, _keys in KERNEL_SPLIT]
    assert split["kernel split: split_all_stores complete"].fires.counts == {"End": 1, "Param": 2, "Range": 2}
    assert split["kernel split: split_all_stores complete"].fires.since == \
        "kernel split: pm_flatten_range pre-pass complete"
    assert split["kernel split: fix_assign complete"].fires is None
    total = sum(sum(f.counts.values()) for f in [*(s.fires for s in kernel.stages + log.schedule_stages if s.fires),
                                                  kernel.code_fires])
    assert total == sum(1 for e in log.events if e.record["target"] == PATTERN) == 93
    assert log.pattern_matches == (93, 0)


def test_matches_of_kernels_optimized_in_parallel_are_not_tied_to_a_kernel() -> None:
    """SVOD_THREADS unset: a `pattern matched` event names no kernel, so none is filed under one."""
    lines = threaded_log(kernels=3, seed=7).split("\n")
    pattern = '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"TRACE","fields":{"message":"pattern matched",' \
              '"op_key":"Binary(Add)"},"target":"svod_ir::pattern::simplified"}'
    out = []
    for line in lines:
        if line.startswith('{"timestamp"') and "Stage 20" in line:
            out.append(pattern)
        out.append(line)
    (log,) = read_runs([("threads.log", "\n".join(out))])
    assert all(s.fires is None for k in log.kernels for s in k.stages) and all(k.code_fires is None
                                                                                for k in log.kernels)
    assert sum(sum(f.counts.values()) for f in log.loose_fires) == 3 and log.pattern_matches == (0, 3)
    (problem,) = [p for p in log.problems if "pattern matched" in p.message]
    assert "SVOD_THREADS=1" in problem.message and problem.message.startswith("3 ")


@pytest.mark.parametrize(("op_key", "op"), [
    ("Binary(Add)", "ADD"), ("Binary(Lt)", "CMPLT"), ("Ternary(MulAcc)", "MULACC"), ("Unary(Neg)", "NEG"),
    ("Load", "LOAD"), ("GetTuple", "GETTUPLE"), ("ContiguousBackward", "CONTIGUOUS_BACKWARD"),
    ("EndIf", "ENDIF"), ("ProgramBinary", "BINARY"), ("DefineVar", "DEFINE_VAR"), ("Frobnicate", None),
    ("Binary(Frob)", None), ("Sink(Add)", None)])
def test_op_keys_are_spelled_as_tinygrad_ops_or_left_unmapped(op_key: str, op: str | None) -> None:
    assert op_of_key(op_key) == op


def test_a_stretch_covers_the_passes_since_the_previous_event() -> None:
    assert span_passes("lower", "09-pre_expand", "10-pm_reduce") == ["remove reduces"]
    assert span_passes("lower", "09-pre_expand", "11-local_buffers") == ["remove reduces", "add local buffers"]
    assert span_passes("lower", "19e-move_gates_from_index", "20-final_rewrite") == ["final rewrite",
                                                                                     "add implicit barriers"]
    assert span_passes("lower", None, "kernel-initial") is None
    assert span_passes("schedule", "rangeified", "kernel split: pm_add_buffers complete") == ["stage to store"]
    assert span_passes("lower", "not a stage", "10-pm_reduce") is None


@pytest.fixture(scope="module")
def rules_db(tmp_path_factory) -> Path:
    """The installed tinygrad (0.14) over sum_rows with every rewrite step recorded, and two Svod logs of it: with
    `pattern matched` events and without."""
    base = tmp_path_factory.mktemp("rules")
    cases = base / "cases.py"
    cases.write_text(CASE_SOURCE)
    db = base / "r.db"
    proc = tgstore("ingest", "--db", db, "--cases", cases, "--renderers", "C,LLVM", "--rewrites", "1000")
    assert proc.returncode == 0, proc.stderr
    for name, text in (("rules.log", rules_log()), ("plain.log", rules_log(patterns=False))):
        (base / name).write_text(text)
        assert tgstore("ingest-svod", base / name, "--case", CASE, "--db", db).returncode == 0
    return db


@pytest.mark.slow
def test_parity_rules_names_what_fires_on_one_side_only(rules_db: Path) -> None:
    assert rows(rules_db, "SELECT count(*), sum(count) FROM svod_rule_fires WHERE run_id = 1") == [(39, 93)]
    proc = tgstore("parity", CASE, "--rules", "--svod", "1", "--json", "--db", rules_db)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["hint"] is None and report["loose"] == {} and report["one_side_only"] == 4
    kernel, schedule = report["kernels"]
    assert (kernel["svod_name"], kernel["tinygrad_name"], kernel["renderer"]) == ("r_8_16_4", "r_8_16_4", "LLVM")
    passes = {p["svod_stage"]: p for p in kernel["passes"]}
    reduce = passes["10-pm_reduce"]
    assert reduce["tinygrad_passes"] == ["remove reduces"] and (reduce["svod"], reduce["tinygrad"]) == (6, 7)
    (reshape,) = [o for o in reduce["ops"] if o["op"] == "RESHAPE"]
    assert reshape["side"] == "tinygrad only" and reshape["tinygrad_rules"] == [
        {"pass": "remove reduces", "file": "tinygrad/uop/movement.py", "line": 9, "count": 1, "function": "<lambda>",
         "matcher": reshape["tinygrad_rules"][0]["matcher"]}]
    (ops,) = [o for o in reduce["ops"] if o["op"] == "REDUCE"]
    assert ops["side"] == "both" and ops["svod_op_keys"] == {"Reduce": 2}
    assert sorted((r["function"], r["line"]) for r in ops["tinygrad_rules"]) == [
        ("expand_horizontal_reduce", 232), ("reduce_ranges_to_acc", 231)]
    assert {o["op"]: o["side"] for o in passes["20-final_rewrite"]["ops"]} == {"CAST": "svod only", "END": "both",
                                                                                "SHL": "both"}
    assert passes["20-final_rewrite"]["tinygrad_passes"] == ["final rewrite", "add implicit barriers"]
    assert [(o["op"], o["tinygrad"]) for o in passes["14-devectorize"]["ops"] if o["side"] != "both"] == [
        ("EXPAND", 5)]
    codegen = passes["codegen"]
    assert codegen["tinygrad_passes"] == ["casted consts", "add control flow", "number params with -1",
                                          "linearize/render"]
    (program,) = [o for o in codegen["ops"] if o["op"] == "PROGRAM"]
    assert program["side"] == "tinygrad only" and sorted(r["function"] for r in program["tinygrad_rules"]) == [
        "do_compile", "do_estimates", "do_linearize", "do_render"]
    split = {p["svod_stage"]: p for p in schedule["passes"]}["kernel split: split_all_stores complete"]
    assert split["tinygrad_passes"] == ["split kernels", "kernel split"]
    assert (split["svod"], split["tinygrad"]) == (5, 5)
    assert all(o["side"] == "both" for o in split["ops"])
    text = tgstore("parity", CASE, "--rules", "--svod", "1", "--db", rules_db).stdout
    assert "CAST       svod only" in text and "hint:" not in text
    assert text.rstrip().endswith("4 ops matched on one side only: kernel 0 10-pm_reduce RESHAPE (tinygrad only); "
                                  "kernel 0 14-devectorize EXPAND (tinygrad only); kernel 0 20-final_rewrite CAST "
                                  "(svod only); kernel 0 codegen PROGRAM (tinygrad only); exit status 1")


@pytest.mark.slow
def test_a_log_without_pattern_events_says_which_setting_prints_them(rules_db: Path) -> None:
    proc = tgstore("parity", CASE, "--rules", "--svod", "2", "--db", rules_db)
    assert proc.returncode == 0, proc.stderr
    hints = [line for line in proc.stdout.splitlines() if line.startswith("hint:")]
    assert hints == ["hint: the log has no `pattern matched` events (svod_ir::pattern::simplified is not traced): "
                     "rerun with svod_ir::pattern::simplified=trace added to RUST_LOG"]
    report = json.loads(tgstore("parity", CASE, "--rules", "--svod", "2", "--json", "--db", rules_db).stdout)
    assert report["one_side_only"] == 0 and all(p["svod"] == 0 for k in report["kernels"] for p in k["passes"])


def test_the_readme_example_log_is_the_fixture() -> None:
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "svod-sum_rows-rules.log"
    assert example.read_text() == rules_log()


@pytest.mark.slow
def test_matches_without_pass_events_say_which_target_places_them(rules_db: Path, tmp_path: Path) -> None:
    """RUST_LOG=svod_ir::pattern::simplified=trace alone: matches, but no pass event to tie them to."""
    lines = rules_log().splitlines()
    events = [line.partition(" ... ")[2] if line.startswith("test ") else line for line in lines
              if line.startswith(("test ", "{"))]
    only = [e for e in events if f'"target":"{PATTERN}"' in e]
    log = tmp_path / "only.log"
    log.write_text("\n".join([f"test ops::sum_rows::llvm ... {only[0]}", *only[1:], "ok", ""]))
    assert tgstore("ingest-svod", log, "--case", CASE, "--db", rules_db).returncode == 0
    run = rows(rules_db, "SELECT max(id) FROM svod_runs")[0][0]
    assert rows(rules_db, "SELECT sum(count), min(unattributed) FROM svod_rule_fires WHERE run_id = ?", run) == \
        [(93, 1)]
    report = json.loads(tgstore("parity", CASE, "--rules", "--svod", str(run), "--json", "--db", rules_db).stdout)
    assert report["hint"] == ("the log's `pattern matched` events have no pass events around them: add "
                              "svod_schedule::optimizer=debug to RUST_LOG")
    assert sum(report["loose"].values()) == 93 and report["loose"]["Binary(Add)"] == 17


@pytest.mark.slow
def test_partial_tinygrad_steps_are_said_and_name_no_svod_only_op(tmp_path: Path) -> None:
    """Extracted with --rewrites 2: a pass with more matches is partial, and an op only Svod matched there is not
    called one-sided (tinygrad's later steps may hold it)."""
    cases = tmp_path / "cases.py"
    cases.write_text(CASE_SOURCE)
    db = tmp_path / "p.db"
    assert tgstore("ingest", "--db", db, "--cases", cases, "--renderers", "LLVM", "--rewrites", "2").returncode == 0
    log = tmp_path / "rules.log"
    log.write_text(rules_log())
    assert tgstore("ingest-svod", log, "--case", CASE, "--db", db).returncode == 0
    report = json.loads(tgstore("parity", CASE, "--rules", "--json", "--db", db).stdout)
    passes = {p["svod_stage"]: p for p in report["kernels"][0]["passes"]}
    final = passes["20-final_rewrite"]
    assert final["tinygrad_partial"] == "final rewrite: first 2 of 3" and final["tinygrad"] == 2
    assert {o["op"]: o["side"] for o in final["ops"]}["CAST"] == "svod only" and final["one_side_only"] == []
    assert passes["13-pm_add_loads"]["tinygrad_partial"] == "*** expand broadcast / add loads: first 2 of 10"
