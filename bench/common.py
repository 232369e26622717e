"""What the bench scripts share: the `figure` line, the smallest size every bench has (`--smallest`, run by
tests/test_bench.py), built-in cases picked out into a case file of their own, and counting the lowerings a bundle
recorded as failed (a renderer that cannot render a case), to compare with bench/baseline_tinygrad.py's count."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = ROOT / "tgstore" / "cases" / "builtin.py"
# --smallest: two built-in cases, one of which WGSL cannot render (float64), so the smallest run still goes through
# a renderer skipping a kernel on both sides of a ratio
SMALLEST_CASES = "softmax,float64_int64"
SMALLEST_HELP = (f"the smallest size, for a check that the bench still runs to its figures (cases {SMALLEST_CASES}, "
                 "one repeat); its figures mean nothing")


def figure(name: str, value: float, note: str = "", digits: int = 4) -> None:
    """`figure NAME VALUE  # note`: a whole number (bytes) as it is, anything else to `digits` significant digits."""
    shown = str(int(value)) if float(value).is_integer() else f"{value:.{digits}g}"
    print(f"figure {name} {shown}" + (f"  # {note}" if note else ""), flush=True)


def case_file(names: list[str], out: Path, source: Path = BUILTIN) -> Path:
    """The named cases of a case file (and their `case_x.context = ...` lines) as a case file of their own."""
    text = source.read_text()
    lines = text.splitlines()
    kept = ["from tinygrad import Tensor, dtypes"]
    wanted = {f"case_{n}" for n in names}
    found = set()
    for node in ast.parse(text).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        owner = getattr(getattr(target, "value", None), "id", None)
        if (isinstance(node, ast.FunctionDef) and node.name in wanted) or owner in wanted:
            kept.append("\n".join(lines[node.lineno - 1:node.end_lineno]))
            found.add(getattr(node, "name", None))
    if missing := wanted - found:
        raise SystemExit(f"no case {', '.join(sorted(m[5:] for m in missing))} in {source}")
    out.write_text("\n\n\n".join(kept) + "\n")
    return out


def failed_lowerings(bundle: Path) -> dict[str, int]:
    """Renderer -> kernels whose program the extraction recorded as an error (it could not render them; a renderer
    that could not be built at all is not counted: the baseline leaves it out too)."""
    counts: dict[str, int] = {}
    for line in bundle.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") != "case":
            continue
        for item in record["schedule"]:
            for prog in item.get("programs") or []:
                if prog.get("error") and not prog["error"].startswith("renderer unavailable"):
                    counts[prog["renderer"]] = counts.get(prog["renderer"], 0) + 1
    return counts


def parse_baseline(stdout: str) -> dict[str, str]:
    """bench/baseline_tinygrad.py's last line, `seconds S unsupported U skipped K skipped_by R:N,... renderers
    A,B`, as a dict."""
    words = stdout.strip().splitlines()[-1].split()
    return dict(zip(words[::2], words[1::2], strict=False))


def skipped_by(text: str) -> dict[str, int]:
    return {r: int(n) for r, n in (p.split(":") for p in text.split(",") if p and p != "-")}
