"""`tgstore repro`: the script it writes, run with a real tinygrad release on PYTHONPATH (0.13.0 and 0.14.0: either
side of the spelling era change of tgstore/spelling/eras.py), prints exactly the stored source, byte for byte, and
the graph after the asked pass with the stored node count."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cli import rows, tgstore
from test_sweep import CASES

RELEASES = ["0.13.0", "0.14.0"]


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_the_reproducer_gives_the_stored_source_byte_for_byte(version, tinygrad_release, tmp_path):
    release = tinygrad_release(version)
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "repro.db"
    proc = tgstore("ingest", "--tinygrad", release, "--cases", cases, "--renderers", "C", "--stages", "C", "--db", db)
    assert proc.returncode == 0, proc.stderr
    env = {**os.environ, "PYTHONPATH": str(release)}
    checked = 0
    for position, source in rows(db, "SELECT position, source FROM v_sources WHERE \"case\" = 'softmax' AND "
                                     "renderer = 'C' ORDER BY position"):
        script = tmp_path / f"repro_{position}.py"
        made = tgstore("repro", "softmax", "--kernel", position, "--commit", version, "--pass", "expander", "-o",
                       script, "--db", db)
        assert made.returncode == 0, made.stderr
        text = script.read_text()
        assert not [line for line in text.splitlines() if line.startswith(("import tgstore", "from tgstore"))]
        ran = subprocess.run([sys.executable, str(script), "--source"], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=300)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == source  # byte for byte
        full = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=300)
        (nodes,) = rows(db, "SELECT node_count FROM v_passes WHERE \"case\" = 'softmax' AND position = ? AND "
                            "renderer = 'C' AND pass_name = 'expander'", position)[0]
        assert f"=== after pass 'expander' (#1): {nodes} nodes ===" in full.stdout
        assert full.stdout.endswith(source)
        checked += 1
    assert checked >= 2  # softmax has several kernels, the later ones numbered by the name counter


def test_repro_of_a_missing_kernel_is_one_line_exit_2(tmp_path):
    proc = tgstore("repro", "softmax", "--kernel", "0", "--db", tmp_path / "none.db")
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1
