"""The multi-output case `custom_addmul` (a real two-output Tensor.custom_kernel) read from Svod's log and compared
with tinygrad 0.14.0's extraction of the same case (tests/svod_multi_output.py says how Svod prints it)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from cli import ingest_source, tgstore
from svod_multi_output import INITIAL, KERNEL, TEST, addmul_log

from tgstore.cases import builtin


@pytest.fixture(scope="module")
def addmul_db(tmp_path_factory, tinygrad_release) -> Path:
    """tinygrad 0.14.0's extraction of the built-in case custom_addmul alone (C and LLVM, stages)."""
    return ingest_source(tmp_path_factory.mktemp("addmul"),
                         "from tinygrad import Tensor\n\n\n" + inspect.getsource(builtin.case_custom_addmul),
                         tinygrad_release("0.14.0"))


def test_svod_two_output_kernel_is_read_and_compared_with_tinygrads(addmul_db: Path, tmp_path: Path) -> None:
    """One kernel with two STOREs under one GROUP: stored as one kernel named from its code, its trees equal to
    tinygrad's at kernel-initial and the pre-opt stages (17 nodes each side); the stages the log does not hold are
    said to be missing, not different. A tree with one of the two stores dropped differs at kernel-initial."""
    db = tmp_path / "copy.db"
    db.write_bytes(addmul_db.read_bytes())
    good, bad = tmp_path / "addmul.log", tmp_path / "one_store.log"
    good.write_text(addmul_log(), encoding="utf-8")
    one_store = INITIAL.split("    │   └── [27] STORE")[0].replace("    │   ├── [26] STORE", "    │   └── [26] STORE") \
        .replace("    │   │", "    │    ") + "    └── [14] → (see above)\n"
    bad.write_text(addmul_log().replace(json.dumps(INITIAL, ensure_ascii=False)[1:-1],
                                        json.dumps(one_store, ensure_ascii=False)[1:-1]), encoding="utf-8")
    out = json.loads(tgstore("ingest-svod", good, "--case", "custom_addmul", "--db", db, "--json").stdout)
    assert [(k["index"], k["name"]) for k in out["kernels"]] == [(0, KERNEL)] and out["problems"] == []
    assert out["test"] == TEST
    report = json.loads(tgstore("parity", "custom_addmul", "--svod", "1", "--json", "--db", db).stdout)
    (kernel,) = report["kernels"]
    assert (kernel["svod_name"], kernel["tinygrad_name"]) == (KERNEL, KERNEL)
    verdicts = {s["stage"]: s for s in kernel["stages"]}
    compared = ["kernel-initial", "pre-movement", "pre-load-collapse", "pre-split-ranges", "pre-symbolic",
                "pre-simplify-ranges"]
    assert all(verdicts[s]["verdict"] == "equal" for s in compared), {s: verdicts[s]["verdict"] for s in compared}
    assert (verdicts["kernel-initial"]["svod_nodes"], verdicts["kernel-initial"]["tinygrad_nodes"]) == (17, 17)
    assert verdicts["00-initial"]["verdict"] == "not in this log" and kernel.get("first_divergence") is None
    assert tgstore("ingest-svod", bad, "--case", "custom_addmul", "--db", db).returncode == 0
    altered = json.loads(tgstore("parity", "custom_addmul", "--svod", "2", "--json", "--db", db).stdout)["kernels"][0]
    assert altered["first_divergence"] == "kernel-initial"
    diff = next(s for s in altered["stages"] if s["stage"] == "kernel-initial")["diff"]
    assert any(line.startswith("+") and "MUL" in line for line in diff.splitlines()), diff
