"""One spelling for both sides, the one place Svod's spelling is mapped to tinygrad's: a Svod tree node and a
tinygrad graph node become (op, dtype, arg) in tinygrad's spelling, with canonical dtype names and args reduced to
what both print; a canonical document's address spaces, a Svod canonical dump's tinygrad document and a Svod
backend's tinygrad renderer are named here too. The tables are data (maps.toml, with the stage map every Svod module
reads through `maps()`); what neither table knows is reported in `unknown`, never guessed.

Where it is applied, once per stored fact where the schema holds the result: a Svod tree at Svod ingest
(svod/store.py stores its graph in this spelling, `svod_trees`); a tinygrad kernel AST or pass graph at ingest
(store/artifacts.py stores `norm_hash`, the hash of its graph in this spelling, which queries/parity_matrix.sql
compares with `svod_trees.hash`). The database keeps only that hash of a tinygrad graph, so parity (svod/parity.py)
and the graph page spell a tinygrad graph again when they need its nodes (a diff, node counts, unknown spellings);
canonical documents are stored as each side wrote them and `same_spelling` is applied when two are compared.

What is compared, per op: CONST its value; RANGE its axis path and type; PARAM its slot; BUFFER its slot and address
space; REDUCE its op and axis count; SINK whether it is a kernel; SPECIAL its name; PERMUTE/FLIP their axes;
GETTUPLE/MSELECT their index; GETADDR/COPY the device; CUSTOM the first 20 characters of its code; INS its opcode.
Other args are left out (Svod does not print them, or prints allocation ids, as REDUCE's `ranges=[...]`). Shapes
are left out: tinygrad's stored graphs do not carry them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

USIZE_MAX = 2**64 - 1


@functools.cache
def maps() -> dict[str, Any]:
    return tomllib.loads(resources.files("tgstore.spelling").joinpath("maps.toml").read_text(encoding="utf-8"))


@dataclass
class Speller:
    """Collects what could not be spelled while normalizing one graph."""

    unknown: list[str] = field(default_factory=list)

    def note(self, what: str) -> None:
        if what not in self.unknown:
            self.unknown.append(what)

    # ---- Svod
    def svod_op(self, op: str) -> str:
        table = maps()["ops"]
        if op in table and isinstance(table[op], str):
            return table[op]
        if op in table["same"]["names"]:
            return op
        if op in table["svod_only"]["names"]:
            self.note(f"Svod-only op {op}")
            return op
        self.note(f"unknown Svod op {op}")
        return op

    def svod_dtype(self, text: str | None) -> str:
        if not text:
            return ""
        m = re.fullmatch(r"Scalar\((\w+)\)", text)
        if m:
            return self._scalar(m.group(1))
        m = re.fullmatch(r"Vector \{ scalar: (\w+), count: (\d+) \}", text)
        if m:
            return f"{self._scalar(m.group(1))}.vec({m.group(2)})"
        m = re.fullmatch(r"Ptr \{ base: (.+), addrspace: (\w+), size: (Some\((\d+)\)|None), vcount: (\d+) \}", text)
        if m:
            space = maps()["addrspaces"].get(m.group(2))
            if space is None:
                self.note(f"unknown Svod address space {m.group(2)}")
            return f"ptr({self.svod_dtype(m.group(1))},{space or m.group(2)},{m.group(4) or ''})"
        self.note(f"unknown Svod dtype {text}")
        return text

    def _scalar(self, name: str) -> str:
        found = maps()["dtypes"].get(name)
        if found is None:
            self.note(f"unknown Svod scalar dtype {name}")
            return name
        return found

    def svod_arg(self, op: str, svod_op: str, args: str | None, kernel_sink: bool) -> str:
        """`op` in tinygrad spelling, `svod_op` and `args` as Svod printed them."""
        if svod_op == "INVALID":
            return "invalid"
        if op == "SINK":
            return "KERNEL" if kernel_sink else ""
        if args is None:
            return ""
        if op == "CONST":
            m = re.fullmatch(r"(Int|UInt|Float|Bool)\((.*)\)", args)
            if not m:
                self.note(f"unknown Svod constant {args}")
                return args
            return const_text(m.group(2))
        if op == "RANGE":
            m = re.fullmatch(r"[RU]([\d_]+), (\w+)", args)
            if not m:
                self.note(f"unknown Svod range {args}")
                return args
            return f"{m.group(1).replace('_', ',')}:{self._axis_type(m.group(2))}"
        if op == "PARAM":
            slot = int(re.search(r"slot=(\d+)", args).group(1)) if "slot=" in args else None
            return f"slot={-1 if slot == USIZE_MAX else slot}"
        if op == "BUFFER":
            m = re.fullmatch(r"slot=(\d+), addrspace=(?:Some\((\w+)\)|None)", args)
            if not m:
                self.note(f"unknown Svod buffer {args}")
                return args
            slot = int(m.group(1))
            return f"slot={slot & (2**63 - 1)},{maps()['addrspaces'].get(m.group(2) or '', 'none')}"
        if op == "REDUCE":
            m = re.match(r"(\w+), num_axes=(\d+)", args)
            if not m:
                self.note(f"unknown Svod reduce {args}")
                return args
            return f"{self._reduce_op(m.group(1))}:{m.group(2)}"
        if op == "SPECIAL":
            return args.strip("'")
        if op in ("PERMUTE", "FLIP"):
            return args.removeprefix("axes=").strip("[]").replace(" ", "").lower()
        if op in ("GETTUPLE", "MSELECT"):
            return args.removeprefix("idx=")
        if op in ("GETADDR", "COPY"):
            return device_text(args)
        if op in ("CUSTOM", "CUSTOMI"):
            return args.strip("'")[:20]
        if op == "INS":
            return args
        return ""  # STACK(len=..), CALL(args=..), LINEAR(len=..), STAGE(...), ...: not compared

    def _axis_type(self, name: str) -> str:
        found = maps()["axis_types"].get(name)
        if found is None:
            self.note(f"unknown Svod axis type {name}")
            return name
        return found

    def _reduce_op(self, name: str) -> str:
        found = maps()["reduce_ops"].get(name)
        if found is None:
            self.note(f"unknown Svod reduce op {name}")
            return name
        return found

    # ---- tinygrad (the text tgstore's extractor stores: op name, str(dtype), repr(arg))
    def tinygrad_dtype(self, text: str | None) -> str:
        if not text:
            return ""
        m = re.fullmatch(r"dtypes\.(\w+)(\.vec\((\d+)\))?(\.ptr\((-?\d*)(?:, ?AddrSpace\.(\w+))?\))?", text)
        if not m:
            self.note(f"unknown tinygrad dtype {text}")
            return text
        scalar = maps()["tinygrad_dtypes"].get(m.group(1))
        if scalar is None:
            self.note(f"unknown tinygrad dtype {text}")
            scalar = m.group(1)
        out = f"{scalar}.vec({m.group(3)})" if m.group(2) else scalar
        if m.group(4):
            size = m.group(5) if m.group(5) not in (None, "", "-1") else ""
            out = f"ptr({out},{(m.group(6) or 'GLOBAL').lower()},{size})"
        return out

    def tinygrad_arg(self, op: str, arg: str | None) -> str:
        if arg is None or arg == "None":
            return ""
        if op == "CONST":
            return "invalid" if arg == "Invalid" else const_text(arg)
        if op == "SINK":
            return "KERNEL" if arg.startswith("KernelInfo(") else ""
        if op == "RANGE":
            m = re.fullmatch(r"\(([\d, ]+?),? AxisType\.(\w+)\)", arg)
            if not m:
                self.note(f"unknown tinygrad range {arg}")
                return arg
            return f"{','.join(x.strip() for x in m.group(1).split(',') if x.strip())}:{m.group(2)}"
        if op == "PARAM":
            m = re.match(r"ParamArg\((-?\d+)", arg)
            return f"slot={m.group(1)}" if m else self._unknown_arg(op, arg)
        if op == "BUFFER":
            m = re.match(r"ParamArg\((-?\d+)", arg)
            if not m:
                return self._unknown_arg(op, arg)
            space = re.search(r"addrspace=AddrSpace\.(\w+)", arg)
            return f"slot={m.group(1)},{space.group(1).lower() if space else 'global'}"
        if op == "REDUCE":
            m = re.fullmatch(r"\(Ops\.(\w+), (\d+)\)", arg)
            return f"{m.group(1)}:{m.group(2)}" if m else self._unknown_arg(op, arg)
        if op == "SPECIAL":
            return arg.strip("'\"")
        if op in ("PERMUTE", "FLIP"):
            return arg.strip("()").replace(" ", "").rstrip(",").lower()
        if op in ("GETTUPLE", "MSELECT"):
            return arg
        if op in ("GETADDR", "COPY"):
            return device_text(arg.strip("'\""))
        if op in ("CUSTOM", "CUSTOMI"):
            return arg.strip("'\"")[:20]
        if op == "INS":
            return arg.strip("'\"")
        return ""

    def _unknown_arg(self, op: str, arg: str) -> str:
        self.note(f"unknown tinygrad {op} arg {arg[:60]}")
        return arg


def const_text(value: str) -> str:
    """A constant as one text for both sides: ints as ints, floats through Python's float (Rust `1e-5`, `NaN` and
    Python `1e-05`, `nan` agree), bools lower case."""
    value = value.strip()
    m = re.fullmatch(r"ConstFloat\((.*)\)", value)
    if m:
        value = m.group(1)
    if value in ("true", "false", "True", "False"):
        return value.lower()
    try:
        return str(int(value))
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    return "nan" if math.isnan(number) else repr(number)


def device_text(value: str) -> str:
    return "CPU" if value.lower() == "cpu" else value


def same_spelling(document: dict[str, Any]) -> dict[str, Any]:
    """A canonical document with Svod's spellings of an address space made the one tinygrad's side writes
    ([canonical_address_spaces]: Svod's Rust serializer writes `register`, its Python reference script `reg`)."""
    text = json.dumps(document)
    spaces = {svod: tg for svod, tg in maps()["canonical_address_spaces"].items() if f'"{svod}"' in text}
    if not spaces:
        return document
    for svod, tg in spaces.items():
        text = text.replace(f'"address_space": "{svod}"', f'"address_space": "{tg}"')
    return json.loads(text)


def tinygrad_document(svod_stage: str) -> str:
    """The stage of the stored tinygrad canonical document a Svod canonical dump is compared with
    ([canonical_documents])."""
    return maps()["canonical_documents"].get(svod_stage, svod_stage)


def renderer_of(backend: str | None) -> str | None:
    """tinygrad's renderer for a Svod backend (a test name's last part, or a generated code's kind; [renderers]),
    None when the table does not name it."""
    return maps()["renderers"].get(backend) if backend else None


def kernel_renderer(variant: str | None, code_kind: str | None) -> str:
    """The tinygrad renderer a Svod kernel is compared with, decided once when the kernel is stored
    (`svod_kernels.renderer`, read by `parity` and `parity_matrix`): its test's backend variant
    (`readers.sessions.variant_of`: `ops::sum::llvm`, `sum::clang::_8x64`), else its generated code's kind, else C."""
    return renderer_of(variant) or renderer_of(code_kind) or "C"


def svod_node(op: str, kernel_sink: bool, args: str | None, dtype: str | None
              ) -> tuple[str, str, str, tuple[str, ...]]:
    """A Svod tree node's (op, dtype, arg) in tinygrad's spelling and what could not be spelled: one node's spelling
    depends on the node alone, so a log's many equal nodes are spelled once."""
    speller = Speller()
    top = speller.svod_op(op)
    return top, speller.svod_dtype(dtype), speller.svod_arg(top, op, args, kernel_sink), tuple(speller.unknown)


@functools.lru_cache(maxsize=65536)
def _tinygrad_node(op: str, dtype: str, arg: str) -> tuple[str, str, str, tuple[str, ...]]:
    speller = Speller()
    return op, speller.tinygrad_dtype(dtype), speller.tinygrad_arg(op, arg), tuple(speller.unknown)


def normalize_tinygrad(nodes: list, eras: bool = True) -> tuple[list[list], list[str]]:
    """A stored tinygrad graph ([op, dtype, arg, src] per node) in the spelling Svod trees are compared in, and the
    spellings the maps do not know. `eras`: an earlier tinygrad era's spellings are read first ([[tinygrad_eras]])."""
    out, unknown = [], []
    node = _era_node if eras else _tinygrad_node
    for op, dtype, arg, src in nodes:
        nop, ndtype, narg, missing = node(op, dtype or "", arg or "None")
        out.append([nop, ndtype, narg, list(src)])
        unknown += [m for m in missing if m not in unknown]
    return out, unknown


@functools.cache
def _era_rows() -> list[tuple[str | None, str | None, re.Pattern[str] | None, str | None, re.Pattern[str] | None,
                              str | None]]:
    return [(row.get("op"), row.get("as_op"), re.compile(row["arg"]) if "arg" in row else None, row.get("as_arg"),
             re.compile(row["dtype"]) if "dtype" in row else None, row.get("as_dtype"))
            for row in maps().get("tinygrad_eras", [])]


@functools.lru_cache(maxsize=65536)
def _era_node(op: str, dtype: str, arg: str) -> tuple[str, str, str, tuple[str, ...]]:
    """A tinygrad node of any era read as 0.14 spells it ([[tinygrad_eras]]), then spelled."""
    for row_op, as_op, arg_re, as_arg, dtype_re, as_dtype in _era_rows():
        if row_op is not None and row_op != op:
            continue
        if arg_re is not None:
            if not arg_re.search(arg):
                continue
            arg = arg_re.sub(as_arg, arg)
        if dtype_re is not None:
            dtype = dtype_re.sub(as_dtype, dtype)
        op = as_op or op
    return _tinygrad_node(op, dtype, arg)


def norm_hash(nodes: list) -> str:
    """A stored tinygrad graph's hash in the spelling Svod's trees are compared in (`kernels.norm_hash`,
    `graphs.norm_hash`): equal to a Svod tree's hash (`svod_trees.hash`) when the two graphs are."""
    # the spelling of its era as stored (no [[tinygrad_eras]] reading): hashes stored before and after stay alike
    text = json.dumps(normalize_tinygrad(nodes, eras=False)[0], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()  # store.content.sha256_text's
