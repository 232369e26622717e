"""CI's set-up fails loudly: `.ci/run` (the README's first two lines) stops with one line saying why when clang or
Chromium is missing and cannot be installed, instead of running a suite whose clang and Chromium tests skip. Run for
real, in a copy of .ci/, with a PATH that lacks what each case needs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from test_readme import setup_commands
from tinygrad_releases import REPO_ROOT

APT_REFUSES = """#!/bin/sh
echo "Reading package lists..."
echo "E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)" >&2
exit 100
"""
APT_INSTALLS_NOTHING = "#!/bin/sh\nexit 0\n"


def ci_copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / ".ci", repo / ".ci")
    return repo


def bin_dir(tmp_path: Path, tools: list[str], scripts: dict[str, str] | None = None) -> Path:
    """A directory to be the whole PATH: links to these system tools, and these scripts."""
    found = tmp_path / "bin"
    found.mkdir()
    for tool in tools:
        (found / tool).symlink_to(shutil.which(tool))
    for name, text in (scripts or {}).items():
        (found / name).write_text(text)
        (found / name).chmod(0o755)
    return found


def run(command: list[str], path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env={"PATH": str(path), "HOME": str(cwd)}, cwd=cwd, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_ci_runs_the_readme_lines_and_stops_when_the_first_fails() -> None:
    first, second = setup_commands()
    lines = [ln for ln in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', f"{first} || exit", second]
    assert first.startswith("bash .ci/tools && ")


def test_without_apt_ci_stops_with_one_line(tmp_path: Path) -> None:
    repo = ci_copy(tmp_path)
    proc = run([str(repo / ".ci" / "run")], bin_dir(tmp_path, ["bash", "dirname"]), repo)
    assert proc.returncode == 1 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == ["error: clang chromium not installed, and no apt-get to install them: "
                                        "install clang chromium, then run this again"]
    assert sorted(p.name for p in repo.iterdir()) == [".ci"]  # nothing else ran: no venv, no database


def test_when_apt_get_fails_ci_stops_with_its_reason(tmp_path: Path) -> None:
    repo = ci_copy(tmp_path)
    proc = run([str(repo / ".ci" / "run")], bin_dir(tmp_path, ["bash", "dirname"], {"apt-get": APT_REFUSES}), repo)
    assert proc.returncode == 1 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == ["error: apt-get could not install clang chromium: E: Could not open lock file "
                                        "/var/lib/apt/lists/lock - open (13: Permission denied)"]
    assert sorted(p.name for p in repo.iterdir()) == [".ci"]


def test_the_tools_step_checks_what_apt_get_installed(tmp_path: Path) -> None:
    repo = ci_copy(tmp_path)
    tools = bin_dir(tmp_path, ["bash"], {"apt-get": APT_INSTALLS_NOTHING, "chromium": "#!/bin/sh\n",
                                         "cargo": "#!/bin/sh\n"})
    proc = run(["bash", str(repo / ".ci" / "tools")], tools, repo)
    assert (proc.returncode, proc.stderr) == (1, "error: apt-get installed clang, but there is still no clang on "
                                                 "PATH\n")
    (tools / "clang").symlink_to(tools / "chromium")  # both present: nothing to install, nothing said
    (tools / "apt-get").unlink()
    proc = run(["bash", str(repo / ".ci" / "tools")], tools, repo)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert os.access(repo / ".ci" / "tools", os.X_OK) and os.access(repo / ".ci" / "run", os.X_OK)


def test_without_cargo_the_tools_step_stops_with_one_line(tmp_path: Path) -> None:
    """The emitter corpus needs cargo (rustup's, not apt's): missing, CI stops here, not at a failing test."""
    repo = ci_copy(tmp_path)
    tools = bin_dir(tmp_path, ["bash"], {"clang": "#!/bin/sh\n", "chromium": "#!/bin/sh\n"})
    proc = run(["bash", str(repo / ".ci" / "tools")], tools, repo)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == ["error: cargo not found (the Svod emitter corpus, tests/svod_emitter, is "
                                        "built with it): install Rust with rustup, then run this again"]
