"""Stage capture on real releases (issue: tinygrad stage by stage): the graph after each named pass, content-addressed;
Svod canonical documents; stages, canonical and diff --stages on the command line; the pass queries."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from cli import rows, tgstore

from tgstore.bundle import read_bundle
from tgstore.compare.canonical import document_hash, validate
from tgstore.compare.rewrite_steps import parse_steps
from tgstore.pipeline import ExtractionPlan, extract_bundle

KERNEL_STAGES = ["kernel_ast", "optimized", "postrange", "expanded", "coalesced", "gated", "program", "linearized"]


def test_pass_lists_where_the_era_names_its_passes(releases_db: Path) -> None:
    for version in ("0.12.0", "0.14.0"):
        proc = tgstore("stages", "matmul", "--commit", version, "--renderer", "C", "--jsonl", "--db", releases_db)
        assert proc.returncode == 0, proc.stderr
        (kernel,) = [json.loads(line) for line in proc.stdout.splitlines()]
        assert set(kernel) == {"case", "kernel_index", "kernel_name", "renderer", "passes"}
        assert (kernel["case"], kernel["kernel_index"], kernel["renderer"]) == ("matmul", 0, "C")
        names = [p["name"] for p in kernel["passes"]]
        assert {"postopt symbolic", "expander", "final rewrite", "add control flow"} <= set(names), names
        assert names[-1] == "linearize/render"
        assert [p["position"] for p in kernel["passes"]] == list(range(len(names)))
        first = kernel["passes"][0]
        assert set(first) >= {"position", "name", "node_count", "changed", "graph_hash"}
        # a pass that changed nothing has its input's graph: the same hash as the pass before it
        unchanged = [(before, after) for before, after in zip(kernel["passes"], kernel["passes"][1:], strict=False)
                     if after["depth"] == 0 and before["depth"] == 0 and not after["changed"] and after["graph_hash"]]
        assert unchanged, version
        for before, after in unchanged:
            assert after["graph_hash"] == before["graph_hash"], (before, after)
    # 0.10 names no passes: recorded as missing, not failed
    assert rows(releases_db, "SELECT m.feature FROM run_missing m JOIN v_runs r ON r.run_id = m.run_id "
                             "WHERE r.version = '0.10.0' AND m.feature = 'passes'") == [("passes",)]
    proc = tgstore("stages", "matmul", "--commit", "0.10.0", "--db", releases_db)
    assert proc.returncode == 1 and "no passes recorded" in proc.stderr


def test_stages_shows_renderers_with_identical_passes_once(releases_db: Path) -> None:
    proc = tgstore("stages", "matmul", "--commit", "0.14.0", "--db", releases_db)
    assert proc.returncode == 0, proc.stderr
    headers = [line for line in proc.stdout.splitlines() if line.startswith("matmul: kernel")]
    assert len(headers) == 1 and "(C, LLVM) at" in headers[0], headers
    # the last pass (the PROGRAM) holds each renderer's own source: its graph is shown per renderer
    last = [line for line in proc.stdout.splitlines() if "linearize/render" in line]
    assert len(last) == 1 and "C " in last[0] and "LLVM " in last[0]
    assert "35 passes in 1 table;" in proc.stderr


def test_the_last_pass_graph_is_what_tinygrad_linearizes(releases_db: Path) -> None:
    """The last top-level pass with a graph (before linearize/render) holds exactly the UOps the renderer got."""
    checked = 0
    for version in ("0.12.0", "0.14.0"):
        programs = rows(releases_db, """
            SELECT p.id, p.linear_id, p.pass_list_id FROM programs p
            JOIN schedule_items si ON si.id = p.schedule_item_id JOIN v_kernels k ON k.kernel_id = si.kernel_id
            WHERE k.version = ? AND p.renderer = 'C' AND p.pass_list_id IS NOT NULL GROUP BY p.id""", version)
        assert programs, version
        for _pid, linear_id, pass_list_id in programs:
            (nodes_text,) = rows(releases_db, """SELECT g.nodes FROM pass_entries pe JOIN graphs g ON g.id = pe.graph_id
                WHERE pe.pass_list_id = ? AND pe.depth = 0 AND pe.name != 'linearize/render'
                ORDER BY pe.position DESC LIMIT 1""", pass_list_id)[0]
            graph = Counter((n[0], n[1], n[2]) for n in json.loads(nodes_text))
            linear_rows = rows(releases_db, "SELECT op, dtype, arg FROM linear_uops WHERE linear_id = ? ORDER BY idx",
                               linear_id)
            assert graph == Counter(linear_rows), version
            # the last pass is the PROGRAM itself, as a graph: its LINEAR node's sources are the linearized UOps
            ((program_text, node_count),) = rows(releases_db, """SELECT g.nodes, pe.node_count FROM pass_entries pe
                JOIN graphs g ON g.id = pe.graph_id WHERE pe.pass_list_id = ? AND pe.name = 'linearize/render'""",
                                                 pass_list_id)
            program = json.loads(program_text)
            assert program[-1][0] == "PROGRAM" and node_count == len(program) > len(linear_rows)
            (linear_node,) = [n for n in program if n[0] == "LINEAR"]
            assert [tuple(program[i][:3]) for i in linear_node[3]] == linear_rows, version
            checked += 1
    assert checked >= 28


def test_canonical_documents_follow_the_schema(releases_db: Path) -> None:
    docs = rows(releases_db, "SELECT d.stage, d.document, d.hash, d.node_count FROM canonical_docs d "
                             "WHERE d.document IS NOT NULL")
    assert len(docs) > 100
    for stage, text, digest, node_count in docs:
        document = json.loads(text)
        assert validate(document) == [], (stage, validate(document)[:3])
        # the case's whole kernel graph is stored as kernel_graph; its document says kernel_ast, as Svod's does
        assert document["stage"] == ("kernel_ast" if stage == "kernel_graph" else stage)
        assert document_hash(document) == digest
        assert len(document["nodes"]) == node_count
    # at 0.14.0 every stage of every kernel serialized; before Target (0.13) the kernel stages are typed "missing"
    by_version = dict(rows(releases_db, """
        SELECT k.version, group_concat(DISTINCT cl.stage) FROM canonical_links cl
        JOIN canonical_docs d ON d.id = cl.doc_id
        JOIN schedule_items si ON si.case_result_id = cl.case_result_id AND si.position = cl.position
        JOIN v_kernels k ON k.kernel_id = si.kernel_id WHERE d.document IS NOT NULL GROUP BY k.version"""))
    assert set(by_version["0.14.0"].split(",")) == set(KERNEL_STAGES)
    unsupported = rows(releases_db, """
        SELECT DISTINCT d.unsupported, d.reason FROM canonical_docs d JOIN canonical_links cl ON cl.doc_id = d.id
        JOIN run_cases rc ON rc.case_result_id = cl.case_result_id JOIN v_runs r ON r.run_id = rc.run_id
        WHERE r.version = '0.12.0' AND cl.position >= 0""")
    assert unsupported and all(kind == "NotAvailable" and "Target" in reason for kind, reason in unsupported)
    proc = tgstore("canonical", "matmul", "--stage", "expanded", "--commit", "0.14.0", "--db", releases_db)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert list(document) == ["schema_version", "stage", "roots", "nodes"] and document["stage"] == "expanded"
    assert validate(document) == []
    proc = tgstore("canonical", "matmul", "--stage", "expanded", "--commit", "0.12.0", "--db", releases_db)
    assert proc.returncode == 1 and "NotAvailable" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_same_case_twice_gives_the_same_documents(tinygrad_release, tmp_path: Path) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_matmul():\n"
                     "    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)\n")
    plan = ExtractionPlan(case_files=[cases], renderers=["C"])
    hashes = []
    for name in ("a", "b"):
        result = extract_bundle(tinygrad_release("0.14.0"), tmp_path / f"{name}.jsonl", plan)
        assert result.status == "ok", result.stderr
        (case,) = read_bundle(tmp_path / f"{name}.jsonl").cases
        documents = {**case["canonical"], **case["schedule"][0]["canonical"]}
        assert set(documents) == {"tensor", "rangeified", "kernel_graph", *KERNEL_STAGES}
        hashes.append({stage: document_hash(entry["document"]) for stage, entry in documents.items()})
    assert hashes[0] == hashes[1]


def test_an_unchanged_pass_output_adds_no_graph_rows(releases_db: Path, tmp_path: Path) -> None:
    """Graphs are content-addressed: every pass whose output is the same as some other pass's shares its row."""
    graphs, entries = rows(releases_db, "SELECT count(*), (SELECT count(*) FROM pass_entries "
                                        "WHERE graph_id IS NOT NULL) FROM graphs")[0]
    distinct = rows(releases_db, "SELECT count(DISTINCT graph_id) FROM pass_entries")[0][0]
    assert graphs == distinct and entries > 2 * graphs


def test_diff_stages_names_the_first_differing_pass(releases_db: Path) -> None:
    proc = tgstore("diff", "0.12.0", "0.14.0", "--case", "matmul", "--stages", "--what", "ast", "--json", "--db",
                   releases_db)
    assert proc.returncode == 0, proc.stderr
    stages = json.loads(proc.stdout)["stages"]
    by_renderer = {s["renderer"]: s for s in stages if s["scope"] == "kernel"}  # the scheduler passes: renderer None
    assert set(by_renderer) == {"C", "LLVM"}
    c = by_renderer["C"]
    # the first pass both releases ran whose outputs differ in one spelling across eras (the default): a shared pass
    assert c["case"] == "matmul" and c["position"] == 0 and c["kind"] == "changed" and c["ignore_spelling"]
    assert c["pass_a"] == c["pass_b"] and None not in (c["pass_position_a"], c["pass_position_b"])
    assert c["diff"].startswith("--- ") and "\n+" in c["diff"]  # a structural diff of the two graphs
    text = tgstore("diff", "0.12.0", "0.14.0", "--case", "matmul", "--stages", "--db", releases_db).stdout
    assert f"first differing pass {c['pass_a']!r} #{c['pass_position_a']} -> #{c['pass_position_b']}, changed" in text
    raw = json.loads(tgstore("diff", "0.12.0", "0.14.0", "--case", "matmul", "--stages", "--what", "ast", "--json",
                             "--spelling", "raw", "--db", releases_db).stdout)["stages"]
    (raw_c,) = [s for s in raw if s["scope"] == "kernel" and s["renderer"] == "C"]
    # as stored, the first shared pass whose graph differs comes no later
    assert raw_c["kind"] == "changed" and raw_c["pass_position_b"] <= c["pass_position_b"]


def test_diff_stages_aligns_passes_by_name_and_names_added_and_removed(releases_db: Path) -> None:
    """0.12.0 -> 0.14.0 changed tinygrad's pass list: the alignment pairs passes by name and occurrence, and the
    passes it calls added/removed are exactly the difference of the two lists' name counts."""
    proc = tgstore("diff", "0.12.0", "0.14.0", "--case", "add", "--stages", "--what", "ast", "--json", "--db",
                   releases_db)
    assert proc.returncode == 0, proc.stderr
    (c,) = [s for s in json.loads(proc.stdout)["stages"] if s["renderer"] == "C"]

    def names(version: str) -> Counter:
        out = tgstore("stages", "add", "--commit", version, "--renderer", "C", "--jsonl", "--db", releases_db)
        return Counter(p["name"] for p in json.loads(out.stdout.splitlines()[0])["passes"])

    old, new = names("0.12.0"), names("0.14.0")
    assert old != new and (c["added"] or c["removed"])
    assert Counter(c["added"]) == new - old and Counter(c["removed"]) == old - new
    assert c["kind"] in ("added", "removed", "changed")
    if c["kind"] == "changed":
        assert c["pass_a"] == c["pass_b"] and c["graph_a"] != c["graph_b"]
    rows = [json.loads(line) for line in tgstore("query", "passes_changed", "-p", "a=0.12.0", "-p", "b=0.14.0", "-p",
                                                 "case_name=add", "--jsonl", "--db", releases_db).stdout.splitlines()]
    (row,) = [r for r in rows if r["renderer"] == "C"]
    assert Counter((row["added"] or "").split(", ")) - Counter([""]) == new - old
    assert Counter((row["removed"] or "").split(", ")) - Counter([""]) == old - new


def test_pass_queries(releases_db: Path) -> None:
    def query(name: str, *params: str) -> list[dict]:
        proc = tgstore("query", name, *(x for p in params for x in ("-p", p)), "--jsonl", "--db", releases_db)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()]

    changed = query("passes_changed", "a=0.12.0", "b=0.14.0", "case_name=softmax")
    assert {(r["case"], r["renderer"]) for r in changed} == {("softmax", "C"), ("softmax", "LLVM")}
    assert all(r["pass_position"] is not None for r in changed)
    assert query("passes_changed", "a=0.14.0", "b=0.14.0") == []
    history = query("pass_history", "case_name=matmul", "renderer=C", "kernel=0")
    assert {r["version"] for r in history} == {"0.12.0", "0.14.0"}
    assert all(r["pass_name"] for r in history)
    first = query("op_first_pass", "case_name=matmul", "op=STACK", "commit=0.14.0")
    assert {(r["renderer"], r["pass_name"]) for r in first} == {("C", "expander"), ("LLVM", "expander")}
    assert query("op_first_pass", "case_name=matmul", "op=STACK", "commit=nope")[0]["kernel_name"].startswith(
        "no stored commit matches")


@pytest.mark.parametrize("stage", ["optimized", "linearized"])
def test_canonical_needs_a_kernel_when_the_case_has_several(releases_db: Path, stage: str) -> None:
    proc = tgstore("canonical", "softmax", "--stage", stage, "--commit", "0.14.0", "--db", releases_db)
    assert proc.returncode == 1 and "--kernel" in proc.stderr
    proc = tgstore("canonical", "softmax", "--stage", stage, "--kernel", "2", "--commit", "0.14.0", "--db",
                   releases_db)
    assert proc.returncode == 0 and json.loads(proc.stdout)["stage"] == stage


# The reference: tinygrad 0.14.0's own VIZ trace (TRACK_MATCH_STATS=2), in a fresh
# process that schedules matmul and lowers its kernels for the CPU's renderer, as the child does for `--renderers C`.
TINYGRADS_OWN_TRACE = """
import json, os
os.environ.update({"TRACK_MATCH_STATS": "2", "PRINT_MATCH_STATS": "0", "DEV": "CPU", "CACHELEVEL": "0", "SCACHE": "0"})
from tinygrad import Device, Tensor
from tinygrad.codegen import do_to_program
from tinygrad.uop import ops
linear = (Tensor.empty(16, 16) @ Tensor.empty(16, 16)).schedule_linear()
for call in linear.src:
    do_to_program(call.src[0], Device["CPU"].renderer)
def step(m):
    return [ops.uop_fields[m[0]][0].name, ops.uop_fields[m[1]][0].name, os.path.basename(m[2][0]), m[2][1]]
passes = [[c.name, [step(m) for m in c.matches]] for group in ops.tracked_ctxs for c in group]
print(json.dumps({"passes": passes}))
os._exit(0)
"""


def test_rewrite_steps_equal_tinygrads_own_trace(tinygrad_release, tmp_path: Path) -> None:
    """The child records steps with its own counting rewrite, not tinygrad's costly trace: every pass's steps (the
    rule, the op before and after, in order; here all 264, uncapped) must equal what tinygrad's own trace holds."""
    root = tinygrad_release("0.14.0")
    ref = subprocess.run([sys.executable, "-c", TINYGRADS_OWN_TRACE], capture_output=True, text=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert ref.returncode == 0, ref.stderr
    reference = json.loads(ref.stdout)
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_matmul():\n"
                     "    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)\n")
    out = tmp_path / "b.jsonl"
    plan = ExtractionPlan(case_files=[cases], renderers=["C"], stages="C", rewrites=1000)
    assert extract_bundle(root, out, plan).status == "ok"
    bundle = read_bundle(out)
    (case,) = bundle.cases

    def steps(pass_list: list[dict]) -> list[list]:
        return [[p["name"], [[s.before["op"], s.after["op"], s.file.rsplit("/", 1)[-1], s.line]
                             for s in parse_steps(p["rewrites"])]] for p in pass_list]

    ours = steps(case["schedule_passes"])
    for item in case["schedule"]:
        for program in item["programs"]:
            ours += steps(program["passes"])
    # tinygrad's trace also has a context per unnamed graph_rewrite and per traced helper: not passes
    theirs = [p for p in reference["passes"] if p[0] not in ("graph_rewrite", "get_kernel_graph", "run_rangeify")]
    assert len(ours) == 60 and sum(len(s) for _, s in ours) == 264
    assert ours == theirs


def test_rewrite_steps_are_recorded_when_asked(tinygrad_release, tmp_path: Path) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\ndef case_matmul():\n"
                     "    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)\n")
    db = tmp_path / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases, "--renderers",
                   "C", "--rewrites", "3")
    assert proc.returncode == 0, proc.stderr
    traces = [json.loads(t) for (t,) in rows(db, "SELECT b.text FROM pass_entries pe JOIN blobs b "
                                                 "ON b.id = pe.rewrites_blob_id WHERE pe.name = 'expander'")]
    assert traces and all(t["limit"] == 3 and len(t["steps"]) == min(3, t["total"]) for t in traces)
    step = parse_steps(traces[0])[0]
    assert step.file.startswith("tinygrad/") and step.line > 0 and step.upat
    # the node table form: each drawing ends with the rewritten node
    assert step.before["graph"][-1][0] == step.before["op"] and len(step.after["hash"]) == 64


def test_diff_stages_shows_the_scheduler_passes_with_each_header_on_its_own_line(releases_db: Path) -> None:
    """The scheduler passes (what port-queue reports at schedule scope) are diffed like a kernel's: one section per
    case, first, whose added/removed passes are exactly the difference of the two `stages --schedule` lists; every
    section prints its title, the two sides' labels and the hunks on lines of their own, a side that lacks the
    pass named by the pass whose graph stands in for it."""
    proc = tgstore("diff", "0.12.0", "0.14.0", "--case", "add", "--stages", "--what", "ast", "--json", "--db",
                   releases_db)
    assert proc.returncode == 0, proc.stderr
    stages = json.loads(proc.stdout)["stages"]
    (schedule,) = [s for s in stages if s["scope"] == "schedule"]
    assert stages[0] is schedule and (schedule["position"], schedule["renderer"]) == (-1, None)

    def names(version: str) -> Counter:
        out = tgstore("stages", "add", "--commit", version, "--schedule", "--jsonl", "--db", releases_db)
        return Counter(p["name"] for p in json.loads(out.stdout.splitlines()[0])["passes"])

    old, new = names("0.12.0"), names("0.14.0")
    assert Counter(schedule["added"]) == new - old and Counter(schedule["removed"]) == old - new
    assert schedule["title"].startswith(("add schedule: first differing pass ",
                                         "add schedule: no shared pass differs; first one-sided pass "))
    lines = tgstore("diff", "0.12.0", "0.14.0", "--case", "add", "--stages", "--what", "ast", "--db",
                    releases_db).stdout.splitlines()
    for section in stages:
        at = lines.index(f"== {section['title']}")
        minus, plus, hunk = lines[at + 1:at + 4]
        where = "add schedule" if section["scope"] == "schedule" else f"add[{section['position']}] " \
                                                                       f"{section['renderer']}"
        for line, prefix, name, position in ((minus, "--- ", section["pass_a"], section["pass_position_a"]),
                                             (plus, "+++ ", section["pass_b"], section["pass_position_b"])):
            assert line.startswith(prefix) and f" {where} " in line, line
            if name is None:
                assert "(no such pass; the graph after #" in line and not line.endswith("None"), line
            else:
                assert line.endswith(f" {where} #{position} {name}"), line
        assert hunk.startswith("@@ -") and hunk.endswith(" @@"), hunk
