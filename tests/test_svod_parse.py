"""Tests for the Svod log parser (tgstore.svod.parse) over realistic fixtures in tests/fixtures/svod/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tgstore.svod.parse import SvodLog, Tree, parse_svod_log, parse_tree, strip_ansi

FIXTURES = Path(__file__).parent / "fixtures" / "svod"

STAGES = [
    "00-initial", "01-early_movement_ops", "02-load_collapse", "03-split_ranges", "04-initial_symbolic",
    "05-simplify_ranges", "06-apply_opts", "07-split_store", "08-post_opt_sym", "09-pre_expander", "10-expander",
    "11-add_local_buffers", "12-remove_reduce", "13-pm_add_loads", "14-add_gpu_dims", "15-devectorize",
    "16-lower_index_dtype", "17-post_index_symbolic", "18-pm_decomp", "19-pm_transcendental", "20-final_rewrite",
]  # fmt: skip

EXAMPLE_TREE = """\
[12] SINK : void shape=[]
└── [11] STORE : void shape=[16]
    ├── [3] INDEX : ptr<f32> shape=[16]
    │   ├── [1] DEFINE_GLOBAL(0) : ptr<f32> shape=[]
    │   └── [2] RANGE(16) : index shape=[16]
    └── [10] ADD : f32 shape=[16]
        ├── [6] LOAD : f32 shape=[16]
        │   └── [5] INDEX : ptr<f32> shape=[16]
        │       ├── [4] DEFINE_GLOBAL(1) : ptr<f32> shape=[]
        │       └── [2] → (see above)
        └── [9] LOAD : f32 shape=[16]
"""


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def load(name: str) -> SvodLog:
    return parse_svod_log(read(name))


def renumber(text: str, offset: int) -> str:
    """Simulate another run: same structure, different allocation ids."""
    return re.sub(r"(?m)^([ │├└─]*)\[(\d+)\]", lambda m: f"{m.group(1)}[{int(m.group(2)) * 3 + offset}]", text)


# ---------------------------------------------------------------------------------------------------------- trees


def test_parse_tree_example_depth_parent_fields():
    tree = parse_tree(EXAMPLE_TREE)
    assert [n.op for n in tree.nodes] == [
        "SINK", "STORE", "INDEX", "DEFINE_GLOBAL", "RANGE", "ADD", "LOAD", "INDEX", "DEFINE_GLOBAL", "RANGE", "LOAD",
    ]  # fmt: skip
    assert [n.depth for n in tree.nodes] == [0, 1, 2, 3, 3, 2, 3, 4, 5, 5, 3]
    assert [n.parent for n in tree.nodes] == [None, 0, 1, 2, 2, 1, 5, 6, 7, 7, 5]
    assert [n.position for n in tree.nodes] == list(range(11))
    assert [n.log_id for n in tree.nodes] == [12, 11, 3, 1, 2, 10, 6, 5, 4, 2, 9]
    dg = tree.nodes[3]
    assert (dg.args, dg.dtype, dg.shape) == ("0", "ptr<f32>", "[]")
    rng = tree.nodes[4]
    assert (rng.op, rng.args, rng.dtype, rng.shape, rng.shared_ref) == ("RANGE", "16", "index", "[16]", False)
    assert tree.nodes[0].args is None and tree.nodes[0].dtype == "void"
    assert tree.root is tree.nodes[0]


def test_shared_ref_resolves_to_referenced_node():
    tree = parse_tree(EXAMPLE_TREE)
    ref = tree.nodes[9]
    assert ref.shared_ref and ref.log_id == 2 and ref.ref_position == 4
    assert (ref.op, ref.args, ref.dtype) == ("RANGE", "16", "index")  # copied from the referenced node
    assert ref.parent == 7 and ref.depth == 5
    assert sum(n.shared_ref for n in tree.nodes) == 1
    # 11 lines, but [2] is printed twice -> 10 distinct nodes
    assert len(tree.nodes) == 11 and tree.node_count() == 10
    assert "→ RANGE(16) #4" in tree.structure_text().splitlines()[9]


def test_structure_text_ignores_ids():
    a = parse_tree(EXAMPLE_TREE)
    b = parse_tree(renumber(EXAMPLE_TREE, 1000))
    assert [n.log_id for n in a.nodes] != [n.log_id for n in b.nodes]
    assert a.structure_text() == b.structure_text()
    assert not re.search(r"(?m)^\s*\[\d+\]", a.structure_text())
    lines = a.structure_text().splitlines()
    assert lines[0] == "SINK : void shape=[]"
    assert lines[3] == "            DEFINE_GLOBAL(0) : ptr<f32> shape=[]"
    # different content -> different text
    c = parse_tree(EXAMPLE_TREE.replace("ADD : f32", "MUL : f32"))
    assert c.structure_text() != a.structure_text()


def test_structure_text_distinguishes_which_node_is_shared():
    text = "[5] ADD : f32 shape=[]\n├── [1] LOAD : f32 shape=[]\n├── [2] LOAD : f32 shape=[]\n└── [{}] → (see above)\n"
    first, second = parse_tree(text.format(1)), parse_tree(text.format(2))
    assert first.structure_text() != second.structure_text()
    assert first.node_count() == second.node_count() == 3


def test_plain_space_indentation_equals_box_drawing():
    plain = re.sub(r"[├└]── |│   ", "    ", EXAMPLE_TREE)
    assert "│" not in plain and "└" not in plain
    assert parse_tree(plain).structure_text() == parse_tree(EXAMPLE_TREE).structure_text()
    assert [n.parent for n in parse_tree(plain).nodes] == [n.parent for n in parse_tree(EXAMPLE_TREE).nodes]


def test_parse_tree_tolerates_crlf_ansi_blank_lines_and_nested_args():
    text = "\r\n\x1b[2m[7] SINK : void shape=[]\x1b[0m\r\n\r\n└── [6] REDUCE(ADD, (0, 1)) : f32 shape=[4, 4]\r\n"
    tree = parse_tree(text)
    assert [(n.op, n.args, n.shape, n.depth) for n in tree.nodes] == [
        ("SINK", None, "[]", 0),
        ("REDUCE", "ADD, (0, 1)", "[4, 4]", 1),
    ]


def test_parse_tree_optional_dtype_and_shape():
    tree = parse_tree("[3] SINK\n└── [2] CONST(1.0) : f32\n")
    assert (tree.nodes[0].dtype, tree.nodes[0].shape) == (None, None)
    assert (tree.nodes[1].args, tree.nodes[1].dtype, tree.nodes[1].shape) == ("1.0", "f32", None)
    assert tree.structure_text() == "SINK\n    CONST(1.0) : f32"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("hello world", "line 1"),
        ("[1] SINK : void shape=[]\n└── [2] : f32", "line 2"),
        ("[1] SINK : void\n        └── [2] ADD : f32", "depth 3 from depth 0"),
        ("[1] SINK : void\n└── [2] RANGE(16 : index", "unbalanced"),
        ("[1] SINK junk : void", "unexpected text"),
    ],
)
def test_parse_tree_errors(text, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        parse_tree(text)


def test_dangling_shared_ref_is_kept():
    tree = parse_tree("[9] SINK : void shape=[]\n└── [4] → (see above)\n")
    ref = tree.nodes[1]
    assert ref.shared_ref and ref.ref_position is None and ref.op == "?"
    assert tree.structure_text() == "SINK : void shape=[]\n    → ?0"
    assert tree.node_count() == 2


# ---------------------------------------------------------------------------------------------------------- add.log


def test_add_log_counts():
    log = load("add.log")
    assert log.problems == []
    assert len(log.events) == 18
    assert len(log.kernels) == 1
    assert [d.label for d in log.stage_dumps] == ["08-post_opt_sym", "13-pm_add_loads", "20-final_rewrite"]
    assert [p.label for p in log.per_stage] == STAGES
    assert log.per_stage[0].line_no == 12 and log.per_stage[13].node_count == 17
    assert log.pattern_matches == {"ADD": 3, "MUL": 1, "INDEX": 3, "RANGE": 1, "CAST": 1, "STORE": 1}
    assert sum(e.message == "pattern matched" for e in log.events) == 10
    assert all(e.level == "TRACE" and e.target == "svod_ir::pattern::simplified"
               for e in log.events if e.message == "pattern matched")  # fmt: skip


def test_add_log_raw_lines_keep_cargo_output():
    log = load("add.log")
    raw = [strip_ansi(text).strip() for _, text in log.raw_lines]
    assert raw[0].startswith("Compiling svod-codegen")
    assert "running 1 test" in raw
    assert "test tests::elementwise::test_add_elementwise ... ok" in raw
    assert raw[-1].startswith("test result: ok. 1 passed")
    assert "\x1b[" in log.raw_lines[0][1]  # kept verbatim
    assert [n for n, _ in log.raw_lines] == [1, 2, 3, 5, 112, 114]


def test_add_log_stage_events():
    log = load("add.log")
    stages = [e for e in log.events if e.target == "svod_schedule::rangeify::transforms"]
    assert [e.message for e in stages] == [
        "Stage 0: range assignment + apply rangeify complete",
        "Stage 1: buffer folding + dead axis removal complete",
        "Stage 2: bufferize to store complete",
    ]
    first = stages[0]
    assert first.line_no == 6 and first.level == "DEBUG" and first.timestamp == "2026-03-14T10:21:03.000137Z"
    assert first.elapsed_ms == pytest.approx(0.412) and first.node_count == 10
    assert first.tree is not None and first.tree.node_count() == first.node_count
    assert set(first.fields) == {"message", "uop.tree", "elapsed_ms", "node_count"}
    assert first.kernel_index is None  # before the first kernel
    # same graph printed by three stages with different ids: structure equal, ids not
    trees = [e.tree for e in stages]
    assert len({t.structure_text() for t in trees}) == 1
    assert len({tuple(n.log_id for n in t.nodes) for t in trees}) == 3


def test_add_log_kernel():
    log = load("add.log")
    (k,) = log.kernels
    assert k.index == 0 and k.line_no == 9
    assert k.initial is not None and k.pre is not None and k.optimized is not None
    assert k.initial.nodes[0].op == "SINK" and k.initial.nodes[1].op == "END"
    assert k.initial.structure_text() == k.pre.structure_text()
    assert [n.log_id for n in k.initial.nodes] != [n.log_id for n in k.pre.nodes]
    assert k.optimized.structure_text() != k.initial.structure_text()
    assert "RANGE(4, 1, upcast) : index shape=[4]" in k.optimized.structure_text()
    assert (k.initial.node_count(), k.optimized.node_count()) == (13, 17)
    assert k.generated_code is not None and k.generated_code.startswith("void E_4_4(float* restrict data0")
    assert "      *(data0+alu0) = (val0+val1);\n" in k.generated_code
    assert len(k.per_stage) == 21 and len(k.stage_dumps) == 3
    assert all(e.kernel_index == 0 for e in log.events if e.line_no >= k.line_no)
    kernel_event = next(e for e in log.events if e.line_no == k.line_no)
    assert kernel_event.tree is k.initial and set(kernel_event.trees) == {"ast.initial"}
    assert kernel_event.fields["kernel"] == "E_4_4"


def test_add_log_dumps_match_per_stage_counts():
    log = load("add.log")
    counts = {p.label: p.node_count for p in log.per_stage}
    for dump in log.stage_dumps:
        assert dump.end_line_no is not None and dump.end_line_no > dump.line_no
        assert dump.tree.node_count() == counts[dump.label]
        assert dump.tree.nodes[0].op == "SINK" and dump.kernel_index == 0
    post_opt, add_loads, final = log.stage_dumps
    assert "LOAD" not in {n.op for n in post_opt.tree.nodes}
    assert "LOAD" in {n.op for n in add_loads.tree.nodes}
    assert add_loads.tree.structure_text() == log.kernels[0].optimized.structure_text()
    assert {n.dtype for n in final.tree.nodes if n.op == "RANGE"} == {"i32"}
    assert (post_opt.line_no, post_opt.end_line_no) == (25, 45)


def test_crlf_and_ansi_tolerated():
    text = read("add.log")
    crlf = parse_svod_log(text.replace("\n", "\r\n"))
    lf = parse_svod_log(text)
    assert crlf.problems == []
    assert len(crlf.events) == len(lf.events) and len(crlf.per_stage) == 21 and len(crlf.stage_dumps) == 3
    assert [d.tree.structure_text() for d in crlf.stage_dumps] == [d.tree.structure_text() for d in lf.stage_dumps]
    assert crlf.raw_lines == lf.raw_lines
    colored = parse_svod_log("\x1b[33m[per-stage] 00-initial : node_count=7\x1b[0m\n")
    assert [(p.label, p.node_count) for p in colored.per_stage] == [("00-initial", 7)]


# ---------------------------------------------------------------------------------------------------------- matmul.log


def test_matmul_two_kernels():
    log = load("matmul.log")
    assert log.problems == []
    assert len(log.events) == 28
    k0, k1 = log.kernels
    assert (k0.index, k1.index) == (0, 1)
    assert k0.generated_code.startswith("void r_4_4_4(") and k1.generated_code.startswith("void r_4_4_4n1(")
    # same computation, different allocation ids
    assert k0.initial.structure_text() == k1.initial.structure_text()
    assert [n.log_id for n in k0.initial.nodes] != [n.log_id for n in k1.initial.nodes]
    assert [len(k.per_stage) for k in (k0, k1)] == [21, 21]
    assert [p.label for p in k1.per_stage] == STAGES
    assert [d.label for d in k0.stage_dumps] == ["08-post_opt_sym", "12-remove_reduce"]
    assert [d.label for d in k1.stage_dumps] == ["12-remove_reduce"]
    assert k0.stage_dumps[1].tree.structure_text() == k1.stage_dumps[0].tree.structure_text()
    assert {p.kernel_index for p in log.per_stage} == {0, 1}
    assert log.pattern_matches == {"MUL": 2, "ADD": 4, "REDUCE": 2, "INDEX": 4, "CAST": 2}
    # the second kernel's rangeify stage events come after kernel 0 started
    assert [e.kernel_index for e in log.events if e.message and e.message.startswith("Stage")] == [None, None, 0, 0]


def test_matmul_reduce_tree_shared_nodes():
    k0 = load("matmul.log").kernels[0]
    tree: Tree = k0.initial
    red = next(n for n in tree.nodes if n.op == "REDUCE")
    assert (red.args, red.dtype, red.shape) == ("ADD", "f32", "[4, 4]")
    shared = [n for n in tree.nodes if n.shared_ref]
    assert len(shared) == 7
    for ref in shared:
        target = tree.nodes[ref.ref_position]
        assert target.log_id == ref.log_id and not target.shared_ref and target.position < ref.position
        assert (ref.op, ref.args) == (target.op, target.args)
    assert {n.args for n in shared if n.op == "RANGE"} == {"4, 0", "4, 1", "4, 2, reduce"}
    assert tree.node_count() == len(tree.nodes) - len(shared) == 22
    # children of the reduce: MUL and the shared reduce RANGE
    children = [n for n in tree.nodes if n.parent == red.position]
    assert [(c.op, c.shared_ref) for c in children] == [("MUL", False), ("RANGE", True)]


# ---------------------------------------------------------------------------------------------------------- corrupt.log


def test_corrupt_log_problems_with_line_numbers():
    text = read("corrupt.log")
    lines = text.split("\n")
    log = parse_svod_log(text)
    assert [p.line_no for p in log.problems] == [7, 8, 11, 46, 48]
    msgs = [p.message for p in log.problems]
    assert msgs[0].startswith("malformed JSON event (Unterminated string")
    assert msgs[1].startswith("unparsable tree in field 'uop.tree': tree line 5")
    assert msgs[2].startswith("malformed JSON event (Extra data")
    assert msgs[3].startswith("malformed [per-stage] line")
    assert msgs[4].startswith("unterminated [dump-stage] block '13-pm_add_loads'")
    for p in log.problems:
        if p.line_no != 8:
            assert p.text == lines[p.line_no - 1]
    assert "<truncated 1.2KiB>" in log.problems[1].text


def test_corrupt_log_nothing_else_lost():
    log = load("corrupt.log")
    raw = dict(log.raw_lines)
    # malformed lines are kept verbatim in raw_lines
    assert raw[7].startswith('{"timestamp":"2026-03-14T10:21:11.000274Z"') and raw[7].endswith('"uop.tree":"[32]')
    assert raw[11].endswith("has overflowed its stack")
    assert raw[46] == "[per-stage] 11-add_local_buffers : node_cou"
    # the event with the broken tree is kept, tree None
    broken = next(e for e in log.events if e.line_no == 8)
    assert broken.tree is None and broken.trees == {} and broken.message == "Stage 2: bufferize to store complete"
    assert broken.node_count == 10 and "uop.tree" in broken.fields
    # everything around still parsed
    assert [e.line_no for e in log.events] == [6, 8, 9, 10, 12, 21]
    assert len(log.kernels) == 1 and log.kernels[0].optimized is not None and log.kernels[0].pre is None
    assert log.kernels[0].generated_code is None
    assert log.pattern_matches == {"ADD": 1, "INDEX": 1}  # the glued MUL event is reported, not counted
    assert [p.label for p in log.per_stage] == STAGES[:11] + [STAGES[12]]
    # unterminated dump at EOF: tree kept
    dump = log.stage_dumps[-1]
    assert (dump.label, dump.line_no, dump.end_line_no) == ("13-pm_add_loads", 48, None)
    assert len(dump.tree.nodes) == 9 and dump.tree.nodes[0].op == "SINK" and dump.tree.nodes[8].op == "CONST"
    assert log.stage_dumps[0].end_line_no == 42 and log.stage_dumps[0].tree.node_count() == 15


@pytest.mark.parametrize("name", ["add.log", "matmul.log", "corrupt.log"])
def test_every_line_accounted_for(name):
    text = read(name)
    log = parse_svod_log(text)
    covered: list[int] = [e.line_no for e in log.events]
    covered += [n for n, _ in log.raw_lines]
    covered += [p.line_no for p in log.per_stage]
    n_lines = len(text.split("\n"))
    for d in log.stage_dumps:
        covered += range(d.line_no, (d.end_line_no or n_lines) + 1)
    non_blank = [i for i, line in enumerate(text.split("\n"), 1) if line.strip()]
    assert sorted(covered) == non_blank  # each non-blank line exactly once


# ---------------------------------------------------------------------------------------------------------- edge cases


def test_dump_marker_edge_cases():
    text = "\n".join(
        [
            "[dump-stage] 01-a :",
            "[1] SINK : void shape=[]",
            "[dump-stage] 02-b :",  # line 3: 01-a never ended
            "[2] SINK : void shape=[]",
            "[dump-stage] 02-b : end",
            "[dump-stage] 03-c : end",  # line 6: end without start
            "[dump-stage] 04-d :",
            "[3] SINK : void shape=[]",
            "└── [4] : f32",  # line 9: bad tree line inside a dump
            "[dump-stage] 05-e : end",  # line 10: label mismatch
        ]
    )
    log = parse_svod_log(text)
    assert [(d.label, d.line_no, d.end_line_no, len(d.tree.nodes)) for d in log.stage_dumps] == [
        ("01-a", 1, None, 1),
        ("02-b", 3, 5, 1),
        ("04-d", 7, 10, 1),
    ]
    assert [p.line_no for p in log.problems] == [1, 6, 9, 10]
    assert "new dump '02-b' started at line 3" in log.problems[0].message
    assert log.raw_lines == [(6, "[dump-stage] 03-c : end")]


def test_kernel_data_before_initial_and_flattened_events():
    text = "\n".join(
        [
            '{"level":"DEBUG","target":"svod_codegen","message":"out","generated_code":"int x;","elapsed_ms":"3.5"}',
            '{"level":"DEBUG","fields":{"message":"k","ast.initial":"[1] SINK : void"},"target":"t","span":{}}',
            '{"level":"DEBUG","fields":{"message":"k2","ast.optimized":"not a tree"},"target":"t"}',
        ]
    )
    log = parse_svod_log(text)
    first, second, third = log.events
    assert first.message == "out" and first.elapsed_ms == 3.5 and first.fields["generated_code"] == "int x;"
    assert second.extra == {"span": {}} and second.tree is not None
    assert [k.initial is None for k in log.kernels] == [True, False]
    assert log.kernels[0].generated_code == "int x;" and log.kernels[1].optimized is None
    assert third.kernel_index == 1 and third.tree is None
    assert [p.line_no for p in log.problems] == [1, 3]
    assert "before any ast.initial" in log.problems[0].message
