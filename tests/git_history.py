"""Real git repositories whose commits are tinygrad release trees, for sweep and history tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "tgstore test", "GIT_AUTHOR_EMAIL": "test@tgstore.invalid",
           "GIT_COMMITTER_NAME": "tgstore test", "GIT_COMMITTER_EMAIL": "test@tgstore.invalid"}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], check=True,
                          capture_output=True, text=True, env={**os.environ, **GIT_ENV, **(env or {})}).stdout.strip()


def build_release_history(repo: Path, history: list[tuple[str | None, str]],
                          release: Callable[[str], Path], dates: list[str] | None = None) -> list[str]:
    """A git repository at `repo` whose commits are tinygrad release trees (tinygrad/ and a setup.py naming the
    version) or README edits on top of the previous tree; commit i is dated `dates[i]` (author and committer), by
    default 2025-01-(i+1) noon UTC. Returns the shas."""
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=master")
    shas = []
    for i, (version, subject) in enumerate(history):
        if version is not None:
            shutil.rmtree(repo / "tinygrad", ignore_errors=True)
            shutil.copytree(release(version) / "tinygrad", repo / "tinygrad",
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            (repo / "setup.py").write_text(f"from setuptools import setup\n\nsetup(name='tinygrad', "
                                           f"version='{version}', packages=['tinygrad'])\n")
        with open(repo / "README.md", "a") as f:
            f.write(f"{subject}\n")
        git(repo, "add", "--all")
        date = dates[i] if dates else f"2025-01-{i + 1:02d}T12:00:00+00:00"
        git(repo, "commit", "--quiet", "-m", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


