"""A reproducer: a standalone Python script that rebuilds a stored kernel's AST from its pyrender and runs tinygrad's
own lowering on it, printing one pass's output (tinygrad's own printing of the graph after that named pass) and the
generated source. It imports only the standard library and tinygrad (installed, or a checkout on PYTHONPATH): it is
what one pastes into an issue. The case's earlier kernels are lowered first, as the extraction lowered them, so
that an era's process-wide kernel-name counter (r_4_16n1) reaches the same number; each under its own Context."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tgstore.compare.sql import AnyConnection, rows
from tgstore.compare.stage_diff import StageError

KERNELS_SQL = """
SELECT si.position, kn.name, pb.text AS pyrender, si.context FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
LEFT JOIN blobs pb ON pb.id = kn.pyrender_blob_id
WHERE rc.run_id = :run AND k.name = :case AND si.position <= :kernel ORDER BY si.position"""

TEMPLATE = '''#!/usr/bin/env python3
"""tgstore repro: case {case!r}, kernel {kernel} ({kernel_name}) at tinygrad {sha}{version}.

Run it with tinygrad at that commit: `pip install` it, or `PYTHONPATH=/path/to/tinygrad python {script_name}`.
It rebuilds the kernel's AST from the stored pyrender, lowers it with tinygrad's own codegen for the {renderer}
renderer, and prints the graph after pass {pass_label} and the generated source. `--source` prints the source alone.
Standard library and tinygrad only."""

import contextlib
import importlib
import platform
import sys

KERNELS = {kernels}  # (position, kernel name as stored, pyrender, codegen Context) of the case, up to this kernel
KERNEL = {kernel}
PASS = {pass_name!r}  # the named graph_rewrite pass to print (None: none)
OCCURRENCE = {occurrence}  # the k-th pass of that name
RENDERER = {renderer!r}
RENDERERS = {{"C": ("cstyle", "ClangRenderer"), "LLVM": ("llvmir", "CPULLVMRenderer"),
             "X86": ("isa.x86", "X86Renderer")}}

import tinygrad  # noqa: E402  (after the constants: what is reproduced is stated first)
from tinygrad import helpers  # noqa: E402


def namespace():
    """The names a pyrender uses (UOp, Ops, dtypes, AxisType, KernelInfo, Opt, ...), from whichever modules this
    tinygrad has them in."""
    names = {{}}
    for module in ("tinygrad.dtype", "tinygrad.uop", "tinygrad.uop.ops", "tinygrad.codegen.opt", "tinygrad.helpers",
                   "tinygrad.shape.shapetracker", "tinygrad.shape.view", "tinygrad.ops"):
        try:
            names.update({{k: v for k, v in vars(importlib.import_module(module)).items() if not k.startswith("_")}})
        except ImportError:
            pass
    return names


def renderer():
    module, name = RENDERERS[RENDERER]
    cls = getattr(importlib.import_module("tinygrad.renderer." + module), name)
    arch = {{"amd64": "x86_64", "aarch64": "arm64"}}.get(platform.machine().lower(), platform.machine().lower())
    target = getattr(helpers, "Target", None)
    built = cls(target(device="CPU", arch=arch + ",native")) if target is not None else cls()
    return built


def lower(ast, ren):
    """tinygrad's own AST -> program entry point of this era; (name, source)."""
    for module, fn in (("tinygrad.codegen", "do_to_program"), ("tinygrad.codegen", "get_program"),
                       ("tinygrad.engine.realize", "get_program")):
        entry = getattr(_try_import(module), fn, None)
        if callable(entry):
            ret = entry(ast, ren)
            break
    else:
        raise SystemExit("this tinygrad has no AST -> program entry point tgstore knows")
    if getattr(getattr(ret, "op", None), "name", None) == "PROGRAM":
        return next(s.arg for s in ret.src if s.op.name == "SOURCE")
    return ret.src


def _try_import(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


class PassPrinter:
    """Wraps tinygrad's graph_rewrite wherever a module bound it, keeping the output of the named pass."""

    def __init__(self):
        self.seen, self.output, self.patched = 0, None, []
        ops = importlib.import_module("tinygrad.uop.ops")
        self.original = ops.graph_rewrite

        def wrapper(*args, **kwargs):
            out = self.original(*args, **kwargs)
            if PASS is not None and kwargs.get("name") == PASS and self.active:
                self.seen += 1
                if self.seen == OCCURRENCE:
                    self.output = out
            return out

        self.active = False
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("tinygrad") and \\
                    getattr(module, "graph_rewrite", None) is self.original:
                setattr(module, "graph_rewrite", wrapper)
                self.patched.append(module)


def main():
    names = namespace()
    ren = renderer()
    for module in ("tinygrad.codegen", "tinygrad.engine.realize"):  # loaded before graph_rewrite is wrapped
        _try_import(module)
    printer = PassPrinter()
    source = None
    for position, _name, pyrender, context in KERNELS:
        env = dict(names)
        exec(pyrender, env)
        printer.active = position == KERNEL
        with helpers.Context(**context) if context else contextlib.nullcontext():
            source = lower(env["ast"], ren)
    if "--source" in sys.argv:
        sys.stdout.write(source)
        return
    if PASS is not None:
        out = printer.output
        if out is None:
            print(f"=== pass {{PASS!r}} did not run for this kernel in this tinygrad ===")
        else:
            nodes = out.toposort() if callable(out.toposort) else out.toposort
            print(f"=== after pass {{PASS!r}} (#{{OCCURRENCE}}): {{len(nodes)}} nodes ===")
            print(out)
    print(f"=== {{RENDERER}} source ===")
    sys.stdout.write(source)


if __name__ == "__main__":
    main()
'''


@dataclass
class Repro:
    script: str
    case: str
    kernel: int
    kernel_name: str | None
    sha: str
    renderer: str
    pass_name: str | None


def repro_script(conn: AnyConnection, run_id: int, sha: str, version: str | None, case: str, kernel: int,
                 renderer: str = "C", pass_name: str | None = None, occurrence: int = 1,
                 script_name: str = "repro.py") -> Repro:
    """The reproducer of the case's kernel `kernel` at run `run_id` (its commit `sha`). StageError when the run
    has no such kernel or no pyrender of it (an era before pyrender)."""
    found = rows(conn, KERNELS_SQL, run=run_id, case=case, kernel=kernel)
    if not found or found[-1]["position"] != kernel:
        raise StageError(f"case {case!r} has no kernel {kernel} at {sha[:10]}")
    missing = [r["position"] for r in found if not r["pyrender"]]
    if missing:
        raise StageError(f"no pyrender stored for kernel {missing[0]} of {case!r} at {sha[:10]} (its era has none)")
    renderer = renderer.upper()
    if renderer not in ("C", "LLVM", "X86"):
        raise StageError(f"the reproducer renders on the CPU: --renderer C, LLVM or X86, not {renderer}")
    kernels = [(r["position"], r["name"], r["pyrender"], json.loads(r["context"]) if r["context"] else {})
               for r in found]
    text = TEMPLATE.format(case=case, kernel=kernel, kernel_name=found[-1]["name"], sha=sha,
                           version=f" ({version})" if version else "", script_name=script_name, renderer=renderer,
                           pass_label=repr(pass_name) if pass_name else "(none asked)", pass_name=pass_name,
                           occurrence=occurrence, kernels=_literal(kernels))
    return Repro(text, case, kernel, found[-1]["name"], sha, renderer, pass_name)


def _literal(kernels: list) -> str:
    """The kernels as a Python literal, one per line (readable in the script)."""
    inner = ",\n".join(f"    ({p!r}, {n!r}, {src!r}, {ctx!r})" for p, n, src, ctx in kernels)
    return "[\n" + inner + ",\n]"
