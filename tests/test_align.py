"""Pass lists aligned by name and occurrence (tgstore.compare.pass_align)."""

from __future__ import annotations

from tgstore.compare.pass_align import added, align, first_difference, removed
from tgstore.compare.stage_diff import PassRow


def passes(*spec: tuple[str, str]) -> list[PassRow]:
    return [PassRow(i, name, 0, 1, True, graph) for i, (name, graph) in enumerate(spec)]


def test_an_inserted_pass_is_added_and_later_passes_keep_their_partners() -> None:
    a = passes(("expander", "g1"), ("devectorize", "g2"), ("final", "g3"))
    b = passes(("expander", "g1"), ("reshape", "gx"), ("devectorize", "g2"), ("final", "g3"))
    aligned = align(a, b)
    assert [p.kind for p in aligned] == ["same", "added", "same", "same"]
    assert added(aligned) == ["reshape"] and removed(aligned) == []
    first = first_difference(aligned)
    assert first is not None and first.kind == "added" and first.b.position == 1 and first.a is None


def test_repeated_names_align_by_occurrence() -> None:
    a = passes(("simplify", "g1"), ("expander", "g2"), ("simplify", "g3"))
    b = passes(("simplify", "g1"), ("simplify", "g4"))
    aligned = align(a, b)
    assert removed(aligned) == ["expander"] and added(aligned) == []
    changed = [p for p in aligned if p.kind == "changed"]
    assert [(p.a.position, p.b.position) for p in changed] == [(2, 1)]
    assert first_difference(align(a, a)) is None
