"""Svod's tree-drawing characters (ir/src/uop/tree.rs: `│   `, `├── `, `└── `, `[id] → (see above)`; nextest's
`─` rules) and the one-byte stand-ins a log is read with.

One of these characters makes CPython keep a whole string at two bytes a character: a 100 MB trace, 7 M of whose 85 M
characters draw trees, decodes to 171 MB. Reading it with each drawing character replaced by an unused C1 control
(U+0080-U+0084, one byte) keeps it at 85 MB (bench/bench_svod_log.py); ingest-svod reads a file so from 32 MB
(log_paths.NARROW_FROM_BYTES), and the small files beside it. A file holding any of those controls itself is read as
it is (and then every file of the call). The readers match either spelling (the classes below); what they read is
widened back (readers/widen.py) before anything is hashed, stored or shown, so a narrowed reading stores what the
plain one does.
"""

from __future__ import annotations

WIDE = "│─└├→"
NARROW = "\x80\x81\x82\x83\x84"
_PAIRS = tuple(zip(NARROW, WIDE, strict=True))

# regular-expression classes matching a drawing character in either spelling
BAR, RULE, LAST, BRANCH, ARROW = (f"[{w}{n}]" for w, n in zip(WIDE, NARROW, strict=True))
INDENT = f"(?:{BAR}   |    |{BRANCH}{RULE}{RULE} |{LAST}{RULE}{RULE} )"  # one level of a tree line's indentation
TREE_STARTS = "│├└" + "\x80\x83\x82"  # a tree line's first character, below its root (or a space)
CHILD_MARKS = "├└" + "\x83\x82"  # the character four columns before a child line's body
CHILD_ENDS = ("├── ", "└── ", "\x83\x81\x81 ", "\x82\x81\x81 ")
BACKREFS = ("→ (see above)", "\x84 (see above)", "-> (see above)")


def narrow(text: str) -> str | None:
    """`text` with each drawing character replaced by its stand-in; None when `text` holds a stand-in itself (it is
    then read as it is). str.replace keeps a string's storage: `text.encode("latin-1")` then makes it one byte a
    character, where every character fits."""
    if text.isascii():
        return text
    if any(stand_in in text for stand_in in NARROW):
        return None
    for stand_in, wide in _PAIRS:
        text = text.replace(wide, stand_in)
    return text


def widen(text: str) -> str:
    """`text` with the stand-ins put back (str.isascii is a flag: an ASCII string costs nothing)."""
    if text.isascii():
        return text
    for narrow, wide in _PAIRS:
        text = text.replace(narrow, wide)
    return text
