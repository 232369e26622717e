"""Pass lists aligned by name and occurrence (tgstore.compare.pass_align)."""

from __future__ import annotations

from tgstore.compare.pass_align import added, align, counts, first_difference, first_one_sided, removed
from tgstore.compare.stage_diff import PassRow


def passes(*spec: tuple[str, str]) -> list[PassRow]:
    return [PassRow(i, name, 0, 1, True, graph) for i, (name, graph) in enumerate(spec)]


def test_an_inserted_pass_is_added_and_later_passes_keep_their_partners() -> None:
    a = passes(("expander", "g1"), ("devectorize", "g2"), ("final", "g3"))
    b = passes(("expander", "g1"), ("reshape", "gx"), ("devectorize", "g2"), ("final", "g3"))
    aligned = align(a, b)
    assert [p.kind for p in aligned] == ["same", "added", "same", "same"]
    assert added(aligned) == ["reshape"] and removed(aligned) == []
    # an added pass is listed apart, never the first difference: every shared pass gave the same output
    assert first_difference(aligned) is None
    one_sided = first_one_sided(aligned)
    assert one_sided is not None and one_sided.kind == "added" and one_sided.b.position == 1 and one_sided.a is None


def test_the_first_difference_is_the_first_shared_pass_whose_output_differs() -> None:
    a = passes(("early", "g1"), ("expander", "g2"), ("final", "g3"))
    b = passes(("multi", "gm"), ("early", "g1x"), ("expander", "g2x"), ("final", "g3x"))
    aligned = align(a, b)
    assert [p.kind for p in aligned] == ["added", "changed", "changed", "changed"]
    first = first_difference(aligned)
    assert first is not None and first.name == "early" and (first.a.position, first.b.position) == (0, 1)


def test_outputs_equal_in_one_spelling_are_spelling_not_a_difference() -> None:
    a = passes(("early", "g1"), ("expander", "g2"), ("final", "g3"))
    b = passes(("multi", "gm"), ("early", "g1x"), ("expander", "g2x"), ("final", "g3x"))
    spelled = {"g1": "s1", "g1x": "s1", "g2": "s2", "g2x": "s2", "g3": "s3", "g3x": "other", "gm": "sm"}
    aligned = align(a, b, spelled.get)
    assert [p.kind for p in aligned] == ["added", "spelling", "spelling", "changed"]
    first = first_difference(aligned)
    assert first is not None and first.name == "final"
    assert counts(aligned) == {"same": 0, "spelling": 2, "changed": 1, "added": 1, "removed": 0}
    assert [p.kind for p in align(a, b)] == ["added", "changed", "changed", "changed"]  # raw: no spelling


def test_repeated_names_align_by_occurrence() -> None:
    a = passes(("simplify", "g1"), ("expander", "g2"), ("simplify", "g3"))
    b = passes(("simplify", "g1"), ("simplify", "g4"))
    aligned = align(a, b)
    assert removed(aligned) == ["expander"] and added(aligned) == []
    changed = [p for p in aligned if p.kind == "changed"]
    assert [(p.a.position, p.b.position) for p in changed] == [(2, 1)]
    assert first_difference(align(a, a)) is None
