"""tinygrad's own work, the floor tgstore's extraction is measured against: import tinygrad, then for each case of a
case file schedule its tensors and render every kernel with each renderer, nothing else (no DEBUG output, no pattern
scan, no pass recording, no bundle). Run with the target tinygrad first on PYTHONPATH; prints `seconds N`.

    PYTHONPATH=/dir/holding/tinygrad python bench/baseline_tinygrad.py CASES.py C,LLVM

Standard library and tinygrad only, like the extraction child; the same entry points the child uses (the newest
this tinygrad has), so both do the same lowering.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time

# renderer -> (module under tinygrad.renderer, class names to try, constructor arguments)
RENDERERS = {
    "C": ("cstyle", ["ClangRenderer"], ()), "LLVM": ("llvmir", ["CPULLVMRenderer", "LLVMRenderer"], ()),
    "PTX": ("ptx", ["PTXRenderer"], ("sm_80",)), "CUDA": ("cstyle", ["CUDARenderer"], ("sm_80",)),
    "METAL": ("cstyle", ["MetalRenderer"], ()), "OPENCL": ("cstyle", ["OpenCLRenderer"], ()),
    "WGSL": ("wgsl", ["WGSLRenderer"], ()), "HIP": ("cstyle", ["HIPRenderer", "AMDHIPRenderer"], ("gfx1100",)),
    "X86": ("isa.x86", ["X86Renderer"], ()),
}


def renderer(name: str):
    module, classes, args = RENDERERS[name]
    mod = importlib.import_module(f"tinygrad.renderer.{module}")
    cls = next(getattr(mod, c) for c in classes if hasattr(mod, c))
    try:
        return cls(*args)
    except TypeError:
        return cls()


def lowering():
    for module, attr in (("tinygrad.codegen", "do_to_program"), ("tinygrad.codegen", "get_program"),
                         ("tinygrad.engine.realize", "get_program")):
        try:
            fn = getattr(importlib.import_module(module), attr)
            return lambda ast, ren, fn=fn: fn(ast, ren)
        except (ImportError, AttributeError):
            continue
    from tinygrad.engine.realize import get_kernel

    return lambda ast, ren: get_kernel(ren, ast).to_program()


def kernel_asts(tensors):
    if hasattr(tensors[0], "schedule_linear"):
        linear = tensors[0].schedule_linear(*tensors[1:])
        return [c.src[0] if c.op.name == "CALL" else c for c in linear.src]
    return [si.ast for si in tensors[0].schedule(*tensors[1:])]


def main() -> None:
    cases_file, names = sys.argv[1], sys.argv[2].split(",")
    start = time.perf_counter()
    from tinygrad import Tensor  # noqa: F401  (the import is part of tinygrad's work)

    renderers = [renderer(n) for n in names]
    lower = lowering()
    spec = importlib.util.spec_from_file_location("cases", cases_file)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    failed = 0
    for attr, fn in vars(cases).items():
        if not attr.startswith("case_") or not callable(fn):
            continue
        try:
            out = fn()
            tensors = list(out) if isinstance(out, (list, tuple)) else [out]
            for ast in kernel_asts(tensors):
                if ast.op.name == "SINK":
                    for ren in renderers:
                        lower(ast, ren)
        except (AttributeError, ImportError, NotImplementedError):
            failed += 1  # unsupported in this era: the extraction records it and moves on too
    print(f"seconds {time.perf_counter() - start:.4f} unsupported {failed}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
