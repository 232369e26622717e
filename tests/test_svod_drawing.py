"""Reading a Svod log narrowed (tgstore/svod/drawing.py: its tree-drawing characters as one-byte stand-ins, so a
100 MB trace is held at one byte a character) stores exactly what reading it as it is does: real-emitter logs
(tests/svod_emitter.py) read both ways and compared whole; a file holding a stand-in itself is read as it is; a
file past WHOLE_FILE_BYTES is written into its blob a piece at a time and reads back byte for byte."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import svod_emitter as corpus

from tgstore.cli.common import open_db
from tgstore.spelling.svod import Speller
from tgstore.svod import drawing, log_paths, store
from tgstore.svod.log_paths import _text
from tgstore.svod.readers import Event, read_runs
from tgstore.svod.store import ingest_svod_runs
from tgstore.svod.tree import Tree

ALPHABET = "ab [](){}\n│─└├→é°µ🚀" + drawing.NARROW


def test_narrow_then_widen_gives_the_text_back_at_random() -> None:
    rng = random.Random(44)
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40)))
        narrowed = drawing.narrow(text)
        if any(c in text for c in drawing.NARROW):
            assert narrowed is None, repr(text)
            continue
        assert narrowed is not None and drawing.widen(narrowed) == text
        assert not any(c in narrowed for c in drawing.WIDE)
        if "🚀" not in text:  # every character fits one byte
            assert len(narrowed.encode("latin-1")) == len(text)


def as_data(item: Any) -> Any:
    """What a reading holds, as plain data: trees as their stored graph text, events as their stored columns."""
    if isinstance(item, str | int | float | bool) or item is None:
        return item
    if isinstance(item, list | tuple):
        return [as_data(v) for v in item]
    if isinstance(item, dict):
        return {as_data(k): as_data(v) for k, v in item.items()}
    if isinstance(item, Tree):
        return list(item.graph_text(Speller()))
    if isinstance(item, Event):
        return [item.file, item.line, item.timestamp, item.level, item.target, item.message, item.fields_json(),
                item.record]
    assert dataclasses.is_dataclass(item), type(item)
    return {f.name: as_data(getattr(item, f.name)) for f in dataclasses.fields(item) if f.name != "files"}


def _read_both(logs: list[Path]) -> tuple[Any, Any, list[bool]]:
    plain = [(str(p), p.read_text(encoding="utf-8")) for p in logs]
    read = [(str(p), *_text(p, narrow=True)) for p in logs]
    for (_name, text), (_same, got, narrowed) in zip(plain, read, strict=True):  # narrowed: drawn with stand-ins
        assert got == (drawing.narrow(text) if narrowed else text)
    narrowed = all(n for _name, _text, n in read)
    return (as_data(read_runs(plain)), as_data(read_runs([(n, t) for n, t, _w in read], narrowed=narrowed)),
            [n for _name, _text, n in read])


@pytest.fixture(scope="module")
def built() -> corpus.Build:
    return corpus.build()


@pytest.fixture(autouse=True)
def narrow_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest narrows files from 32 MB (log_paths.NARROW_FROM_BYTES); these logs are smaller."""
    monkeypatch.setattr(log_paths, "NARROW_FROM_BYTES", 0)


@pytest.mark.parametrize("name", ["ops-one-thread", "ops-default-threads", "ops-libtest-threads"])
def test_a_real_emitter_log_read_narrowed_is_read_as_it_is(name: str, built, tmp_path: Path) -> None:
    result = corpus.run(corpus.BY_NAME[name], tmp_path, built)
    text = "".join(result.texts())
    assert any(c in text for c in drawing.WIDE)  # it draws trees
    plain, narrowed, flags = _read_both(result.logs)
    assert flags == [True] * len(result.logs)
    assert narrowed == plain
    one = _text(result.logs[0], narrow=True)[0]
    if max(one) <= "\xff":
        assert sys.getsizeof(one) <= len(one) + 80  # one byte a character (and the object's head)


def test_random_real_emitter_logs_read_narrowed_are_read_as_they_are(built, tmp_path: Path) -> None:
    for seed in range(12):
        result = corpus.run(corpus.draw(seed), tmp_path / str(seed), built, seed=seed)
        plain, narrowed, _flags = _read_both(result.logs)
        assert narrowed == plain, f"seed {seed}: {corpus.draw(seed)}"


def test_a_file_holding_a_stand_in_is_read_as_it_is(built, tmp_path: Path) -> None:
    """A stand-in in a late piece of a large file: the pieces narrowed before it are widened back, and the reading
    equals the plain one; the line holding both spellings is kept as written."""
    log = corpus.run(corpus.BY_NAME["ops-one-thread"], tmp_path, built).logs[0]
    text = log.read_text(encoding="utf-8")
    odd = "a control \x80 beside a bar │\n"
    big = tmp_path / "big.log"
    big.write_text(text * 30 + odd, encoding="utf-8")  # past a few CHUNK_BYTES pieces
    read, narrowed = _text(big, narrow=True)
    assert not narrowed and read == big.read_text(encoding="utf-8")
    small = tmp_path / "small.log"
    small.write_text(text + odd + text, encoding="utf-8")
    plain, both, flags = _read_both([small])
    assert flags == [False] and both == plain


SVOD_TABLES = ("svod_runs", "svod_kernels", "svod_stages", "svod_events", "svod_problems", "svod_rule_fires",
               "svod_trees", "canonical_docs", "svod_files")


def _stored(db: Path) -> dict[str, list]:
    """Every row ingest-svod wrote, but the times and the version: what a reading stores."""
    with sqlite3.connect(db) as conn:
        found = {}
        for table in SVOD_TABLES:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                       if r[1] not in ("ingested_at", "tgstore_version")]
            found[table] = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY 1, 2").fetchall()
        found["blobs"] = conn.execute("SELECT id, hash, size, CAST(text AS TEXT) FROM blobs ORDER BY id").fetchall()
    return found


def test_a_large_log_is_stored_narrowed_and_in_pieces_as_it_is_stored_plain(built, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The real emitter's 20 MB log, ingested as a log past both thresholds is (read narrowed, its blob written a
    piece at a time) and as it is: the same rows; the blob reads back byte for byte; the source hash is the one
    every earlier ingest made, so the second ingest finds the run."""
    log = corpus.bench_log(tmp_path / "log", 90, None, built)
    plain_db, large_db = tmp_path / "plain.db", tmp_path / "large.db"
    monkeypatch.setattr(log_paths, "NARROW_FROM_BYTES", 1 << 40)
    engine = open_db(plain_db)
    ingest_svod_runs(engine, log, "sum_rows")
    engine.dispose()
    monkeypatch.setattr(log_paths, "NARROW_FROM_BYTES", 1 << 20)
    monkeypatch.setattr(store, "WHOLE_FILE_BYTES", 1 << 20)
    engine = open_db(large_db)
    [report] = ingest_svod_runs(engine, log, "sum_rows")
    assert _stored(large_db) == _stored(plain_db)
    data = log.read_bytes()
    text = data.decode("utf-8")
    with sqlite3.connect(large_db) as conn:
        kind, stored, chars, digest = conn.execute(
            "SELECT typeof(b.text), CAST(b.text AS TEXT), b.size, b.hash FROM svod_files f "
            "JOIN blobs b ON b.id = f.blob_id WHERE f.run_id = ?", (report.run_id,)).fetchone()
        source_hash = conn.execute("SELECT source_hash FROM svod_runs WHERE id = ?", (report.run_id,)).fetchone()[0]
    with sqlite3.connect(plain_db) as conn:
        assert conn.execute("SELECT typeof(text) FROM blobs WHERE hash = ?", (digest,)).fetchone() == ("text",)
    assert (kind, stored, chars, digest) == ("blob", text, len(text), hashlib.sha256(data).hexdigest())
    name = str(log)
    source = hashlib.sha256(f"{len(name)}:{name}:{len(text)}:".encode() + data).hexdigest()
    assert source_hash == (source if report.log.test is None
                           else hashlib.sha256(f"{source}\0{report.log.test}".encode()).hexdigest())
    assert report.log.kernels and report.new_trees > 0
    [again] = ingest_svod_runs(engine, log, "sum_rows")
    assert again.skipped and again.run_id == report.run_id
    engine.dispose()


@pytest.mark.parametrize("beside", ["│ a bar and → an arrow, as a dump file holds them\n", "a control \x80 in it\n"])
def test_a_large_log_beside_a_small_file_stores_what_the_plain_reading_does(beside: str, built, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A narrowed log and a small file read as it is, in one call (a log and its dump directory): the small file is
    narrowed too, or, holding a stand-in itself, every file is read as it is; either way the rows are the plain
    reading's."""
    log = corpus.run(corpus.BY_NAME["ops-one-thread"], tmp_path, built).logs[0]
    small = tmp_path / "beside.log"
    small.write_text(log.read_text(encoding="utf-8")[:3000] + beside, encoding="utf-8")
    stored = {}
    for name, narrow_from in (("plain", 1 << 40), ("mixed", log.stat().st_size)):
        monkeypatch.setattr(log_paths, "NARROW_FROM_BYTES", narrow_from)
        engine = open_db(tmp_path / f"{name}.db")
        ingest_svod_runs(engine, [log, small], "sum_rows")
        engine.dispose()
        stored[name] = _stored(tmp_path / f"{name}.db")
    assert stored["mixed"] == stored["plain"]
    assert _text(log, narrow=True)[1] and not _text(small, narrow=True)[1]  # the thresholds the call met
