"""The skip by what ran, checked at random: from a real tinygrad package, single-file edits (any file under tinygrad/,
data files, new files in directories the run listed and in those it did not, deleted files, files where the run
looked and found nothing); for each, the sweep's own decision (history/skip.why_not_same on git's tree of a real
commit) and, whenever it would copy the base run, a fresh extraction of the edited commit, whose stored facts must
equal the base run's. Deciding costs a few git calls; only the copies are extracted.

Edits that a read would notice are made to be noticed: a Python file gets a line that raises at import, a data
file other bytes, a new module shadows or joins a package. So a copy where an extraction would read the edit shows
up as different facts (a failed run, other kernels), not as a silent pass.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from git_history import git

from tgstore.db import open_engine, upgrade
from tgstore.extract.child.toolchain import identify
from tgstore.git import Commit, tree_of
from tgstore.history.skip import machine_differs, why_not_same
from tgstore.history.sweep import extract_commit
from tgstore.pipeline import ExtractionPlan, ingest_result

# one small case, C only, no stages: the cheapest extraction that still imports tinygrad, schedules and renders
CASE = '''from tinygrad import Tensor


def case_add():
    return Tensor.empty(4, 4) + Tensor.empty(4, 4)
'''
RAISES = b"\nraise RuntimeError('an edit an extraction would run into')\n"
# what a run stores, as test_skip compares it: its status and pattern set, each case's result, status, matches, DEBUG
FACTS = """SELECT r.status, ps.hash, k.name, cr.hash, rc.status, ms.hash, d.hash
FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id LEFT JOIN pattern_sets ps ON ps.id = r.pattern_set_id
LEFT JOIN run_cases rc ON rc.run_id = r.id LEFT JOIN cases k ON k.id = rc.case_id
LEFT JOIN case_results cr ON cr.id = rc.case_result_id LEFT JOIN match_sets ms ON ms.id = rc.match_set_id
LEFT JOIN blobs d ON d.id = rc.debug_blob_id WHERE r.is_current AND c.sha = ?"""


@dataclass
class Sample:
    kind: str
    path: str
    copied: bool
    why: str | None  # why the sweep would extract it
    same: bool | None = None  # for a copy: whether a fresh extraction stored the base run's facts


@dataclass
class Figures:
    samples: list[Sample] = field(default_factory=list)
    decide_seconds: float = 0.0
    extract_seconds: float = 0.0
    base_seconds: float = 0.0

    def line(self) -> str:
        copies = [s for s in self.samples if s.copied]
        kinds = {k: sum(1 for s in self.samples if s.kind == k) for k in sorted({s.kind for s in self.samples})}
        return (f"{len(self.samples)} edits ({', '.join(f'{n} {k}' for k, n in kinds.items())}): {len(copies)} "
                f"copied and extracted again, {len(self.samples) - len(copies)} extracted; base extraction "
                f"{self.base_seconds:.1f}s, deciding {self.decide_seconds:.1f}s, extracting the copies "
                f"{self.extract_seconds:.1f}s")


class EditedHistory:
    """A git repository whose first commit is a tinygrad package (and a setup.py), extracted once; each edit is a
    commit on top of it (made with git's plumbing in a private index: no checkout)."""

    def __init__(self, base: Path, tinygrad: Path) -> None:
        self.repo = base / "repo"
        self.repo.mkdir(parents=True)
        shutil.copytree(tinygrad / "tinygrad", self.repo / "tinygrad",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (self.repo / "setup.py").write_text("from setuptools import setup\nsetup(name='tinygrad', version='0.0')\n")
        git(self.repo, "init", "--quiet", "--initial-branch=master")
        git(self.repo, "add", "--all")
        git(self.repo, "commit", "--quiet", "-m", "base")
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.index = base / "index"
        (base / "case.py").write_text(CASE)
        self.plan = ExtractionPlan(case_files=[base / "case.py"], renderers=["C"], stages="none", rewrites=0)
        self.engine = open_engine(base / "facts.db")
        upgrade(self.engine)
        self.work = base / "work"
        self.count = 0
        started = time.monotonic()
        self.inputs = self.extract(Commit(self.base, "2025-01-01T00:00:00+00:00", "base", 1))
        self.base_seconds = time.monotonic() - started
        self.tree = tree_of(self.repo, self.base)
        self.files = sorted(p for p in self.tree.entries if p.startswith("tinygrad/"))

    def extract(self, commit: Commit) -> dict:
        """Extract and store the commit; what its run read."""
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir()
        described, result = extract_commit(self.repo, commit, self.plan, self.work)
        report = ingest_result(self.engine, result, described, self.plan)
        with self.engine.connect() as conn:
            text = conn.exec_driver_sql("SELECT b.text FROM runs r JOIN blobs b ON b.id = r.inputs_blob_id "
                                        "WHERE r.id = ?", (report.run_id,)).scalar()
        return json.loads(text) if text else {}

    def facts(self, sha: str) -> list[tuple]:
        with self.engine.connect() as conn:
            return sorted(map(tuple, conn.exec_driver_sql(FACTS, (sha,)).fetchall()), key=repr)

    def commit(self, changes: dict[str, bytes | None]) -> str:
        """A commit on top of the base with these files written (None: removed)."""
        env = {"GIT_INDEX_FILE": str(self.index)}
        git(self.repo, "read-tree", self.base, env=env)
        for path, content in changes.items():
            if content is None:
                git(self.repo, "update-index", "--force-remove", "--", path, env=env)
                continue
            blob = subprocess.run(["git", "-C", str(self.repo), "hash-object", "-w", "--stdin"], input=content,
                                  capture_output=True, check=True).stdout.decode().strip()
            git(self.repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(self.repo, "write-tree", env=env)
        self.count += 1
        return git(self.repo, "commit-tree", tree, "-p", self.base, "-m", f"edit {self.count}")

    def content(self, path: str) -> bytes:
        return subprocess.run(["git", "-C", str(self.repo), "cat-file", "blob", f"{self.base}:{path}"],
                              capture_output=True, check=True).stdout


def random_edit(rng: random.Random, history: EditedHistory) -> tuple[str, str, dict[str, bytes | None]]:
    """(kind, path, the files it writes) of one random single-file edit."""
    inputs = history.inputs
    kind = rng.choices(["modify", "comment", "add", "shadow", "delete", "absent"], [40, 10, 25, 5, 10, 10])[0]
    dirs = sorted({p.rsplit("/", 1)[0] for p in history.files})
    if kind in ("modify", "comment", "delete"):
        path = rng.choice(history.files)
        if kind == "delete":
            return kind, path, {path: None}
        content = history.content(path)
        if kind == "comment":
            return kind, path, {path: content + (b"\n# a comment\n" if path.endswith(".py") else b"\n")}
        return kind, path, {path: content + (RAISES if path.endswith(".py") else b"\nother bytes\n")}
    if kind == "add":  # a new file, half the time where the run listed the entries
        listed = sorted(d for d in inputs["dirs"] if d in dirs)
        directory = rng.choice(listed if listed and rng.random() < 0.5 else dirs)
        name = rng.choice([f"edit_{rng.randrange(1000)}.py", f"ops_edit{rng.randrange(100)}.py", "data.json",
                           f"edit_{rng.randrange(1000)}.txt"])
        path = f"{directory}/{name}"
        return kind, path, {path: RAISES if name.endswith(".py") else b"{}\n"}
    if kind == "shadow":  # a package beside a module of the same name: the import system prefers it
        module = rng.choice([p for p in history.files if p.endswith(".py") and not p.endswith("__init__.py")])
        path = f"{module[:-3]}/__init__.py"
        return kind, path, {path: RAISES}
    path = rng.choice(inputs["absent"]) if inputs.get("absent") else f"{rng.choice(dirs)}/optional.json"
    return "absent", path, {path: RAISES if path.endswith(".py") else b"\x7fELF not a library\n"}


def check_random_edits(base: Path, tinygrad: Path, count: int, seed: int,
                       log: Callable[[str], None] = print) -> Figures:
    """`count` random edits of `tinygrad`'s package; every one the sweep would copy is extracted and compared."""
    history = EditedHistory(base, tinygrad)
    figures = Figures(base_seconds=history.base_seconds)
    machine = history.inputs["machine"]
    assert machine_differs(machine, [identify(sorted(machine))]) is None, "the machine's record is not stable"
    base_facts = history.facts(history.base)
    rng = random.Random(seed)
    for _ in range(count):
        started = time.monotonic()
        kind, path, changes = random_edit(rng, history)
        if changes.get(path) is not None and path in history.tree.entries and history.content(path) == changes[path]:
            continue
        sha = history.commit(changes)
        why = why_not_same(tree_of(history.repo, sha), history.inputs)
        sample = Sample(kind, path, why is None, why)
        figures.decide_seconds += time.monotonic() - started
        if sample.copied:
            started = time.monotonic()
            history.extract(Commit(sha, "2025-01-02T00:00:00+00:00", f"{kind} {path}", 2))
            figures.extract_seconds += time.monotonic() - started
            sample.same = history.facts(sha) == base_facts
            if not sample.same:
                log(f"seed {seed}: copying the base run to {kind} {path} would store other facts: "
                    f"{history.facts(sha)} != {base_facts}")
        figures.samples.append(sample)
    return figures
