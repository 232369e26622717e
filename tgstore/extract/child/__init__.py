"""The extraction child: runs a case suite through one tinygrad and writes a bundle (docs/bundle-format.md).

It imports only the standard library, its own modules and the target tinygrad, so it can be copied alone to another
machine. Run it as a package with the directory holding it and the target tinygrad on the path::

    PYTHONPATH=tgstore/extract:/path/holding/tinygrad python -m child --out bundle.jsonl --cases builtin.py

It never compiles or runs kernels: it schedules the cases' tensors and renders every kernel with each requested
renderer (compilers are replaced by a stub), recording the graph after each named pass where asked.

One module per tinygrad surface, each opening with its table of eras: `schedule` (tensors -> kernel ASTs),
`lower` (AST + renderer -> program; renderers; the kernel-name counter), `passes` (graph_rewrite wrapping),
`canonical` (Svod's canonical JSON), `patterns` (PatternMatcher rules and match counts), `timing` (tinygrad's timer;
`machine`: the machine record, no tinygrad; `buffers`: a timed kernel's buffers). `extractor` assembles them, `case`
runs one case, `main` writes the bundle. This file and `header` import no tinygrad: the parent uses them.
"""

from .header import capture_identity, describe_tinygrad, run_settings, suite_identity
from .lower import ALL_RENDERERS, selected_renderers

BUNDLE_VERSION = 3
# renderers tried when --renderers is not given: all of them. A renderer a release lacks (WGSL before 0.10.3, X86
# before 0.13) is recorded as `missing` and its programs carry an error.
DEFAULT_RENDERERS = list(ALL_RENDERERS)
# renderers whose lowering passes are recorded by default: the CPU ones, which Svod also targets
DEFAULT_STAGE_RENDERERS = ["C", "LLVM"]

__all__ = ["ALL_RENDERERS", "BUNDLE_VERSION", "DEFAULT_RENDERERS", "DEFAULT_STAGE_RENDERERS", "capture_identity",
           "describe_tinygrad", "run_settings", "selected_renderers", "suite_identity"]
