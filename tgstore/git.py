"""Everything tgstore asks git: a repository's top, revisions and first-parent lines, ancestry, the package of a
commit (`git archive`, object ids for "did the package change"), and temporary checkouts (package only, or a whole
worktree) that a killed sweep's successor cleans up. Sweeps, bisects, Dask tasks and the port queue all come here."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tgstore import tempdirs

WORKTREE_PREFIX = tempdirs.PREFIX + "wt-"
LOG_FORMAT = "%H%x00%cI%x00%s"
# git settings that would make a checkout do more than write the tree (hooks, LFS smudging) are switched off
GIT_QUIET = ["-c", "core.hooksPath=/dev/null", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process=",
             "-c", "filter.lfs.required=false"]

_worktree_lock = threading.Lock()


class GitError(Exception):
    """A problem with the repository or the revisions, worth a one-line message; nothing has been written."""


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # committer date, strict ISO 8601 (git's %cI, as child.git_info records it)
    subject: str
    position: int | None = None  # on the first-parent line: what history order sorts by (tgstore.history)

    def git(self) -> dict[str, str | int | None]:
        return {"sha": self.sha, "date": self.date, "subject": self.subject, "position": self.position}


# inherited from a git hook, these would point every command at the wrong repository
GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES")


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_VARS}


def _run_git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *GIT_QUIET, "-C", str(repo), *args], capture_output=True, text=True,
                          env=_git_env(), stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise GitError(f"`git {' '.join(args)}` in {repo} failed: {proc.stderr.strip() or proc.returncode}")
    return proc


def open_repo(path: Path) -> Path:
    """The resolved top level of the git repository (work tree or bare) at `path`, or a GitError saying why not."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GitError(f"{p} does not exist; --repo must be a tinygrad git repository (a clone, or a bare one)")
    if not p.is_dir():
        raise GitError(f"{p} is not a directory; --repo must be a tinygrad git repository")
    if not any(p.iterdir()):
        raise GitError(f"{p} is empty (a submodule not checked out?): run `git submodule update --init {path}` "
                         "where there is network, or pass --repo with a tinygrad clone")
    p = p.resolve()
    if shutil.which("git") is None:
        raise GitError("git is not installed (sweeps check commits out with `git worktree`)")
    bare = _run_git(p, "rev-parse", "--is-bare-repository", check=False)
    if bare.returncode != 0:
        raise GitError(f"{p} is not a git repository; --repo must be a tinygrad git repository")
    if bare.stdout.strip() == "true":
        git_dir = Path(_run_git(p, "rev-parse", "--absolute-git-dir").stdout.strip()).resolve()
        if git_dir != p:
            raise GitError(f"{p} is inside the bare git repository {git_dir}; pass {git_dir}")
        return p
    top = Path(_run_git(p, "rev-parse", "--show-toplevel").stdout.strip()).resolve()
    if top != p:
        raise GitError(f"{p} is not the top of a git repository but a directory inside {top}; pass the repository")
    return p


def verify_rev(repo: Path, rev: str) -> str:
    """The full sha of the commit `rev` names in `repo`."""
    if not rev or rev.startswith("-"):
        raise GitError(f"invalid revision {rev!r}")
    proc = _run_git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise GitError(f"unknown revision {rev!r}: no commit, branch or tag of that name in {repo}")
    return proc.stdout.strip()


def first_parent_position(repo: Path, sha: str) -> int | None:
    """`sha`'s position on its first-parent line (1 for a root commit); None in a shallow clone, where the count
    would start at the cut."""
    if _run_git(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true":
        return None
    return int(_run_git(repo, "rev-list", "--count", "--first-parent", sha).stdout.strip())


def _log(repo: Path, *args: str) -> list[Commit]:
    """Commits as `git log ARGS` lists them (without positions)."""
    proc = _run_git(repo, "log", f"--format={LOG_FORMAT}", *args)
    commits = []
    for line in proc.stdout.splitlines():
        if line:
            sha, date, subject = line.split("\x00", 2)
            commits.append(Commit(sha, date, subject))
    return commits


def line_of(repo: Path, a: str, b: str) -> list[Commit]:
    """The commits of `a..b` along b's first-parent line, oldest first, with their positions."""
    found = _log(repo, "--first-parent", f"{a}..{b}")  # newest first
    tip = first_parent_position(repo, b) if found else None
    if tip is not None:
        found = [Commit(c.sha, c.date, c.subject, tip - i) for i, c in enumerate(found)]
    return found[::-1]


def single(repo: Path, sha: str) -> Commit:
    commit = _log(repo, "--no-walk", sha)[0]
    return Commit(commit.sha, commit.date, commit.subject, first_parent_position(repo, commit.sha))


def split_range(spec: str) -> tuple[str, str] | None:
    """`A..B` -> (A, B) with an empty side meaning HEAD, like git; anything else -> None."""
    if "..." in spec:
        raise GitError(f"{spec!r}: A...B (symmetric difference) is not supported; use A..B")
    if ".." not in spec:
        return None
    a, b = spec.split("..", 1)
    return a or "HEAD", b or "HEAD"


def resolve_revs(repo: Path, revs: list[str]) -> list[Commit]:
    """The commits `revs` name, in sweep order: each `A..B` oldest first along B's first parents, B included and A
    not; a single rev (sha, branch, tag) is that commit. Duplicates are kept once, at their first place."""
    commits: list[Commit] = []
    seen: set[str] = set()
    for spec in revs:
        spec = spec.strip()
        ends = split_range(spec)
        if ends:
            a, b = verify_rev(repo, ends[0]), verify_rev(repo, ends[1])
            found = line_of(repo, a, b)
            if not found:
                raise GitError(f"{spec!r} selects no commits ({ends[1]} is {ends[0]} or one of its ancestors)")
        else:
            found = [single(repo, verify_rev(repo, spec))]
        for commit in found:
            if commit.sha not in seen:
                seen.add(commit.sha)
                commits.append(commit)
    return commits


def is_ancestor(repo: Path, a: str, b: str) -> bool:
    proc = _run_git(repo, "merge-base", "--is-ancestor", a, b, check=False)
    if proc.returncode not in (0, 1):
        raise GitError(f"`git merge-base --is-ancestor` in {repo} failed: {proc.stderr.strip()}")
    return proc.returncode == 0


# ---------------------------------------------------------------- worktrees


def _remove_worktree(repo: Path, tree: Path) -> None:
    _run_git(repo, "worktree", "remove", "--force", "--force", str(tree), check=False)
    shutil.rmtree(tree.parent, ignore_errors=True)


def clean_stale_worktrees(repo: Path) -> int:
    """Remove what a killed sweep left behind: its worktrees of `repo` (`git worktree prune` alone keeps those whose
    directory still exists) and every tgstore temporary directory whose owner process is gone; returns how many
    worktrees. A worktree is ours if it is <tmp>/tgstore-wt-*/tree."""
    removed = 0
    with _worktree_lock:
        _run_git(repo, "worktree", "prune", check=False)
        listing = _run_git(repo, "worktree", "list", "--porcelain", check=False).stdout
        for line in listing.splitlines():
            if not line.startswith("worktree "):
                continue
            tree = Path(line[len("worktree "):])
            if tree.name != "tree" or not tree.parent.name.startswith(WORKTREE_PREFIX):
                continue
            if not tempdirs.owner_alive(tree.parent):
                _remove_worktree(repo, tree)
                removed += 1
        tempdirs.clean_stale()
        _run_git(repo, "worktree", "prune", check=False)
    return removed


# What an extraction reads of a commit: the package, and the files its version is read from (header.find_version).
PACKAGE_PATHS = ("tinygrad", "setup.py", "pyproject.toml")


def commit_archive(repo: Path, sha: str, *, whole_tree: bool = False) -> bytes:
    """`git archive` (tar) of the commit's package and the files its version is read from, or of its whole tree."""
    present = [] if whole_tree else _run_git(repo, "ls-tree", "--name-only", sha, "--", *PACKAGE_PATHS).stdout.split()
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", sha, "--", *present],
                             capture_output=True, timeout=300)
    if archive.returncode != 0:
        raise GitError(f"git archive {sha[:12]} failed: {archive.stderr.decode(errors='replace').strip()}")
    return archive.stdout


def package_keys(repo: Path, shas: list[str]) -> dict[str, str]:
    """Each commit's package identity: git's object ids of its PACKAGE_PATHS ("missing" where absent), one
    `git cat-file --batch-check` for all of them. An extraction sees only those paths (package_checkout), so
    commits with equal keys produce equal output: a sweep copies the run of one to the others (runs.copy_run)
    instead of extracting them; about 30% of tinygrad's first-parent commits (docs, tests, CI) keep the package."""
    if not shas:
        return {}
    lines = "".join(f"{sha}:{path}\n" for sha in shas for path in PACKAGE_PATHS)
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-check=%(objectname)"], input=lines,
                          capture_output=True, text=True, env=_git_env())
    if proc.returncode != 0:
        raise GitError(f"`git cat-file` in {repo} failed: {proc.stderr.strip()}")
    # a path the commit lacks is reported as "<sha>:<path> missing"
    ids = ["missing" if line.endswith(" missing") else line.split()[0] for line in proc.stdout.splitlines()]
    width = len(PACKAGE_PATHS)
    return {sha: " ".join(ids[i * width:(i + 1) * width]) for i, sha in enumerate(shas)}


def unpack(archive: bytes, into: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


@contextmanager
def package_checkout(repo: Path, sha: str) -> Iterator[Path]:
    """A temporary directory holding only `sha`'s tinygrad package (and version files), written by `git archive`:
    a few MB instead of the whole tree, no worktree bookkeeping, and no lock shared with the other jobs."""
    base = tempdirs.make("pkg")
    try:
        yield unpack(commit_archive(repo, sha), base / "tree")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def checkout(repo: Path, sha: str) -> Iterator[Path]:
    """A temporary detached worktree of `sha` (the whole tree: capture mode runs the commit's tests), removed on
    exit whatever happens."""
    base = tempdirs.make("wt")
    tree = base / "tree"
    try:
        with _worktree_lock:
            _run_git(repo, "worktree", "add", "--detach", "--quiet", str(tree), sha)
        yield tree
    finally:
        with _worktree_lock:
            _remove_worktree(repo, tree)
            if tree.exists() or base.exists():
                shutil.rmtree(base, ignore_errors=True)
            _run_git(repo, "worktree", "prune", check=False)


# ---------------------------------------------------------------- trees and objects (skip by what ran, partial clones)

REGULAR_MODES = ("100644", "100755")


@dataclass(frozen=True)
class Tree:
    """A commit's files under PACKAGE_PATHS: path -> (mode, object id), as `git ls-tree -r` lists them."""

    entries: dict[str, tuple[str, str]]

    def listing(self, directory: str) -> list[str]:
        """The names in `directory` (files and subdirectories), as a checkout of the tree would list them."""
        prefix = directory.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.entries if p.startswith(prefix)})

    def blob(self, path: str) -> str | None:
        """The object id of the regular file at `path`; None when there is none (absent, a link, a submodule)."""
        found = self.entries.get(path)
        return found[1] if found and found[0] in REGULAR_MODES else None


def tree_of(repo: Path, sha: str) -> Tree:
    """The commit's files under PACKAGE_PATHS, from its trees alone (no file is read: works in a blobless clone)."""
    proc = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", sha, "--", *PACKAGE_PATHS],
                          capture_output=True, env=_git_env(), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise GitError(f"`git ls-tree {sha[:12]}` in {repo} failed: {proc.stderr.decode(errors='replace').strip()}")
    entries = {}
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            mode, _kind, oid = meta.split()
            entries[path] = (mode, oid)
    return Tree(entries)


def first_parents(repo: Path, shas: list[str]) -> dict[str, str | None]:
    """Each commit's first parent (None for a root commit), in one `git rev-list`."""
    if not shas:
        return {}
    proc = subprocess.run(["git", "-C", str(repo), "rev-list", "--no-walk=unsorted", "--parents", "--stdin"],
                          input="".join(f"{sha}\n" for sha in shas), capture_output=True, text=True, env=_git_env())
    if proc.returncode != 0:
        raise GitError(f"`git rev-list --parents` in {repo} failed: {proc.stderr.strip()}")
    found: dict[str, str | None] = {}
    for line in proc.stdout.splitlines():
        sha, *parents = line.split()
        found[sha] = parents[0] if parents else None
    return found


def read_blobs(repo: Path, oids: list[str]) -> dict[str, bytes | None]:
    """Each object's content, None where the clone lacks it; one `git cat-file --batch`."""
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"],
                          input="".join(f"{oid}\n" for oid in oids).encode(), capture_output=True, env=_git_env())
    if proc.returncode != 0:
        raise GitError(f"`git cat-file --batch` in {repo} failed: {proc.stderr.decode(errors='replace').strip()}")
    data, pos, found = proc.stdout, 0, {}
    for oid in oids:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            found[oid] = None
            continue
        size = int(header[2])
        found[oid], pos = data[pos:pos + size], pos + size + 1
    return found


def readable_archive(repo: Path, sha: str) -> tuple[bytes, list[str]]:
    """The commit's package as `commit_archive` makes it, and the paths of it the clone cannot read (a blobless,
    shallow-history or damaged clone). `git archive` refuses a tree with a missing object, so such a tree is written
    from the objects there are, without those paths."""
    try:
        return commit_archive(repo, sha), []
    except GitError:
        files = {p: e for p, e in tree_of(repo, sha).entries.items() if e[0] != "160000"}  # submodules: nothing
    blobs = read_blobs(repo, sorted({oid for _mode, oid in files.values()}))
    missing = sorted(p for p, (_mode, oid) in files.items() if blobs[oid] is None)
    if not missing:  # git archive failed for another reason: say that
        return commit_archive(repo, sha), []
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, (mode, oid) in sorted(files.items()):
            content = blobs[oid]
            if content is None:
                continue
            info = tarfile.TarInfo(path)
            if mode == "120000":
                info.type, info.linkname = tarfile.SYMTYPE, content.decode("utf-8", "surrogateescape")
                tar.addfile(info)
            else:
                info.size, info.mode = len(content), 0o755 if mode == "100755" else 0o644
                tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue(), missing


def package_tree_hash(repo: Path, tree: Tree) -> str:
    """child.header.tree_hash of the commit's package, from git's objects: a commit whose run is copied, not
    extracted, still gets its own. Files the clone lacks are left out, as a checkout of what can be read has none."""
    files = {p: oid for p, (mode, oid) in tree.entries.items()
             if p.startswith("tinygrad/") and p.endswith(".py") and mode in REGULAR_MODES and "/__pycache__/" not in p}
    blobs = read_blobs(repo, sorted(set(files.values())))
    lines = sorted(f"{p} {hashlib.sha256(content).hexdigest()}\n" for p, oid in files.items()
                   if (content := blobs[oid]) is not None)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class Hunk:
    """One hunk of `git diff A B` (no context lines): where it sits on each side and its text (the @@ line too)."""

    path: str  # the file at B (at A for a deleted file)
    old_path: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    text: str

    def old_lines(self) -> range:
        """The lines of A it replaces (a pure insertion: the line after which it goes)."""
        return range(self.old_start, self.old_start + max(self.old_count, 1))

    def new_lines(self) -> range:
        return range(self.new_start, self.new_start + max(self.new_count, 1))


HUNK_HEADER = "@@ -"


def _hunk_range(spec: str) -> tuple[int, int]:
    start, _, count = spec.partition(",")
    return int(start), int(count) if count else 1


def diff_hunks(repo: Path, a: str, b: str, paths: tuple[str, ...] = ("tinygrad",)) -> list[Hunk]:
    """The hunks of `git diff a b -- paths`, without context lines (each hunk is exactly what changed)."""
    out = _run_git(repo, "diff", "--no-color", "--no-ext-diff", "-U0", "--no-renames", a, b, "--", *paths).stdout
    hunks: list[Hunk] = []
    old_path = new_path = ""
    current: list[str] = []
    header: tuple[int, int, int, int] | None = None

    def close() -> None:
        if header is not None:
            hunks.append(Hunk(new_path or old_path, old_path or new_path, *header, "\n".join(current)))

    for line in out.splitlines():
        if line.startswith("diff --git "):
            close()
            header, current, old_path, new_path = None, [], "", ""
        elif header is None and line.startswith("--- "):
            old_path = "" if line == "--- /dev/null" else line[6:]
        elif header is None and line.startswith("+++ "):
            new_path = "" if line == "+++ /dev/null" else line[6:]
        elif line.startswith(HUNK_HEADER):
            close()
            old, new = line.split(" ")[1:3]
            header = (*_hunk_range(old[1:]), *_hunk_range(new[1:]))
            current = [line]
        elif header is not None:
            current.append(line)
    close()
    return hunks


def file_at(repo: Path, sha: str, path: str) -> str | None:
    """The text of `path` at commit `sha`, None where the commit has no such file (or it is not text)."""
    proc = _run_git(repo, "show", f"{sha}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


def changed_paths(repo: Path, a: str, b: str) -> list[str]:
    """The paths `git diff a b` changes, in order."""
    return [p for p in _run_git(repo, "diff", "--name-only", "--no-renames", a, b).stdout.splitlines() if p]
