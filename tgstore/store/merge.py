"""Merging tgstore databases: `tgstore merge SRC.db... --db DEST` copies every run, commit and content-addressed
artifact of each source into the destination, one transaction per source, by the rules ingest applies.

The schema is read from the database itself (SQLite's pragmas), not from a list kept here, so a table a later
migration adds is merged without touching this module. Every table falls in one of four kinds:

* keyed: a unique key besides the id (`hash` for content-addressed artifacts, `sha` for commits, `name` for cases,
  `(case_result_id, position)` for schedule items, ...). A source row maps to the destination row with the same key
  (foreign keys in the key translated first); only rows whose key is absent are inserted, with new ids.
* owned: an id and no other key (a run's `run_missing`, a Svod run's problems). Copied with their owner (the row
  their ON DELETE CASCADE key points at) when that owner is new, never otherwise. A table with an id, no other
  key and no owner (timing sessions) is keyed by all its other columns.
* parts: no id, a composite primary key (a graph's nodes, a set's members). Inserted where absent.
* runs: the one table with rules of its own. A run already present (same commit, suite, backend, status, times,
  renderers and case set) maps to it; another becomes current as ingest would make it (an ok run is never replaced
  by a worse one; of two equally good runs the later ingested is current), but only where it covers the current
  run's renderers: otherwise it is kept as an attempt, so a merge never takes away what either side stored.

Merging the same source twice adds nothing: every row maps to the one the first merge made.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, Engine

from tgstore.db.engine import DatabaseError, check_file, engine_path, open_engine
from tgstore.db.migrate import current_revision, head_revision, known_revisions, upgrade
from tgstore.store.commits import rank_commits
from tgstore.store.rows import FAILED, MEMBER_COLUMNS, STATUS_RANK, case_set_digest

SKIPPED_TABLES = {"alembic_version", "sqlite_sequence"}
# Tables whose hash is computed over their parts' ids in this database (not over content), so a source's hash means
# nothing here: the key is recomputed from the parts with the destination's ids. Table -> its parts table.
KEYED_BY_PARTS = {"case_sets": "case_set_members"}
# What identifies a run across databases (its id does not): a run with all of these equal is the same run.
RUN_IDENTITY = ("commit_id", "suite_id", "backend", "status", "started_at", "finished_at", "renderers", "case_set_id")


@dataclass(frozen=True)
class ForeignKey:
    column: str
    table: str
    cascade: bool


@dataclass
class Table:
    name: str
    columns: list[str]
    primary_key: list[str]
    foreign_keys: list[ForeignKey]
    unique_keys: list[list[str]]  # full (not partial) unique indexes, without those on the id alone

    @property
    def has_id(self) -> bool:
        return self.primary_key == ["id"]

    @property
    def kind(self) -> str:
        if self.name == "runs":
            return "runs"
        if self.name in KEYED_BY_PARTS:
            return "keyed_by_parts"
        if not self.has_id:
            return "parts"
        return "keyed" if self.unique_keys else "owned"

    def reference(self, column: str) -> ForeignKey | None:
        return next((fk for fk in self.foreign_keys if fk.column == column), None)

    @property
    def owner(self) -> ForeignKey | None:
        """The foreign key whose row this one belongs to (deleted with it)."""
        return next((fk for fk in self.foreign_keys if fk.cascade), None)


def read_schema(raw: sqlite3.Connection) -> list[Table]:
    """The database's tables in an order where every table comes after the tables it references."""
    names = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                       "'sqlite_%' ORDER BY name")]
    tables: dict[str, Table] = {}
    for name in names:
        if name in SKIPPED_TABLES:
            continue
        info = raw.execute(f"PRAGMA main.table_info({quote_name(name)})").fetchall()
        columns = [r[1] for r in info]
        primary_key = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        fks = [ForeignKey(r[3], r[2], (r[6] or "").upper() == "CASCADE")
               for r in raw.execute(f"PRAGMA main.foreign_key_list({quote_name(name)})")]
        unique = []
        for _seq, index, is_unique, origin, partial in raw.execute(f"PRAGMA main.index_list({quote_name(name)})"):
            if is_unique and not partial and origin != "pk":
                unique.append([r[2] for r in raw.execute(f"PRAGMA main.index_info({quote_name(index)})")])
        if not unique and primary_key == ["id"] and not any(fk.cascade for fk in fks):
            # a row of its own, owned by nothing (a timing session): it is what its values say
            unique.append([c for c in columns if c != "id"])
        tables[name] = Table(name, columns, primary_key, fks, unique)
    ordered: list[Table] = []
    placed: set[str] = set()

    def place(name: str, path: tuple[str, ...] = ()) -> None:
        if name in placed or name not in tables or name in path:
            return
        parts = tables.get(KEYED_BY_PARTS.get(name, ""))
        for fk in [*tables[name].foreign_keys, *(parts.foreign_keys if parts else [])]:
            place(fk.table, (*path, name))
        placed.add(name)
        ordered.append(tables[name])

    for name in tables:
        place(name)
    return ordered


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class MergeReport:
    source: Path
    upgraded_from: str | None = None  # the source's schema revision, when it was older and upgraded in a copy
    runs_added: int = 0
    runs_made_current: int = 0
    runs_present: int = 0
    rows_added: dict[str, int] = field(default_factory=dict)

    @property
    def added_anything(self) -> bool:
        return self.runs_added > 0 or any(self.rows_added.values())


class Merger:
    """One source merged into the destination connection, inside the caller's transaction; `src` is attached."""

    def __init__(self, conn: Connection, report: MergeReport) -> None:
        self.conn = conn
        self.report = report
        self.mapped: set[str] = set()  # tables with a temp.m_<table> (src id -> dst id, new flag)
        self.tables: dict[str, Table] = {}

    def sql(self, statement: str, params: tuple | dict = ()) -> sqlite3.Cursor:
        return self.conn.exec_driver_sql(statement, params)

    def translated(self, table: Table, column: str, alias: str = "s") -> str:
        """The destination's value of the source's `column`: its id mapped where it references a mapped table."""
        fk = table.reference(column)
        if fk is None or fk.table not in self.mapped:
            return f"{alias}.{quote_name(column)}"
        return f"(SELECT dst FROM temp.{quote_name('m_' + fk.table)} WHERE src = {alias}.{quote_name(column)})"

    def new_map(self, table: Table) -> str:
        name = quote_name("m_" + table.name)
        self.sql(f"DROP TABLE IF EXISTS temp.{name}")
        self.sql(f"CREATE TEMP TABLE {name} (src INTEGER PRIMARY KEY, dst INTEGER, new INTEGER NOT NULL DEFAULT 0)")
        self.mapped.add(table.name)
        return name

    def number_new_rows(self, table: Table, map_name: str) -> None:
        """Give the source rows that have no destination row the next ids of the destination's table."""
        base = self.sql(f"SELECT coalesce(max(id), 0) FROM main.{quote_name(table.name)}").scalar()
        self.sql(f"WITH n AS (SELECT src, row_number() OVER (ORDER BY src) AS r FROM temp.{map_name} "
                 f"WHERE dst IS NULL) UPDATE temp.{map_name} SET dst = ? + n.r, new = 1 FROM n "
                 f"WHERE temp.{map_name}.src = n.src", (base,))

    def insert_mapped(self, table: Table, map_name: str) -> int:
        columns = [c for c in table.columns if c != "id"]
        values = ", ".join(self.translated(table, c) for c in columns)
        cur = self.sql(f"INSERT INTO main.{quote_name(table.name)} (id, {', '.join(map(quote_name, columns))}) "
                       f"SELECT m.dst, {values} FROM src.{quote_name(table.name)} s JOIN temp.{map_name} m "
                       "ON m.src = s.id WHERE m.new = 1 ORDER BY m.dst")
        return cur.rowcount

    def owner_is_new(self, table: Table, alias: str = "s") -> str | None:
        owner = table.owner
        if owner is None or owner.table not in self.mapped:
            return None
        return (f"EXISTS (SELECT 1 FROM temp.{quote_name('m_' + owner.table)} o WHERE o.src = "
                f"{alias}.{quote_name(owner.column)} AND o.new = 1)")

    # ---- the four kinds

    def keyed(self, table: Table) -> int:
        key = table.unique_keys[0]
        map_name = self.new_map(table)
        match = " AND ".join(f"d.{quote_name(c)} IS {self.translated(table, c)}" for c in key)
        self.sql(f"INSERT INTO temp.{map_name} (src, dst) SELECT s.id, (SELECT d.id FROM main.{quote_name(table.name)}"
                 f" d WHERE {match}) FROM src.{quote_name(table.name)} s")
        self.number_new_rows(table, map_name)
        added = self.insert_mapped(table, map_name)
        if table.name == "tinygrad_commits":
            self.fill_commit_gaps(table, map_name)
        return added

    def keyed_by_parts(self, table: Table) -> int:
        """case_sets: each source set's hash recomputed over its members with the destination's ids, as ingest
        (tgstore.store.artifacts.store_case_set) would compute it had it stored those runs here."""
        parts = KEYED_BY_PARTS[table.name]
        map_name = self.new_map(table)
        members: dict[int, list[list]] = {}
        values = ", ".join(self.translated(self.tables[parts], c) for c in MEMBER_COLUMNS)
        for set_id, *member in self.sql(f"SELECT s.case_set_id, {values} FROM src.{parts} s "
                                        "ORDER BY s.case_set_id, s.position"):
            members.setdefault(set_id, []).append(member)
        base = self.sql("SELECT coalesce(max(id), 0) FROM main.case_sets").scalar()
        added = 0
        for src_id, count in self.sql("SELECT id, case_count FROM src.case_sets ORDER BY id").all():
            digest = case_set_digest(members.get(src_id, []))
            found = self.sql("SELECT id FROM main.case_sets WHERE hash = ?", (digest,)).scalar()
            if found is None:
                added += 1
                found = base + added
                self.sql("INSERT INTO main.case_sets (id, hash, case_count) VALUES (?, ?, ?)", (found, digest, count))
            self.sql(f"INSERT INTO temp.{map_name} (src, dst, new) VALUES (?, ?, ?)",
                     (src_id, found, int(found > base)))
        return added

    def owned(self, table: Table) -> int:
        map_name = self.new_map(table)
        condition = self.owner_is_new(table)
        if condition is None:  # nothing says whose it is: such rows are not copied (none exist in the schema now)
            return 0
        self.sql(f"INSERT INTO temp.{map_name} (src) SELECT s.id FROM src.{quote_name(table.name)} s "
                 f"WHERE {condition}")
        self.number_new_rows(table, map_name)
        return self.insert_mapped(table, map_name)

    def parts(self, table: Table) -> int:
        columns = table.columns
        values = ", ".join(self.translated(table, c) for c in columns)
        condition = self.owner_is_new(table) or "1"
        cur = self.sql(f"INSERT OR IGNORE INTO main.{quote_name(table.name)} ({', '.join(map(quote_name, columns))}) "
                       f"SELECT {values} FROM src.{quote_name(table.name)} s WHERE {condition}")
        return cur.rowcount

    def runs(self, table: Table) -> int:
        """Runs one by one, oldest first, by ingest's rules (see the module docstring)."""
        map_name = self.new_map(table)
        columns = [c for c in table.columns if c != "id"]
        select_cols = ", ".join(f"{self.translated(table, c)} AS {quote_name(c)}" for c in columns)
        rows = self.sql(f"SELECT s.id, {select_cols} FROM src.runs s ORDER BY s.id").mappings().all()
        added = 0
        for row in rows:
            values = dict(row)
            src_id = values.pop("id")
            same = self.sql("SELECT id FROM main.runs WHERE " + " AND ".join(f"{quote_name(c)} IS ?"
                                                                            for c in RUN_IDENTITY),
                            tuple(values[c] for c in RUN_IDENTITY)).scalar()
            if same is not None:
                self.sql(f"INSERT INTO temp.{map_name} (src, dst) VALUES (?, ?)", (src_id, same))
                self.report.runs_present += 1
                continue
            if values["is_current"]:
                values["is_current"] = self.make_room(values)
                self.report.runs_made_current += bool(values["is_current"])
            marks = ", ".join("?" * len(columns))
            cur = self.sql(f"INSERT INTO main.runs ({', '.join(map(quote_name, columns))}) VALUES ({marks})",
                           tuple(values[c] for c in columns))
            self.sql(f"INSERT INTO temp.{map_name} (src, dst, new) VALUES (?, ?, 1)", (src_id, cur.lastrowid))
            added += 1
        self.report.runs_added += added
        return added

    def make_room(self, run: dict) -> bool:
        """Whether the incoming current run becomes current; if so the destination's current run steps aside as
        runs.make_room has it (a failed one kept as an attempt, an ok or partial one deleted). It takes over
        from a worse run, or from an equally good one ingested earlier whose renderers it covers; a run that would
        take a renderer's sources away is kept as an attempt instead, so merging never loses what either side
        stored."""
        current = self.sql("SELECT id, status, ingested_at, renderers FROM main.runs WHERE commit_id = ? AND "
                           "suite_id = ? AND backend = ? AND is_current = 1",
                           (run["commit_id"], run["suite_id"], run["backend"])).first()
        if current is None:
            return True
        incoming, standing = STATUS_RANK.get(run["status"], 0), STATUS_RANK.get(current.status, 0)
        if current.status in FAILED:
            if incoming < standing or (incoming == standing and (run["ingested_at"] or "") < current.ingested_at):
                return False
            self.sql("UPDATE main.runs SET is_current = 0 WHERE id = ?", (current.id,))
            return True
        covers = set((current.renderers or "").split(",")) <= set((run["renderers"] or "").split(","))
        if incoming > standing and covers or incoming == standing and covers and \
                (run["ingested_at"] or "") > (current.ingested_at or ""):
            self.sql("DELETE FROM main.runs WHERE id = ?", (current.id,))
            return True
        return False

    def fill_commit_gaps(self, table: Table, map_name: str) -> None:
        """What the destination did not know of a commit both hold (its subject, date, position) comes from the
        source, as a later ingest would fill it in."""
        for column in ("version", "committed_at", "subject", "committed_utc", "git_position", "version_key"):
            if column in table.columns:
                self.sql(f"UPDATE main.tinygrad_commits SET {column} = (SELECT s.{column} FROM src.tinygrad_commits s "
                         f"JOIN temp.{map_name} m ON m.src = s.id WHERE m.dst = main.tinygrad_commits.id) "
                         f"WHERE {column} IS NULL AND id IN (SELECT dst FROM temp.{map_name} WHERE new = 0)")

    def merge(self, tables: list[Table]) -> None:
        self.tables = {t.name: t for t in tables}
        for table in tables:
            added = getattr(self, table.kind)(table)
            if added:
                self.report.rows_added[table.name] = added
        rank_commits(self.conn)
        broken = self.sql("PRAGMA main.foreign_key_check").fetchall()
        if broken:
            raise DatabaseError(f"merging {self.report.source} would leave {len(broken)} broken references (first: "
                                f"{tuple(broken[0])}); nothing was written")
        for name in self.mapped:
            self.sql(f"DROP TABLE IF EXISTS temp.{quote_name('m_' + name)}")


@contextmanager
def source_at_head(source: Path) -> Iterator[tuple[Path, str | None]]:
    """`source` itself when its schema is this tgstore's head; an upgraded copy when it is older (the source is not
    touched); a DatabaseError when it is no tgstore database or a newer one."""
    check_file(source, writer=False)
    engine = open_engine(source, writer=False)
    try:
        revision = current_revision(engine)
    finally:
        engine.dispose()
    if revision is None:
        raise DatabaseError(f"{source} holds no tgstore schema (not a tgstore database?); nothing was merged")
    if revision not in known_revisions():
        raise DatabaseError(f"{source} is at schema revision {revision}, newer than this tgstore knows (head "
                            f"{head_revision()}); upgrade tgstore; nothing was merged")
    if revision == head_revision():
        yield source, None
        return
    with tempfile.TemporaryDirectory(prefix="tgstore-merge-") as tmp:
        copy = Path(tmp) / source.name
        with sqlite3.connect(f"file:{quote(str(source))}?mode=ro", uri=True) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)
        upgraded = open_engine(copy)
        try:
            upgrade(upgraded)
        finally:
            upgraded.dispose()
        yield copy, revision


def merge_database(dest: Engine, source: Path) -> MergeReport:
    """Merge the database file `source` into `dest` (at head) in one transaction; see the module docstring."""
    source = Path(source)
    dest_path = engine_path(dest)
    if dest_path is not None and source.exists() and dest_path.exists() and source.resolve() == dest_path.resolve():
        raise DatabaseError(f"{source} is the destination database itself; nothing was merged")
    report = MergeReport(source)
    with source_at_head(source) as (readable, upgraded_from):
        report.upgraded_from = upgraded_from
        with dest.connect() as conn:
            raw = conn.connection.dbapi_connection
            # ATTACH is refused inside a transaction: attach first (read-only), then begin the writer's transaction
            raw.execute("ATTACH DATABASE ? AS src", (f"file:{quote(str(readable.resolve()))}?mode=ro",))
            try:
                tables = read_schema(raw)
                with conn.begin():
                    Merger(conn, report).merge(tables)
            finally:
                conn.rollback()
                raw.execute("DETACH DATABASE src")
    return report

