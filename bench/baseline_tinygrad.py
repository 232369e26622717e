"""tinygrad's own work, the floor tgstore's extraction is measured against: import tinygrad, then for each case of a
case file schedule its tensors and render every kernel with each renderer, nothing else (no DEBUG output, no pattern
scan, no pass recording, no bundle). Run with the target tinygrad first on PYTHONPATH; prints one line,
`seconds S unsupported U skipped K skipped_by R:N,... renderers A,B,...`.

    PYTHONPATH=/dir/holding/tinygrad python bench/baseline_tinygrad.py CASES.py C,LLVM

Standard library and tinygrad only, like the extraction child; the same entry points the child uses (the newest
this tinygrad has), so both do the same lowering. A case is scheduled and lowered under the Context it declares, and
a kernel a renderer cannot render (WGSL has no float64) is skipped and counted, as the child records an error for it
and goes on: both sides of a ratio do the same work.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import platform
import sys
import time

HOST = {"amd64": "x86_64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine().lower())
# renderer -> (module under tinygrad.renderer, class names to try, device, arch): as the extraction child builds them
RENDERERS = {
    "C": ("cstyle", ["ClangRenderer"], "CPU", HOST + ",native"),
    "LLVM": ("llvmir", ["CPULLVMRenderer", "LLVMRenderer"], "CPU", HOST + ",native"),
    "PTX": ("ptx", ["PTXRenderer"], "CUDA", "sm_80"), "CUDA": ("cstyle", ["CUDARenderer"], "CUDA", "sm_80"),
    "METAL": ("cstyle", ["MetalRenderer"], "METAL", "Apple9"), "OPENCL": ("cstyle", ["OpenCLRenderer"], "CL", ""),
    "WGSL": ("wgsl", ["WGSLRenderer"], "WEBGPU", ""),
    "HIP": ("cstyle", ["HIPRenderer", "AMDHIPRenderer", "AMDRenderer"], "AMD", "gfx1100"),
    "X86": ("isa.x86", ["X86Renderer"], "CPU", HOST + ",native"),
}


class NoCompiler:
    """Rendering needs no compiler, and 0.14's lowering would call one: like the extraction child, compile nothing."""

    cachekey = None

    def compile(self, src):
        return b""

    compile_cached = compile

    def __getattr__(self, name):
        return None


def renderer(name: str):
    """The renderer, or None where it cannot be built without a GPU toolchain (the bench then leaves it out)."""
    module, classes, device, arch = RENDERERS[name]
    try:
        mod = importlib.import_module(f"tinygrad.renderer.{module}")
        cls = next(getattr(mod, c) for c in classes if hasattr(mod, c))
        target = getattr(importlib.import_module("tinygrad.helpers"), "Target", None)
        if target is not None:  # 0.13+
            built = cls(target(device=device, arch=arch))
        else:
            params = inspect.signature(cls.__init__).parameters
            built = cls(**({"arch": arch.split(",")[0] if device == "CPU" else arch} if "arch" in params else {}))
        built.compiler = NoCompiler()
        return built
    except Exception:
        return None


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


def case_context(fn, known: dict) -> dict | None:
    """The Context a case declares (`case_x.context = {...}`), as the child applies it; None where this tinygrad
    lacks one of its ContextVars (the child records the case as unsupported)."""
    context = dict(getattr(fn, "context", None) or {})
    return context if all(k in known for k in context) else None


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    cases_file, names = sys.argv[1], sys.argv[2].split(",")
    start = time.perf_counter()
    from tinygrad import Tensor  # noqa: F401  (the import is part of tinygrad's work)

    helpers = importlib.import_module("tinygrad.helpers")
    known = getattr(getattr(helpers, "ContextVar", None), "_cache", {})
    built = {n: r for n in names if (r := renderer(n)) is not None}
    lower = lowering()
    spec = importlib.util.spec_from_file_location("cases", cases_file)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    failed = 0
    skipped: dict[str, int] = {}
    for attr, fn in vars(cases).items():
        if not attr.startswith("case_") or not callable(fn):
            continue
        context = case_context(fn, known)
        if context is None:
            failed += 1
            continue
        try:
            with helpers.Context(**context):
                out = fn()
                tensors = list(out) if isinstance(out, (list, tuple)) else [out]
                asts = [ast for ast in kernel_asts(tensors) if ast.op.name == "SINK"]
                for name, ren in built.items():  # as the child: one renderer at a time over the case's kernels
                    for ast in asts:
                        try:
                            lower(ast, ren)
                        except Exception:  # this renderer cannot render this kernel (WGSL and float64): the
                            skipped[name] = skipped.get(name, 0) + 1  # child records an error and goes on too
        except (AttributeError, ImportError, NotImplementedError):
            failed += 1  # unsupported in this era: the extraction records it and moves on too
    by = ",".join(f"{n}:{k}" for n, k in skipped.items()) or "-"
    print(f"seconds {time.perf_counter() - start:.4f} unsupported {failed} skipped {sum(skipped.values())} "
          f"skipped_by {by} renderers {','.join(built)}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
