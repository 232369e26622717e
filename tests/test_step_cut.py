"""A rewrite step's drawing is capped (extract/child/step_log.py: NEIGHBOURHOOD_NODES); a node drawn with fewer
sources than it has carries its own source count, and the text and the drawing say where they are cut."""

from __future__ import annotations

from tgstore.compare.rewrite_steps import parse_steps
from tgstore.compare.uop_text import uop_text
from tgstore.web.layout import labels


def test_a_node_cut_by_the_cap_says_how_many_sources_are_not_drawn() -> None:
    # the pass's node table: three CONSTs and a STACK of 16 sources of which the child kept those three
    nodes = [["CONST", "dtypes.int", str(i), []] for i in range(3)] + [["STACK", "dtypes.int", "", [0, 1, 2], 16]]
    trace = {"nodes": nodes, "steps": [{"file": "tinygrad/x.py", "line": 1, "upat": "UPat()",
                                        "before": {"hash": "h", "graph": [0, 1, 2, 3]},
                                        "after": {"hash": "h2", "graph": [0, 3]}}]}
    (step,) = parse_steps(trace)
    assert step.before["graph"][-1] == ["STACK", "dtypes.int", "", [0, 1, 2], 16]
    assert step.after["graph"][-1] == ["STACK", "dtypes.int", "", [0], 16]  # this drawing holds one of them
    assert "# 13 of 16 sources not recorded" in uop_text(step.before["graph"])
    assert "# 15 of 16 sources not recorded" in uop_text(step.after["graph"])
    assert labels(step.after["graph"][-1])[0] == "STACK (+15 not drawn)"
    whole = [["CONST", "dtypes.int", "1", []], ["NEG", "dtypes.int", "", [0]]]  # nothing cut: nothing said
    assert "not recorded" not in uop_text(whole) and labels(whole[-1])[0] == "NEG"


def test_a_source_left_out_of_one_steps_drawing_is_marked_too() -> None:
    nodes = [["CONST", "dtypes.int", "1", []], ["CONST", "dtypes.int", "2", []], ["ADD", "dtypes.int", "", [0, 1]]]
    (step,) = parse_steps({"nodes": nodes, "steps": [{"before": {"hash": "h", "graph": [0, 2]}, "after": None}]})
    assert step.before["graph"][-1] == ["ADD", "dtypes.int", "", [0], 2]
    assert "# 1 of 2 sources not recorded" in uop_text(step.before["graph"])
