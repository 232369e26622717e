"""Skip by what ran (issues 30, 38): a sweep copies the run of a commit's parent when the commit changes no file that
run read, looked for or listed, on a machine that identifies as the run's did; it extracts it otherwise, and the copy
holds what an extraction stores. The decision functions and the input watch alone first (fast), then sweeps over
built histories (slow: they extract)."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli import rows, tgstore
from git_history import build_release_history, git
from test_sweep import CASES

from tgstore.extract.child import settings as run_settings
from tgstore.extract.child import toolchain
from tgstore.extract.child.inputs import git_blob_id, listing_hash
from tgstore.git import Tree
from tgstore.history.skip import machine_differs, needed_missing, touches, why_not_same
from tgstore.store.runs import StoredRun

CHILD_PARENT = Path(__file__).resolve().parent.parent / "tgstore" / "extract"


def tree(files: dict[str, str]) -> Tree:
    """A package tree of these files (path -> content)."""
    return Tree({path: ("100644", git_blob_id(text.encode())) for path, text in files.items()})


BASE = {"tinygrad/__init__.py": "import tinygrad.a", "tinygrad/a.py": "A = 1", "tinygrad/b.py": "B = 2",
        "tinygrad/data/table.txt": "1 2 3", "tinygrad/quiet/notes.txt": "nothing reads this",
        "tinygrad/quiet/deep/x.txt": "x", "setup.py": "v1"}
# what a run of BASE recorded: it loaded __init__ and a, stat()ed quiet/deep/, looked for data/extra.txt and
# quiet/optional.json, and listed tinygrad/
INPUTS = {"files": {p: git_blob_id(BASE[p].encode()) for p in ("tinygrad/__init__.py", "tinygrad/a.py")},
          "dirs": {"tinygrad": listing_hash(["__init__.py", "a.py", "b.py", "data", "quiet"])},
          "absent": ["tinygrad/data/extra.txt", "tinygrad/quiet/optional.json"], "present": ["tinygrad/quiet/deep"],
          "versions": {"setup.py": git_blob_id(b"v1"), "pyproject.toml": None}}


def edited(**changes: str | None) -> Tree:
    files = {**BASE}
    for key, text in changes.items():
        path = key.replace("__", "/").replace("_DOT_", ".")
        if text is None:
            files.pop(path)
        else:
            files[path] = text
    return tree(files)


def test_why_not_same_names_the_first_difference_of_each_kind() -> None:
    assert why_not_same(tree(BASE), INPUTS) is None
    cases = [
        (edited(tinygrad__b_DOT_py="B = 3"), None),  # a file nothing read
        (edited(tinygrad__quiet__notes_DOT_txt="edited"), None),  # ... in a directory nothing listed
        (edited(tinygrad__quiet__other_DOT_txt="new"), None),  # a new file where nothing looked
        (edited(tinygrad__a_DOT_py="A = 2"), "tinygrad/a.py changed"),
        (edited(tinygrad__a_DOT_py=None), "tinygrad/a.py is gone"),
        (edited(setup_DOT_py="v2"), "setup.py changed"),
        (edited(pyproject_DOT_toml="[project]"), "pyproject.toml appeared"),
        (edited(tinygrad__c_DOT_py="C = 1"), "the entries of tinygrad/ changed"),
        (edited(tinygrad__data__extra_DOT_txt="found"),
         "tinygrad/data/extra.txt, which its run looked for and did not find, appeared"),
        (edited(tinygrad__quiet__optional_DOT_json="{}"),
         "tinygrad/quiet/optional.json, which its run looked for and did not find, appeared"),
        # a directory where the run looked for a file: an open of it would find something else now
        (edited(tinygrad__quiet__optional_DOT_json__x="{}"),
         "tinygrad/quiet/optional.json, which its run looked for and did not find, appeared"),
        (edited(tinygrad__quiet__deep__x_DOT_txt=None), "tinygrad/quiet/deep/ is gone"),
    ]
    for after, expected in cases:
        assert why_not_same(after, INPUTS) == expected, after.entries.keys()


def test_touches_guesses_a_wait_only_when_nothing_read_changed() -> None:
    before = tree(BASE)
    assert not touches(before, edited(tinygrad__b_DOT_py="B = 3"), INPUTS)
    assert not touches(before, edited(tinygrad__quiet__other_DOT_txt="new"), INPUTS)
    assert touches(before, edited(tinygrad__a_DOT_py="A = 2"), INPUTS)
    assert touches(before, edited(tinygrad__quiet__optional_DOT_json="{}"), INPUTS)
    assert touches(before, edited(tinygrad__quiet__deep__x_DOT_txt=None), INPUTS)
    assert touches(before, edited(tinygrad__c_DOT_py="C = 1"), INPUTS)


def test_a_partial_clone_is_untestable_where_the_run_looked_for_what_it_lacks() -> None:
    missing = [["tinygrad/quiet/optional.json", "tinygrad/quiet"], ["tinygrad/quiet/notes.txt", "tinygrad/quiet"],
               ["tinygrad/a.py", "tinygrad"], ["tinygrad/far/away.py", "tinygrad"]]
    assert needed_missing(missing, INPUTS) == ["tinygrad/quiet/optional.json", "tinygrad/a.py", "tinygrad/far/away.py"]
    assert needed_missing(missing, None) == [path for path, _d in missing]
    assert needed_missing(missing, {"settings": {}}) == [path for path, _d in missing]  # a capture run's inputs


def test_a_copy_needs_every_machine_that_would_extract_to_identify_alike() -> None:
    recorded = {"python": "3.11.7", "program:clang": "/usr/bin/clang abc Debian clang version 14.0.6",
                "path:/usr/lib/wsl/lib": None}
    assert machine_differs(recorded, [dict(recorded)]) is None
    assert machine_differs(recorded, [dict(recorded), dict(recorded)]) is None
    other = {**recorded, "program:clang": "/usr/bin/clang def Debian clang version 15.0.7"}
    assert machine_differs(recorded, [dict(recorded), other]) == (
        "program:clang is /usr/bin/clang def Debian clang version 15.0.7 where it would be extracted (its run had "
        "/usr/bin/clang abc Debian clang version 14.0.6)")
    appeared = {**recorded, "path:/usr/lib/wsl/lib": "directory"}
    assert machine_differs(recorded, [appeared]).startswith("path:/usr/lib/wsl/lib is directory")
    assert machine_differs(recorded, [{k: v for k, v in recorded.items() if k != "python"}]).startswith(
        "python is absent")
    assert machine_differs(None, [recorded]) == "its run did not record the machine it used"
    assert machine_differs(recorded, []) == "no machine to extract on was probed"


ASKED = {"suite": "s1", "backend": "CPU", "renderers": ["C"], "stages": ["C"], "rewrites": 20, "debug": 4,
         "extractor": "e1"}
# for every setting of the table: a held value that does not hold ASKED's
SHORT_OF = {"suite": "s2", "backend": "METAL", "renderers": ["LLVM"], "stages": [], "rewrites": 10, "debug": 2,
            "extractor": "e2"}


def test_every_setting_of_the_table_can_make_a_run_fall_short() -> None:
    assert set(SHORT_OF) == set(run_settings.SETTINGS)  # a new setting needs a row here too
    assert run_settings.lacking(ASKED, ASKED) == []
    more = {**ASKED, "renderers": ["C", "LLVM"], "stages": ["C", "LLVM"], "rewrites": 50}
    assert run_settings.lacking(more, ASKED) == []  # more than asked holds what was asked
    for name, value in SHORT_OF.items():
        gaps = run_settings.lacking({**ASKED, name: value}, ASKED)
        assert len(gaps) == 1 and run_settings.SETTINGS[name][1] in gaps[0], (name, gaps)
        assert run_settings.lacking({k: v for k, v in ASKED.items() if k != name}, ASKED) == [
            f"{run_settings.SETTINGS[name][1]} (not recorded by its run)"]
    assert run_settings.lacking({**ASKED, "stages": []}, ASKED) == ["stages C (it has none)"]
    assert run_settings.lacking({**ASKED, "rewrites": 10}, ASKED) == ["20 rewrite steps a pass (it has 10)"]


def test_a_stored_run_holds_its_recorded_settings_and_every_renderer_it_has() -> None:
    recorded = json.dumps({**ASKED, "renderers": ["C"]})
    run = StoredRun(7, "ok", "C,LLVM", recorded, 4, "s1", "CPU")  # LLVM carried from the run it replaced
    assert run.covers({**ASKED, "renderers": ["C", "LLVM"]})
    assert run.lacking({**ASKED, "stages": ["C", "LLVM"]}) == ["stages C,LLVM (it has C)"]
    assert StoredRun(7, "failed", "C", recorded, 4, "s1", "CPU").lacking(ASKED) == ["its run is failed"]
    old = StoredRun(3, "ok", "C", None, 4, "s1", "CPU")  # stored before runs recorded their settings
    assert old.lacking({k: ASKED[k] for k in ("suite", "backend", "renderers", "debug")}) == []
    assert old.lacking(ASKED) == ["stages (not recorded by its run)", "rewrite steps a pass (not recorded by its run)",
                                  "extractor code (not recorded by its run)"]


WATCHED = """
import ctypes, json, os, pathlib, subprocess, sys
from child.inputs import InputWatch
root = pathlib.Path(sys.argv[1])
watch = InputWatch(root, ignored=[sys.argv[2]])
watch.start()
sys.path.insert(0, str(root))
import tinygrad
print(json.dumps(watch.record()))
"""
PACKAGE = """
import ctypes, os, pathlib, subprocess
here = pathlib.Path(__file__).parent
try:
    open(here / "data" / "optional.json").read()          # opened, not there
except FileNotFoundError:
    pass
os.path.exists(here / "quiet" / "flag")                   # stat()ed, not there
(here / "data").is_dir()                                  # stat()ed, there
try:
    os.listdir(here / "plugins")                          # listed, not there
except FileNotFoundError:
    pass
try:
    import tinygrad.missing_module                        # the import system looks, finds nothing
except ImportError:
    pass
from tinygrad import loaded                               # loaded
open(here / "data" / "table.txt").read()                  # opened, there
ctypes.CDLL({libc!r})                                     # a system library
subprocess.run(["true"])                                  # a program
os.path.exists({outside!r})                               # the machine: not there
"""


def test_the_input_watch_records_what_a_run_read_looked_for_and_used(tmp_path: Path) -> None:
    """A real child-side watch over a small package that reads, probes, lists, imports, loads a library and starts
    a program: every one of those is in the record."""
    libc = ctypes.util.find_library("c") or "libc.so.6"
    outside = "/nonexistent-tgstore-test/flag"  # outside the temporary directory, which is no machine key
    package = tmp_path / "root" / "tinygrad"
    (package / "data").mkdir(parents=True)
    (package / "quiet").mkdir()
    (package / "__init__.py").write_text(PACKAGE.format(libc=libc, outside=outside))
    (package / "loaded.py").write_text("X = 1\n")
    (package / "data" / "table.txt").write_text("1 2 3\n")
    env = {**os.environ, "PYTHONPATH": str(CHILD_PARENT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", WATCHED, str(package.parent), str(tmp_path / "ignored")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert set(record["files"]) == {"tinygrad/__init__.py", "tinygrad/loaded.py", "tinygrad/data/table.txt"}
    assert record["files"]["tinygrad/loaded.py"] == git_blob_id(b"X = 1\n")
    assert {"tinygrad/data/optional.json", "tinygrad/quiet/flag", "tinygrad/plugins"} <= set(record["absent"])
    # the import system found no missing_module in tinygrad/'s entries, which it listed: they are recorded
    assert record["dirs"]["tinygrad"] == listing_hash(["__init__.py", "loaded.py", "data", "quiet"])
    assert "tinygrad/data" in record["dirs"]  # a file was opened there: its entries count
    assert record["present"] == []  # data/ is among dirs (a file was opened there): existence alone is not kept
    machine = record["machine"]
    assert machine["python"] == sys.version and machine["cpu"] == toolchain.cpu()
    assert machine["program:true"] is not None and machine["program:true"] == toolchain.program("true")
    assert machine[f"path:{toolchain.portable(outside)}"] is None
    assert any(k.startswith("library:") and machine[k] for k in machine), machine
    assert record["subprocesses"] == ["true"]
    assert not [k for k in machine if "__pycache__" in k or str(tmp_path / "ignored") in k]


def test_machine_keys_identify_again_where_another_machine_would_look(tmp_path: Path) -> None:
    home = os.path.expanduser("~")
    assert toolchain.portable(os.path.join(home, "x", "y")) == "$home/x/y"
    assert toolchain.local("$home/x/y") == os.path.join(home, "x", "y")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.so").write_bytes(b"one")
    key = f"dir:{tmp_path / 'lib'}"
    first = toolchain.identify([key, f"file:{tmp_path / 'lib' / 'a.so'}", f"path:{tmp_path / 'none'}"])
    assert first[f"path:{tmp_path / 'none'}"] is None
    (tmp_path / "lib" / "b.so").write_bytes(b"two")  # a library search would find it now
    assert toolchain.identify([key])[key] != first[key]
    (tmp_path / "lib" / "b.so").unlink()
    (tmp_path / "lib" / "a.so").write_bytes(b"three")  # another size: a stat() would see it
    assert toolchain.identify([key])[key] != first[key]


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


def assert_every_copy_holds(figures, tier: str) -> None:
    print(f"skip by what ran, {tier}: {figures.line()}")
    copies = [s for s in figures.samples if s.copied]
    # the check is not vacuous: some edits were copied (and extracted again), some the sweep would extract
    assert copies and len(copies) < len(figures.samples), figures.line()
    assert [(s.kind, s.path) for s in copies if not s.same] == [], figures.line()


def test_random_edits_copied_by_the_sweep_extract_to_the_same_facts_fast(tmp_path: Path) -> None:
    """A handful of random single-file edits of the installed tinygrad (a real release): every edit the sweep would
    copy is extracted again and stores what the base run stored (tests/skip_edits.py)."""
    from skip_edits import check_random_edits

    from tgstore.extract.runner import resolve_tinygrad_root

    figures = check_random_edits(tmp_path, resolve_tinygrad_root(None), 6, seed=int(os.environ.get("TGSTORE_SEED",
                                                                                                  "3")))
    assert_every_copy_holds(figures, "fast tier")


EDIT_CHUNKS = 4  # 200 edits in four tests, so that the two pytest workers share them (some 80 copies extracted)


@pytest.mark.parametrize("chunk", range(EDIT_CHUNKS))
def test_random_edits_copied_by_the_sweep_extract_to_the_same_facts(tinygrad_release, tmp_path: Path,
                                                                     chunk: int) -> None:
    """200 random single-file edits of tinygrad 0.14.0, 50 a test (slow: about two in five are copies, each
    extracted again)."""
    from skip_edits import check_random_edits

    figures = check_random_edits(tmp_path, tinygrad_release("0.14.0"),
                                 int(os.environ.get("TGSTORE_EDITS", "200")) // EDIT_CHUNKS,
                                 seed=int(os.environ.get("TGSTORE_SEED", "38")) + chunk)
    assert_every_copy_holds(figures, f"slow tier, part {chunk + 1} of {EDIT_CHUNKS}")
