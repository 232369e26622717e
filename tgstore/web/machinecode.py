"""Machine code made readable: tinygrad's X86 renderer "renders" a kernel to its machine code as one hex string; it
is shown as x86-64 assembly disassembled by capstone, one instruction a line (offset as a label, Intel syntax, the
bytes as a comment).

Weighed: llvm-objdump (a system package, a temporary object file per kernel, and raw bytes need `llvm-mc
--disassemble` instead) against capstone (a wheel on PyPI, in-process, any architecture by a table entry): capstone.
A renderer whose source is machine code is one line of MACHINE_CODE."""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

import capstone

# renderer -> (capstone architecture, mode), for renderers whose stored source is machine code as hex
MACHINE_CODE = {"X86": (capstone.CS_ARCH_X86, capstone.CS_MODE_64)}
ASSEMBLY_LANGUAGE = "x86asm"  # Pygments' NASM lexer reads capstone's Intel syntax (tgstore.web.highlight)
HEX = re.compile(r"^\s*(?:[0-9a-fA-F]{2})+\s*$")


@lru_cache(maxsize=256)
def disassemble(renderer: str, code_hex: str) -> str | None:
    """The machine code as assembly lines, or None when it is not hex or does not decode."""
    arch = MACHINE_CODE.get(renderer.upper())
    if arch is None or not HEX.match(code_hex):
        return None
    code = bytes.fromhex(code_hex.strip())
    engine = capstone.Cs(*arch)
    lines, end = [], 0
    for insn in engine.disasm(code, 0):
        # the offset as a local label and the bytes as a comment: NASM syntax, so the lexer marks no error
        text = f"{insn.mnemonic} {insn.op_str}".rstrip()
        lines.append(f".{insn.address:04x}:  {text:<44} ; {insn.bytes.hex(' ')}")
        end = insn.address + insn.size
    if end < len(code):  # capstone stops at the first byte it cannot decode: say so, keep the rest as bytes
        lines.append(f".{end:04x}:  ; {len(code) - end} bytes not decoded: {code[end:end + 64].hex(' ')}")
    return "\n".join(lines) + "\n" if lines else None


def readable_source(renderer: str | None, source: str | None) -> tuple[str | None, str | None]:
    """(text to show, its highlighting language): machine code disassembled, other sources as they are."""
    if source is None or not renderer:
        return source, renderer
    assembly = disassemble(renderer.upper(), source)
    return (assembly, ASSEMBLY_LANGUAGE) if assembly is not None else (source, renderer)


def assembly_diff(renderer: str | None, unified: list[str]) -> list[str] | None:
    """A source diff of machine code (one hex line each side, so the diff is one changed line) redone over the two
    disassemblies, instruction by instruction; None when `unified` is not such a diff."""
    if not renderer or renderer.upper() not in MACHINE_CODE:
        return None
    head = [line for line in unified if line.startswith(("---", "+++"))][:2]
    old = [line[1:] for line in unified if line.startswith("-") and not line.startswith("---")]
    new = [line[1:] for line in unified if line.startswith("+") and not line.startswith("+++")]
    if len(old) > 1 or len(new) > 1:
        return None
    before = disassemble(renderer.upper(), old[0]) if old else ""
    after = disassemble(renderer.upper(), new[0]) if new else ""
    if before is None or after is None:
        return None
    labels = [h[4:] for h in head] + ["a", "b"]
    return list(difflib.unified_diff(before.splitlines(), after.splitlines(), labels[0], labels[1], n=3,
                                     lineterm=""))
