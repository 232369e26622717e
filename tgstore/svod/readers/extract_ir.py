"""`scripts/extract-ir.sh` output: the same events as a log, folded into `=====` banners and
`--- <message> [nodes=N] [Nms] ---` sections over trees, `KERNEL n` sections and generated code."""

from __future__ import annotations

import re

from tgstore.svod.readers.model import Problem, Stage, SvodLog, tree_stage
from tgstore.svod.readers.segment import Segmenter

KIND = "extract-ir"
HEADER = re.compile(r"^--- (?P<message>.+?)(?: \[nodes=(?P<nodes>\d+)\])?(?: \[(?P<ms>\d+)ms\])? ---$")
KERNEL_BANNER = re.compile(r"^  KERNEL (\d+)$")
CODE_HEADER = re.compile(r"^--- (?:C KERNEL CODE|GENERATED CODE) \(kernel \d+\) ---$")


def sniff(name: str, text: str) -> bool:
    # the JSON-event test first: a test log has one near its start, and the banner search would walk all of it
    return bool(not re.search(r'^\{"timestamp"', text, re.M) and re.search(r"^={60}$", text, re.M)
                and re.search(r"^--- .* ---$", text, re.M))


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    """extract-ir.sh's collated file: the same events, folded into `--- message ---` sections."""
    lines = text.split("\n")
    n = 0
    in_kernel = False
    while n < len(lines):
        line = lines[n].rstrip("\r")
        n += 1
        if not line.strip() or set(line.strip()) == {"="}:
            continue
        if KERNEL_BANNER.match(line):
            in_kernel = True
            continue
        if line.strip() == "--- post-optimization ---" or line.strip().startswith("RANGEIFY PHASE"):
            continue
        if CODE_HEADER.match(line):
            start, body = n, []
            while n < len(lines) and not lines[n].startswith(("--- ", "=====")):
                body.append(lines[n])
                n += 1
            tracker.code_text("\n".join(body).strip("\n") + "\n", "c" if "C KERNEL" in line else "llvm", file,
                              start)
            continue
        m = HEADER.match(line)
        if not m:
            log.problems.append(Problem(file, n, "not an extract-ir.sh line", line))
            continue
        start, body = n, []
        while n < len(lines) and not lines[n].startswith(("--- ", "=====", "  KERNEL", "  --- ")):
            body.append(lines[n].rstrip("\r"))
            n += 1
        message = m.group("message")
        if message == "INITIAL: kernel input":
            message = "kernel initial"
        label = "kernel-initial-or-00" if message == "kernel initial" else tracker.labels.get(message)
        stage = Stage(label or message, "extract-ir", file, start, message=message,
                      node_count=int(m.group("nodes")) if m.group("nodes") else None,
                      elapsed_ms=int(m.group("ms")) if m.group("ms") else None)
        tree_text = "\n".join(body).strip("\n")
        if tree_text:
            tree_stage(stage, tree_text + "\n", log, start + 1)
        if label is None and not in_kernel:
            tracker.schedule(stage)
        elif label is None:
            log.problems.append(Problem(file, start, f"section {message!r} is not a stage tgstore knows; kept apart "
                                        "from every kernel", None))
            log.unplaced.append(stage)
        else:
            tracker.add(stage)
