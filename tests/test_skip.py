"""Skip by what ran (issue 30): a sweep copies the run of a commit's parent when the commit changes no file that run
read, extracts it otherwise, and the copy holds what an extraction stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history, git
from test_sweep import CASES

pytestmark = pytest.mark.slow


def commit(repo: Path, subject: str, day: int) -> str:
    date = f"2025-01-{day:02d}T12:00:00+00:00"
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


def sweep(db: Path, repo: Path, cases: Path, rev: str, *extra: str):
    proc = tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C", "--stages", "none",
                   "--rev", rev, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc


CASE_ROWS = """SELECT k.name, cr.hash, rc.status, ms.hash, d.hash FROM run_cases rc JOIN cases k ON k.id = rc.case_id
JOIN case_results cr ON cr.id = rc.case_result_id LEFT JOIN match_sets ms ON ms.id = rc.match_set_id
LEFT JOIN blobs d ON d.id = rc.debug_blob_id WHERE rc.run_id = ? ORDER BY k.name"""


def stored(db: Path) -> dict[str, tuple]:
    """Per commit: its run's status, case results (case, result hash, status), pattern set, tree hash, version."""
    found = {}
    for sha, run_id, status, patterns, tree_hash, version in rows(
            db, "SELECT c.sha, r.id, r.status, ps.hash, c.tree_hash, c.version FROM runs r JOIN tinygrad_commits c "
                "ON c.id = r.commit_id LEFT JOIN pattern_sets ps ON ps.id = r.pattern_set_id WHERE r.is_current"):
        cases = rows(db, CASE_ROWS, run_id)
        found[sha] = (status, cases, patterns, tree_hash, version)
    return found


def first_release_swept(tinygrad_release, tmp_path: Path) -> tuple[Path, str, Path, Path, dict]:
    """A repository whose one commit is tinygrad 0.14.0, swept: (repo, its sha, cases file, database, what the run
    read)."""
    repo = tmp_path / "tinygrad"
    (first,) = build_release_history(repo, [("0.14.0", "tinygrad 0.14.0")], tinygrad_release)
    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    db = tmp_path / "swept.db"
    sweep(db, repo, cases, first)
    ((text,),) = rows(db, "SELECT b.text FROM runs r JOIN blobs b ON b.id = r.inputs_blob_id")
    return repo, first, cases, db, json.loads(text)


def test_a_commit_that_changes_only_files_the_run_did_not_read_is_copied(tinygrad_release, tmp_path):
    repo, first, cases, db, inputs = first_release_swept(tinygrad_release, tmp_path)
    read = set(inputs["files"])
    assert {"tinygrad/__init__.py", "tinygrad/tensor.py"} <= read
    package = sorted(p.relative_to(repo).as_posix() for p in (repo / "tinygrad").rglob("*.py"))
    unread = [p for p in package if p not in read]
    assert unread, "the run read every file of the package"
    # a file the run did not read changes: copied
    with open(repo / unread[0], "a") as f:
        f.write("# an edit no extraction reads\n")
    not_read = commit(repo, f"edit {unread[0]}", 2)
    # a file the run read changes (a comment: the output stays, but only an extraction can say so): extracted
    with open(repo / "tinygrad" / "tensor.py", "a") as f:
        f.write("# an edit the extraction reads\n")
    read_edit = commit(repo, "edit tinygrad/tensor.py", 3)
    # a new module where the run loaded modules from: an import could find it, so extracted
    (repo / "tinygrad" / "shadowing_module.py").write_text("X = 1\n")
    appeared = commit(repo, "add tinygrad/shadowing_module.py", 4)
    proc = sweep(db, repo, cases, f"{first}..{appeared}")
    copies = rows(db, "SELECT c.sha, r.copied_from, r.copy_reason, r.inputs_blob_id IS NOT NULL FROM runs r "
                      "JOIN tinygrad_commits c ON c.id = r.commit_id WHERE r.copied_from IS NOT NULL")
    assert copies == [(not_read, first, f"it changes no file {first}'s run read", 1)], proc.stderr
    extracted = rows(db, "SELECT c.sha FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                         "WHERE r.copied_from IS NULL ORDER BY c.git_position")
    assert extracted == [(first,), (read_edit,), (appeared,)]
    assert "1 of them copied" in proc.stderr.replace("\n", " "), proc.stderr
    # every commit extracted (--no-skip) stores the same facts, the copy's commit row included
    full = tmp_path / "full.db"
    proc = sweep(full, repo, cases, f"{first}~0..{appeared}", "--rev", first, "--no-skip")
    assert rows(full, "SELECT count(*) FROM runs WHERE copied_from IS NULL") == [(4,)]
    assert stored(db) == stored(full)
    facts = stored(db)
    assert facts[not_read][3] != facts[first][3]  # its own tree hash, though not extracted
    assert facts[read_edit][1] == facts[not_read][1]  # a comment: the same output, found by extracting


def test_a_clone_that_lacks_files_the_extraction_does_not_read(tinygrad_release, tmp_path):
    """A partial clone (objects missing, as tinygrad's own history has for some autogen files): a commit is extracted
    from what can be read when the run looked nowhere near the missing file, which is recorded on the run; a run
    that could have seen the missing file is untestable, naming it."""
    repo, first, cases, db, inputs = first_release_swept(tinygrad_release, tmp_path)
    looked = set(inputs["dirs"])
    unlooked = sorted(p.relative_to(repo).as_posix() for p in (repo / "tinygrad").rglob("*")
                      if p.is_dir() and "__pycache__" not in p.parts and p.relative_to(repo).as_posix() not in looked)
    assert unlooked, "the run listed every directory of the package"
    far, near = f"{unlooked[0]}/lost_far_away.py", "tinygrad/lost_nearby.py"
    shas, blobs = [], []
    for day, path in ((2, far), (3, near)):
        (repo / path).write_text(f"# only in the clone's trees: its object is deleted below ({path})\n")
        shas.append(commit(repo, f"add {path}", day))
        blobs.append(git(repo, "rev-parse", f"HEAD:{path}"))
    for blob in blobs:
        (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    proc = tgstore("ingest", "--db", db, "--repo", repo, "--cases", cases, "--renderers", "C", "--stages", "none",
                   "--rev", f"{first}..{shas[-1]}", "--no-skip")
    assert proc.returncode == 1, proc.stderr  # the untestable commit is a failed run
    found = {sha: (status, paths, error) for sha, status, paths, error in rows(
        db, "SELECT c.sha, r.status, r.missing_paths, r.error FROM runs r JOIN tinygrad_commits c ON "
            "c.id = r.commit_id WHERE r.is_current")}
    assert found[shas[0]] == ("ok", json.dumps([far]), None)
    assert found[shas[1]][:2] == ("failed", json.dumps([far, near]))
    assert found[shas[1]][2] == f"untestable: it could have read {near}, which the clone lacks"
    assert f"untestable: it could have read {near}" in proc.stderr.replace("\n", " ")
    facts = stored(db)
    assert facts[shas[0]][1] == facts[first][1]  # extracted without the file: the same output


# Put first in tinygrad/__init__.py: two optional files, one looked for with a stat (os.path.exists), one with open;
# either present turns NOOPT on, which changes every kernel's name and source.
OPTIONAL_FILES = """import os as _os
_here = _os.path.dirname(_os.path.abspath(__file__))
if _os.path.exists(_os.path.join(_here, {flag!r})):
  _os.environ["NOOPT"] = "1"
try:
  with open(_os.path.join(_here, {options!r})) as _f:
    if _f.read().strip() == "noopt": _os.environ["NOOPT"] = "1"
except FileNotFoundError:
  pass
"""


def current_copies(db: Path) -> dict[str, str | None]:
    return dict(rows(db, "SELECT c.sha, r.copied_from FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                         "WHERE r.is_current"))


def test_a_commit_that_adds_a_file_the_run_looked_for_is_extracted(tinygrad_release, tmp_path):
    """A package that reads optional data files in a directory nothing lists: the run records the paths it looked
    for and did not find, so the commit that adds one (found by open, or by a stat) is extracted, not copied, and
    stores what extracting every commit stores."""
    repo, first, cases, db, inputs = first_release_swept(tinygrad_release, tmp_path)
    package = repo / "tinygrad"
    quiet = sorted(p.relative_to(package).as_posix() for p in package.rglob("*")
                   if p.is_dir() and "__pycache__" not in p.parts
                   and f"tinygrad/{p.relative_to(package).as_posix()}" not in inputs["dirs"])
    assert len(quiet) >= 2, "the run listed almost every directory of the package"
    flag, options = f"{quiet[0]}/noopt.flag", f"{quiet[1]}/options.txt"
    init = package / "__init__.py"
    init.write_text(OPTIONAL_FILES.format(flag=flag, options=options) + init.read_text())
    probing = commit(repo, "look for two optional files", 2)
    (package / options).write_text("noopt\n")
    opened = commit(repo, f"add {options}", 3)
    (package / options).unlink()
    removed = commit(repo, f"remove {options}", 4)
    (package / flag).write_text("")
    stated = commit(repo, f"add {flag}", 5)
    unread = sorted(p for p in package.rglob("*.py") if p.relative_to(repo).as_posix() not in inputs["files"])[0]
    with open(unread, "a") as f:
        f.write("# read by nothing\n")
    copied = commit(repo, "edit a file nothing reads", 6)
    proc = sweep(db, repo, cases, f"{first}..{copied}")
    # (removing the file again gives back `probing`'s package: copied)
    assert current_copies(db) == {first: None, probing: None, opened: None, removed: probing, stated: None,
                                  copied: stated}, proc.stderr
    looked = {sha: json.loads(text) for sha, text in rows(
        db, "SELECT c.sha, b.text FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id JOIN blobs b ON "
            "b.id = r.inputs_blob_id WHERE r.is_current")}
    assert {f"tinygrad/{flag}", f"tinygrad/{options}"} <= set(looked[probing]["absent"])
    assert f"tinygrad/{options}" in looked[opened]["files"] and f"tinygrad/{flag}" in looked[stated]["files"]
    full = tmp_path / "full.db"
    sweep(full, repo, cases, f"{first}~0..{copied}", "--rev", first, "--no-skip")
    facts = stored(db)
    assert facts == stored(full)
    # the files matter: each turns NOOPT on, and every case's result changes with it
    assert facts[opened][1] != facts[probing][1] and facts[stated][1] == facts[opened][1] != facts[removed][1]
