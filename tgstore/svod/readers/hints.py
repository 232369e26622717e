"""What a problem tells the user to change to get proof it lacked, checked against the log first.

`SVOD_THREADS=1` runs `compile_missing_kernels` on one thread (tensor/src/realize.rs `map_on_threads`: inline when
1), so program order files every stage; the log does not show the setting (a pool can print kernels one after
another too), so the user says it: `ingest-svod --svod-threads 1`. But `SVOD_THREADS` is also
`HeuristicsConfig.thread_count`, "the number of core_id chunks a CPU kernel is split into; baked into the kernel and
its cache identity"
(schedule/src/optimizer/config.rs@3e06443b): on a CPU backend that rerun builds other kernels (no core_id split),
whose stages are not this run's. GPU kernels are not split by it. What proves a stage's kernel without changing the
kernels: the canonical documents (`SVOD_DUMP_CANONICAL_STAGE=`, empty prefix: every stage), each naming its
kernel's bare name in its SINK (`ir/src/uop/canonical.rs`): a document is filed on the one kernel of that bare name
(the events and `[per-stage]` lines around it name nothing, so they are not).
"""

from __future__ import annotations

from collections.abc import Iterable

from tgstore.svod.readers.model import Kernel, Stage, SvodLog, bare_name, document_name
from tgstore.svod.readers.sessions import variant_of

GPU_CODE = ("nvptx", "amdgpu", "metal")
GPU_VARIANTS = ("cuda", "amd", "metal")


def backend(log: SvodLog, kernels: Iterable[Kernel]) -> str | None:
    """"gpu" or "cpu" by the run's test variant, else by every code kind the log shows; None when it shows neither."""
    variant = variant_of(log.test)
    if variant is not None:
        return "gpu" if variant in GPU_VARIANTS else "cpu"
    kinds = {k.code_kind for k in kernels if k.code_kind}
    if kinds:
        return "gpu" if kinds <= set(GPU_CODE) else "cpu" if not kinds & set(GPU_CODE) else None
    return None


def one_thread(log: SvodLog, kernels: Iterable[Kernel], what: str) -> str:
    """`Rerun with SVOD_THREADS=1` for `what`, with what else it changes where it changes the kernels."""
    where = backend(log, list(kernels))
    rerun = f"Rerun with SVOD_THREADS=1 (one optimizing thread) and ingest with --svod-threads 1 for {what}"
    if where == "gpu":
        return rerun
    cpu = "this run's kernels are CPU kernels" if where == "cpu" else "on a CPU backend"
    return (f"{rerun}; but {cpu}: SVOD_THREADS is also the "
            "number of core_id chunks a CPU kernel is split into, part of the kernel and its cache identity "
            "(schedule/src/optimizer/config.rs), so that rerun's kernels can differ from this run's")


def documents(kernels: list[Kernel], stages: list[Stage]) -> str:
    """The canonical documents' part of the advice: suggest them where the log lacks them and they can tell its
    kernels apart; say which kernels they cannot."""
    names = [bare_name(k.name) for k in kernels if k.name]
    shared = sorted({n for n in names if names.count(n) > 1})
    apart = f" (not kernels sharing a bare name: {', '.join(shared)})" if shared else ""
    if names and len(shared) == len(set(names)):
        return ""  # every kernel shares its bare name with another: documents cannot tell them apart
    if any(document_name(s.canonical) for s in stages if s.source in ("dump-canonical", "capture")):
        return f"; the canonical documents in the log name their kernels and are filed on them{apart}"
    return (f"; or keep this run's kernels and add SVOD_DUMP_CANONICAL_STAGE= (every stage's canonical document "
            f"names its kernel and is filed on it{apart}; the events and [per-stage] lines stay unattributed)")


SVOD_TARGETS = ("svod", "morok")  # Svod's crates (and its earlier name's) are every target it prints events on


def has_svod(log: SvodLog) -> bool:
    """Whether Svod printed anything in the run: an event on one of its targets, a stage, a dump, a skip line."""
    return bool(any((e.target or "").startswith(SVOD_TARGETS) for e in log.events) or log.kernels
                or log.schedule_stages or log.unplaced or log.unattributed or log.dump_headers
                or log.outcome == "skipped")


def nothing_printed(runs: list[SvodLog]) -> str | None:
    """Why the files cannot be stored at all, or None: only a file in which Svod printed nothing is refused. A run
    of a test or a program (its outcome known, its output maybe captured) is stored. The advice names only the
    switches the file shows were off."""
    if any(has_svod(log) for log in runs) or any(log.test is not None for log in runs):
        return None
    events = [e for log in runs for e in log.events]
    texts = [text for _name, _kind, text in runs[0].files] if runs else []
    libtest = any("\nrunning " in "\n" + text[:200000] and "test result:" in text for text in texts)
    advice = []
    if events:
        targets = sorted({e.target or "?" for e in events})[:3]
        advice.append(f"its {len(events)} tracing events are on other targets ({', '.join(targets)}): set "
                      "RUST_LOG=svod_schedule=debug (or =trace)")
    else:
        advice.append("it holds no tracing event: set RUST_LOG=svod_schedule=debug (or =trace)")
    if libtest:
        advice.append("its tests printed no result line tgstore reads")
    return "no Svod output found (no Svod tracing event, stage line, tree, dump, skip line, test or program run); " \
        + "; ".join(advice)
