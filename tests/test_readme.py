"""Every example in README.md runs, in order, on what the set-up commands built: the README's first line (install +
ingest of the installed tinygrad into tgstore.db), the tests' release cache, and, for the sweep examples, a
TGSTORE_REPO whose commits are tinygrad releases tagged as tinygrad tags them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from git_history import build_release_history, git
from slack import generous
from tinygrad_releases import REPO_ROOT
from web_server import free_port

README = REPO_ROOT / "README.md"
TGSTORE = [sys.executable, "-m", "tgstore"]
HISTORY = [("0.12.0", "tinygrad 0.12.0"), (None, "docs: a readme edit"), ("0.13.0", "tinygrad 0.13.0"),
           (None, "docs: another readme edit"), ("0.14.0", "tinygrad 0.14.0")]


def setup_commands() -> list[str]:
    """The README's first two lines (indented code)."""
    lines = README.read_text().splitlines()
    assert lines[0].startswith("    ") and lines[1].startswith("    "), "the README starts with the set-up commands"
    return [lines[0].strip(), lines[1].strip()]


def examples() -> list[str]:
    """The command lines of the README's ```sh blocks, in order (comments stripped)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            if line.strip():
                found.append(line)
    return found


def split(line: str) -> tuple[list[str], str | None, int]:
    """(argv, a file stdout goes to, expected exit status) of an example line."""
    command, _, comment = line.partition("  #")
    words = shlex.split(command)
    target = None
    if ">" in words:
        target = words[words.index(">") + 1]
        words = words[:words.index(">")]
    expected = 1 if "exits 1" in comment else 0
    return words, target, expected


def test_the_setup_commands_are_what_ci_runs() -> None:
    first, second = setup_commands()
    assert first.endswith(".venv/bin/pip install -q -e '.[test]' && .venv/bin/tgstore ingest --db tgstore.db")
    assert second == ".venv/bin/ruff check . && .venv/bin/pytest -q"
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert first in ci and second in ci


def test_every_readme_example_runs_in_order(tmp_path: Path, tinygrad_release, readme_db: Path) -> None:
    for version in ("0.12.0", "0.13.0", "0.14.0"):
        tinygrad_release(version)
    work = tmp_path / "work"
    work.mkdir()
    for name in (".cache", "docs"):
        (work / name).symlink_to(REPO_ROOT / name)
    shutil.copy(readme_db, work / "tgstore.db")  # what the README's first line built (tests/readme_db.py)
    repo = tmp_path / "tinygrad"
    shas = build_release_history(repo, HISTORY, tinygrad_release)
    for (version, _), sha in zip(HISTORY, shas, strict=True):
        if version:
            git(repo, "tag", f"v{version}", sha)
    env = {**os.environ, "TGSTORE_REPO": str(repo)}
    env.pop("TGSTORE_DB", None)
    for line in examples():
        words, target, expected = split(line)
        assert words[0] == "tgstore", line
        argv = [*TGSTORE, *words[1:]]
        if words[1] == "serve":
            serve_briefly(argv, work, env)
            continue
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=generous(),
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == expected, f"{line}\n-> {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
        if target and target != "/dev/null":
            (work / target).write_text(proc.stdout)
        check_output(words, proc.stdout, proc.stderr)


def check_output(words: list[str], out: str, err: str) -> None:
    """What some examples must show, beyond their exit status."""
    joined = " ".join(words)
    if joined.startswith("tgstore suites"):
        assert re.search(r"^builtin\s+\d{2}\s", out, re.M) and re.search(r"^models\s+2\s", out, re.M)
    elif joined.startswith("tgstore diff 0.12.0 0.14.0 --case add --renderer C"):
        assert "int core_id" in out  # 0.12's CPU kernels took a core id; 0.14's do not
    elif joined.startswith("tgstore check"):
        assert "no kernel changed" in out
    elif joined.startswith("tgstore query case_at_commit -p commit=0.14.0 -p case_name=command"):
        assert "three_kernels.py:9 in main" in out
    elif joined.startswith("tgstore parity"):
        assert "20-final_rewrite" in out
    elif joined.startswith("tgstore merge") and "--json" in words:
        assert '"runs_added": 0' in out and '"rows_added": {}' in out
    elif "--dask" in words:
        assert "worker thread" in err and "skipped" in err
    elif joined.startswith("tgstore bisect"):
        assert out.split()[0] in out and "first commit" in err


def serve_briefly(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    """`tgstore serve` blocks: start it on a free port, load its index, stop it as Ctrl-C would."""
    port = free_port()
    process = subprocess.Popen([*argv, "--port", str(port)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                assert process.poll() is None and time.monotonic() < deadline, "tgstore serve did not start"
                time.sleep(0.3)
        assert page.status_code == 200 and "Views" in page.text
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
