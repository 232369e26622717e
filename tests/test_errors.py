"""Bad inputs and faults: each is one line on stderr, exit status 1, and nothing written; text from bundles and git
is never read as markup or terminal escapes; readers work on read-only media (issue: history you can trust)."""

from __future__ import annotations

import inspect
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli import TGSTORE, tgstore
from sample_bundles import SHA_A, bundle_a, bundle_b, write_bundle
from slack import generous

# each case runs the CLI in a fresh process (seconds apiece on a busy machine): the fast tier leaves them out
pytestmark = pytest.mark.slow


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """The command failed with exit status 1 and said so in one line starting `error:` that has `words`."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def unwrapped(stderr: str) -> str:
    return stderr.replace("\n", "")


def runs(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, status FROM runs ORDER BY id").fetchall()


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    """A database with one ok run (sample bundle A)."""
    path = tmp_path / "t.db"
    proc = tgstore("ingest-bundle", write_bundle(tmp_path / "a.jsonl", bundle_a()), "--db", path)
    assert proc.returncode == 0, proc.stderr
    return path


def test_ingest_s_old_spellings_work_and_say_which_command_replaced_them(tmp_path: Path) -> None:
    """`ingest --bundle` (now `ingest-bundle`) stores the same run and says so in one line after the work; an error
    of an old spelling (`ingest --rev`, now `sweep`) stays one line, without the note."""
    bundle = write_bundle(tmp_path / "a.jsonl", bundle_a())
    proc = tgstore("ingest", "--db", tmp_path / "old.db", "--bundle", bundle)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("note: `tgstore ingest --bundle` is `tgstore ingest-bundle "
                                                    "PATHS` now (this spelling keeps working)")
    assert runs(tmp_path / "old.db") == [(1, "ok")]
    one_line_error(tgstore("ingest", "--db", tmp_path / "r.db", "--rev", "v0.13.0", "--tinygrad", tmp_path),
                   "does not combine with --tinygrad")
    proc = tgstore("sweep", "--db", tmp_path / "s.db")  # --rev is sweep's one required option
    assert proc.returncode == 2 and "--rev" in proc.stderr


def malformed_bundles(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (bundle file, what the error must say)."""
    good = bundle_a()
    first_case = next(i for i, r in enumerate(good) if r["kind"] == "case")
    prefix, case, header = good[:first_case], good[first_case], good[0]
    at = first_case + 1  # the line of the first case

    def bundle(name: str, records: list, raw: str | None = None) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(raw if raw is not None else "".join(json.dumps(r) + "\n" for r in records))
        return path

    wrong_type = {**case, "seconds": "fast"}
    no_name = {k: v for k, v in case.items() if k != "name"}
    bad_program = json.loads(json.dumps(case))
    bad_program["schedule"][0]["programs"].append(dict(bad_program["schedule"][0]["programs"][0]))
    deep = '{"kind": "case", "name": ' + "[" * 5000 + "]" * 5000 + "}"
    return {
        "wrong field type": (bundle("wrong_type", [*prefix, wrong_type]), f"wrong_type.jsonl:{at}: seconds"),
        "missing key": (bundle("no_name", [*prefix, no_name]), f"no_name.jsonl:{at}: name"),
        "duplicate case": (bundle("dup_case", [*prefix, case, case]), f"dup_case.jsonl:{at + 1}: duplicate case 'add'"),
        "duplicate renderer": (bundle("dup_renderer", [*prefix, bad_program]),
                               f"dup_renderer.jsonl:{at}: case 'add': item 0: duplicate program for renderer 'C'"),
        "lone surrogate": (bundle("surrogate", [], raw=json.dumps(header) + '\n{"kind": "case", "name": "\\ud800"}\n'),
                           "surrogate.jsonl:2: not valid JSON"),
        "deep nesting": (bundle("deep", [], raw=json.dumps(header) + "\n" + deep + "\n"),
                         "deep.jsonl:2: not valid JSON"),
        "not the header first": (bundle("headless", [case]), "headless.jsonl:1: the first record must be the header"),
        "undefined reference": (bundle("undefined", [header, case]), "undefined.jsonl:2: case 'add': "),
        # a directory is a batch of bundles (ingest --bundle DIR): one holding none is refused
        "a directory of no bundles": (empty_directory(tmp_path), "holds no bundle (*.jsonl) files"),
        "a device": (Path("/dev/urandom"), "not a regular file"),
        "missing file": (tmp_path / "nope.jsonl", "no such bundle file"),
    }


def empty_directory(parent: Path) -> Path:
    (parent / "empty").mkdir(exist_ok=True)
    return parent / "empty"


@pytest.mark.parametrize("name", ["wrong field type", "missing key", "duplicate case", "duplicate renderer",
                                  "lone surrogate", "deep nesting", "not the header first", "undefined reference",
                                  "a directory of no bundles", "a device", "missing file"])
def test_a_malformed_bundle_is_refused_whole(tmp_path: Path, db: Path, name: str) -> None:
    path, says = malformed_bundles(tmp_path)[name]
    before = runs(db)
    one_line_error(tgstore("ingest-bundle", path, "--db", db), says)
    assert runs(db) == before
    fresh = tmp_path / "fresh.db"
    one_line_error(tgstore("ingest-bundle", path, "--db", fresh), says)
    assert not fresh.exists()  # bundles are checked before the database is opened


def test_a_truncated_bundle_is_stored_as_a_failed_run(tmp_path: Path, db: Path) -> None:
    records = bundle_b()[:-1]  # no end record, and the last case half written
    text = "".join(json.dumps(r) + "\n" for r in records)
    path = tmp_path / "cut.jsonl"
    path.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40])
    proc = tgstore("ingest-bundle", path, "--db", db)
    assert proc.returncode == 1 and "failed" in proc.stderr and "Traceback" not in proc.stderr
    assert runs(db) == [(1, "ok"), (2, "failed")]


def test_database_problems_are_one_line(tmp_path: Path, db: Path) -> None:
    bundle = write_bundle(tmp_path / "b.jsonl", bundle_b())
    one_line_error(tgstore("ingest-bundle", bundle, "--db", tmp_path / "no" / "such" / "dir.db"),
                   "does not exist")
    assert not (tmp_path / "no").exists()
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    one_line_error(tgstore("ingest-bundle", bundle, "--db", text), "not a SQLite database")
    one_line_error(tgstore("runs", "--db", text), "not a SQLite database")
    assert text.read_text() == "hello\n"
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(db.read_bytes()[:100] + b"\x13" * 8000)  # a SQLite header, then garbage
    snapshot = corrupt.read_bytes()
    one_line_error(tgstore("runs", "--db", corrupt), str(corrupt))
    one_line_error(tgstore("ingest-bundle", bundle, "--db", corrupt), str(corrupt))
    assert corrupt.read_bytes() == snapshot
    one_line_error(tgstore("runs", "--db", tmp_path), "is a directory")
    one_line_error(tgstore("query", "commits", "--db", tmp_path / "absent.db"), "does not exist")


def test_downgrade_of_a_database_from_a_newer_tgstore_is_refused(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    one_line_error(tgstore("db", "downgrade", "-1", "--db", db), "9999", "newer tgstore")
    one_line_error(tgstore("db", "upgrade", "--db", db), "9999")
    one_line_error(tgstore("runs", "--db", db), "9999")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]
        conn.execute("UPDATE alembic_version SET version_num = (SELECT '0005')")
    one_line_error(tgstore("db", "downgrade", "nonsense", "--db", db), "nonsense")


def test_text_from_bundles_is_never_markup_or_escapes(tmp_path: Path) -> None:
    """A sha and subject with Rich markup and a terminal escape: stored as given, printed literally, escapes shown."""
    records = bundle_a()
    records[0]["tinygrad"]["git"] = {"sha": "[/x]" + SHA_A[4:], "date": "2026-01-01T00:00:00+00:00",
                                     "subject": "[bold red]boom[/] \x1b[31mred"}
    db = tmp_path / "t.db"
    proc = tgstore("ingest-bundle", write_bundle(tmp_path / "m.jsonl", records), "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "[/x]" in proc.stderr
    listing = tgstore("runs", "--db", db)
    assert listing.returncode == 0, listing.stderr
    assert "[/x]" + SHA_A[4:12] in listing.stdout and "\x1b" not in listing.stdout
    subject = tgstore("query", "commits", "--db", db)
    assert "[bold red]boom[/] \\x1b[31mred" in subject.stdout and "\x1b" not in subject.stdout


def in_mount_namespace(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `script` with sh in a private mount namespace (mounts made there vanish with it)."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec", script], cwd=cwd,
                          capture_output=True, text=True, timeout=generous())


def can_mount(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = in_mount_namespace(f"mount -t tmpfs -o size=64k tmpfs {tmp_path}", tmp_path)
    return probe.returncode == 0


def test_full_disk_writes_nothing_and_says_so(tmp_path: Path, db: Path) -> None:
    if not can_mount(tmp_path):
        pytest.skip("cannot mount a small tmpfs here (needs unshare and mount rights)")
    full = tmp_path / "full"
    full.mkdir()
    bundle = tmp_path / "big.jsonl"
    records = bundle_b()
    records[-2]["debug"] = "x" * 400_000  # more than the filesystem holds
    write_bundle(bundle, records)
    size = db.stat().st_size + 64 * 1024
    py, cmd = sys.executable, " ".join(TGSTORE[1:])
    script = f"""
mount -t tmpfs -o size={size} tmpfs {full}
cp {db} {full}/t.db
{py} {cmd} ingest-bundle {bundle} --db {full}/t.db 2> {tmp_path}/stderr || echo "exit $?" > {tmp_path}/status
{py} -c "import sqlite3; c = sqlite3.connect('{full}/t.db'); print(c.execute('PRAGMA integrity_check').fetchone()[0],
  c.execute('SELECT count(*) FROM runs').fetchone()[0])" > {tmp_path}/after
"""
    proc = in_mount_namespace(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "status").read_text().strip() == "exit 1"
    lines = (tmp_path / "stderr").read_text().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no space left"), lines
    assert "nothing was written" in lines[0]
    assert (tmp_path / "after").read_text().split() == ["ok", "1"]


def test_read_only_media_can_be_read_not_written(tmp_path: Path, db: Path) -> None:
    if not can_mount(tmp_path):
        pytest.skip("cannot bind-mount read-only here (needs unshare and mount rights)")
    media = tmp_path / "media"
    media.mkdir()
    shutil.copy(db, media / "t.db")  # a closed WAL database: no -wal or -shm file beside it
    bundle = write_bundle(tmp_path / "b.jsonl", bundle_b())
    py, cmd = sys.executable, " ".join(TGSTORE[1:])
    script = f"""
mount --bind {media} {media}
mount -o remount,bind,ro {media}
{py} {cmd} runs --db {media}/t.db --jsonl > {tmp_path}/runs
{py} {cmd} query commits --db {media}/t.db --jsonl > {tmp_path}/commits
{py} {cmd} diff {SHA_A[:8]} {SHA_A[:8]} --db {media}/t.db --json > {tmp_path}/diff
{py} {cmd} ingest-bundle {bundle} --db {media}/t.db 2> {tmp_path}/stderr || echo "exit $?" > {tmp_path}/status
"""
    proc = in_mount_namespace(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["run_id"] for line in (tmp_path / "runs").read_text().splitlines()] == [1]
    assert json.loads((tmp_path / "commits").read_text().splitlines()[0])["sha"] == SHA_A
    assert json.loads((tmp_path / "diff").read_text())["changed"] is False
    assert (tmp_path / "status").read_text().strip() == "exit 1"
    lines = (tmp_path / "stderr").read_text().strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0] and "nothing was written" in lines[0], lines


@pytest.mark.parametrize(("args", "words"), [
    (["ingest", "--no-such-option"], ["No such option: --no-such-option", "see tgstore ingest --help"]),
    (["no-such-command"], ["No such command 'no-such-command'", "see tgstore --help"]),
    (["stages", "matmul", "--kernel", str(2**64)], ["'--kernel'", "see tgstore stages --help"]),
    (["ingest", "--rewrites", "-1"], ["'--rewrites'", "greater than or equal to 0"]),
    (["stages"], ["Missing argument", "see tgstore stages --help"]),
])
def test_usage_errors_are_one_line_naming_the_help(args: list[str], words: list[str]) -> None:
    """Click's usage errors keep their exit status 2 but are one line, like every other error."""
    proc = tgstore(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert all(word in lines[0] for word in words), lines[0]


def test_a_bare_command_group_still_prints_its_help() -> None:
    proc = tgstore("db")
    assert proc.returncode == 2 and "upgrade" in proc.stderr + proc.stdout and "error:" not in proc.stderr


def test_db_is_one_option_of_the_app_written_before_or_after_the_command(tmp_path: Path, db: Path) -> None:
    """`--db` is the app's option (defined once, cli/app.py); `tgstore runs --db X`, `tgstore --db X runs`,
    `--db=X` and TGSTORE_DB name the same database; a `--db` with no file is a one-line usage error; a captured
    command's own `--db` (after `--`) is left to it; each database command's --help says how to name it."""
    import os

    from tgstore.cli.app import hoist_db

    after = tgstore("runs", "--json", "--db", db)
    assert after.returncode == 0, after.stderr
    assert [r["status"] for r in json.loads(after.stdout)["runs"]] == ["ok"]
    for spelling in (("--db", db, "runs", "--json"), ("runs", f"--db={db}", "--json")):
        proc = tgstore(*spelling)
        assert (proc.returncode, proc.stdout) == (0, after.stdout), (spelling, proc.stderr)
    from_env = tgstore("runs", "--json", cwd=tmp_path, env={**os.environ, "TGSTORE_DB": str(db)})
    assert (from_env.returncode, from_env.stdout) == (0, after.stdout), from_env.stderr
    elsewhere = tgstore("runs", "--json", cwd=tmp_path)  # ./tgstore.db, which tmp_path lacks
    assert elsewhere.returncode == 1 and "tgstore.db does not exist" in elsewhere.stderr, elsewhere.stderr
    bare = tgstore("runs", "--db")
    assert (bare.returncode, bare.stderr) == (2, "error: Option '--db' requires an argument: the database file. "
                                                 "(see tgstore --help)\n")
    assert hoist_db(["capture", "--db", "a.db", "--", "python", "x.py", "--db", "b"]) == \
        ["--db", "a.db", "capture", "--", "python", "x.py", "--db", "b"]
    assert "The database: --db PATH (before or after the command name) or TGSTORE_DB" in \
        unwrapped(tgstore("runs", "--help").stdout)
    assert "The database:" not in tgstore("extract", "--help").stdout  # writes a bundle, opens no database


def test_extraction_settings_are_one_section_of_each_extracting_commands_help() -> None:
    """The extraction settings (cli/common.py, defined once) are a section of their own in the --help of every
    command that extracts; the command's own options stay under Options."""
    for name in ("ingest", "sweep", "capture", "extract"):
        text = tgstore(name, "--help").stdout
        options, _, settings = text.partition("\nExtraction settings:\n")
        flags = {line.split()[0] for line in settings.splitlines() if line.startswith("  -")} | \
            {line.split()[1] for line in settings.splitlines() if line.startswith("  -j")}
        assert {"--renderers", "--stages", "--rewrites", "--debug", "--timeout", "--backend"} <= flags, (name, text)
        assert "--renderers" not in options and "--help" in options, (name, text)
    assert "Extraction settings" not in tgstore("runs", "--help").stdout


def test_extracting_commands_take_the_extraction_settings_as_one_value(tmp_path) -> None:
    """Issue 46 point 3: the settings are declared once (cli/settings.py ExtractionSettings) and handed to each
    extracting command as one value: every field is an option of every such command, with the same help, and no
    command declares one of them itself. A setting given to `sweep` reaches its plan (a bad one is refused as such)."""
    from dataclasses import fields

    import typer.main

    from tgstore.cli.app import app
    from tgstore.cli.settings import ExtractionSettings

    group = typer.main.get_command(app)
    names = [f.name for f in fields(ExtractionSettings)]
    helps = {}
    for name in ("ingest", "sweep", "capture", "extract"):
        params = {p.name: p for p in group.commands[name].params}
        assert set(names) <= set(params), name
        helps[name] = [params[n].help for n in names]
        declared = inspect.signature(inspect.unwrap(group.commands[name].callback)).parameters
        assert "settings" in declared and not set(names) & set(declared), (name, list(declared))
    assert len({tuple(h) for h in helps.values()}) == 1, helps
    refused = tgstore("sweep", "--rev", "HEAD", "--repo", tmp_path, "--timeout", "0", "--db", tmp_path / "t.db")
    assert refused.returncode != 0 and "--timeout must be a positive number of seconds, not 0" in refused.stderr
