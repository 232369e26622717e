"""A stored graph printed as tinygrad prints a UOp (tgstore/compare/uop_text.py), and a rewrite step's diff as
tinygrad's VIZ shows it."""

from __future__ import annotations

from tgstore.compare.uop_text import uop_diff, uop_text


def test_a_graph_prints_as_tinygrads_repr_with_shared_nodes_named() -> None:
    nodes = [["CONST", "dtypes.int", "1", []], ["ADD", "dtypes.int", "None", [0, 0]],
             ["MUL", "dtypes.int", "None", [1, 0]]]
    assert uop_text(nodes).splitlines() == [
        "UOp(Ops.MUL, dtypes.int, arg=None, src=(",
        "  UOp(Ops.ADD, dtypes.int, arg=None, src=(",
        "    x0:=UOp(Ops.CONST, dtypes.int, arg=1, src=()),",
        "    x0,)),",
        "  x0,))"]


def test_sources_cut_off_by_the_neighbourhood_and_any_arg_text() -> None:
    # an INDEX drawn without its sources had them cut off; a CUSTOM's arg may hold a format string
    nodes = [["INDEX", "dtypes.float", "None", []], ["CUSTOM", "dtypes.int", '"%d + {0}"', [0]]]
    assert uop_text(nodes).splitlines() == ['UOp(Ops.CUSTOM, dtypes.int, arg="%d + {0}", src=(',
                                            "  UOp(Ops.INDEX, dtypes.float, arg=None, src=(...)),))"]


def test_a_step_is_the_unified_diff_of_before_and_after() -> None:
    before = [["CONST", "dtypes.float", "2.0", []], ["MUL", "dtypes.float", "None", [0, 0]]]
    after = [["CONST", "dtypes.float", "2.0", []], ["ADD", "dtypes.float", "None", [0, 0]]]
    lines = uop_diff(before, after)
    assert lines[:2] == ["--- before", "+++ after"] and "-UOp(Ops.MUL, dtypes.float, arg=None, src=(" in lines
    assert "+UOp(Ops.ADD, dtypes.float, arg=None, src=(" in lines and uop_diff(before, before) == []
