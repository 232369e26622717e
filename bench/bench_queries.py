"""Every canned query and every page on a database of N commits: prints `figure NAME VALUE` lines.

    .venv/bin/python bench/bench_queries.py [--commits 1000] [--db /tmp/bench-1000.db] [--keep]
    .venv/bin/python bench/bench_queries.py --commits 10000
    .venv/bin/python bench/bench_queries.py --smallest     # 12 commits over two cases

The database: the built-in suite extracted (renderers C and LLVM, their passes) from three real tinygrad releases,
0.12.0, 0.13.0 and 0.14.0, then --commits commits in git order along one line, a third on each release's output.
The commits change what is stored at the rate measured on tinygrad's real history (CHANGE_SHARE below): a changing
commit changes how often one rule fires in one case (a new match set and case set); the others add a commit and a
run row only. Bundles are cached in .cache/bench/.

- query_max_seconds_N: the slowest canned query (median of 3), run as Datasette runs it (plain sqlite3,
  read-only), with parameters that name real commits and cases (target <= 0.05 at 1,000, <= 0.1 at 10,000).
- page_max_seconds_N: the slowest page through Datasette's own ASGI client: the index, every table and view,
  every canned query, the graph, diff and chart pages (target <= 0.3 at 1,000, <= 0.5 at 10,000). Every page is
  listed with its seconds and bytes.
- page_max_bytes_N: the largest page, named (target <= 1 MB).
- db_bytes_N: the database file's size after the build (checkpointed), and unchanged_commit_bytes_N: what one
  more commit that changes nothing adds there (target <= 2,000).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from common import SMALLEST_CASES, SMALLEST_HELP, case_file, figure  # noqa: E402

from tgstore.bundle import read_bundle  # noqa: E402
from tgstore.db import open_engine, upgrade  # noqa: E402
from tgstore.queries import load_queries  # noqa: E402
from tgstore.store.commits import RANK_COMMITS  # noqa: E402
from tgstore.store.ingest import ingest_bundle  # noqa: E402

RELEASES = ["0.12.0", "0.13.0", "0.14.0"]
# Measured on tinygrad's real first-parent history (docs/history-plan.md): 5,321 of the 7,576 commits since v0.10.0
# change tinygrad/ (70.2%), and of 40 consecutive master commits swept with the built-in suite (master~40..master,
# August 2026), 26 of the 39 commit-parent pairs changed the package and 11 of those changed stored output.
PACKAGE_CHANGE_SHARE = 5321 / 7576
OUTPUT_SHARE_OF_PACKAGE_CHANGES = 11 / 26
CHANGE_SHARE = PACKAGE_CHANGE_SHARE * OUTPUT_SHARE_OF_PACKAGE_CHANGES
TARGETS = {1000: (0.05, 0.3), 10000: (0.1, 0.5)}
PAGE_BYTES = 1_000_000  # no page over 1 MB
CACHE = ROOT / ".cache" / "bench"


def bundle_of(version: str, cases: Path | None = None) -> Path:
    """The release's bundle (renderers C and LLVM, their passes) of the built-in suite or of a case file, cached
    under the case file's contents."""
    from tinygrad_releases import install_tinygrad_release

    name = "builtin" if cases is None else "cases-" + hashlib.sha1(cases.read_bytes()).hexdigest()[:12]
    out = CACHE / f"{name}-{version}.jsonl"
    if not out.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        root = install_tinygrad_release(version)
        where = [] if cases is None else ["--cases", str(cases)]
        subprocess.run([sys.executable, "-m", "tgstore", "extract", "--tinygrad", str(root), "--renderers", "C,LLVM",
                        *where, "-o", str(out)], check=True)
    return out


def changes_output(i: int) -> bool:
    """Whether commit i of the built line changes what is stored: spread evenly at CHANGE_SHARE."""
    return int((i + 1) * CHANGE_SHARE) > int(i * CHANGE_SHARE)


def build(db: Path, commits: int, cases: Path | None = None) -> None:
    engine = open_engine(db)
    upgrade(engine)
    for position, version in enumerate(RELEASES):
        bundle = read_bundle(bundle_of(version, cases))
        sha = hashlib.sha1(version.encode()).hexdigest()
        bundle.header["tinygrad"]["git"] = {"sha": sha, "date": f"2026-0{position + 1}-01T12:00:00+00:00",
                                            "subject": f"tinygrad {version}", "dirty": False, "position": 0}
        ingest_bundle(engine, bundle)
    engine.dispose()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    base = conn.execute("SELECT id, commit_id, suite_id, backend, renderers, case_set_id, case_seconds, "
                        "features_blob_id, pattern_set_id FROM runs ORDER BY id").fetchall()
    next_commit = conn.execute("SELECT max(id) FROM tinygrad_commits").fetchone()[0] + 1
    next_set = conn.execute("SELECT max(id) FROM case_sets").fetchone()[0] + 1
    next_match = conn.execute("SELECT max(id) FROM match_sets").fetchone()[0] + 1
    per_era = -(-commits // len(base))
    for i in range(commits):
        era = min(i // per_era, len(base) - 1)
        run_id, commit_id, suite_id, backend, renderers, case_set, seconds, features, patterns = base[era]
        if i % per_era == 0:  # the release itself, at its place in the line
            conn.execute("UPDATE tinygrad_commits SET git_position = ?, committed_at = ?, committed_utc = ? "
                         "WHERE id = ?", (i, f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
                                          f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", commit_id))
            continue
        if changes_output(i):  # a commit that changed one rule's match count in one case
            members = conn.execute("SELECT position, case_id, case_result_id, match_set_id, status, debug_blob_id, "
                                   "error_blob_id FROM case_set_members WHERE case_set_id = ? ORDER BY position",
                                   (case_set,)).fetchall()
            k = i % len(members)
            old_match = members[k][3]
            if old_match is not None:
                conn.execute("INSERT INTO match_sets (id, hash, pattern_count) SELECT ?, ?, pattern_count FROM "
                             "match_sets WHERE id = ?", (next_match, f"bench-match-{i}", old_match))
                conn.execute("INSERT INTO pattern_matches (match_set_id, pattern_id, matches, tries) SELECT ?, "
                             "pattern_id, matches + (rowid = (SELECT min(rowid) FROM pattern_matches WHERE "
                             "match_set_id = ?)), tries FROM pattern_matches WHERE match_set_id = ?",
                             (next_match, old_match, old_match))
                members[k] = (*members[k][:3], next_match, *members[k][4:])
                next_match += 1
            conn.execute("INSERT INTO case_sets (id, hash, case_count) VALUES (?, ?, ?)",
                         (next_set, f"bench-set-{i}", len(members)))
            conn.executemany("INSERT INTO case_set_members (case_set_id, position, case_id, case_result_id, "
                             "match_set_id, status, debug_blob_id, error_blob_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [(next_set, *m) for m in members])
            case_set, next_set = next_set, next_set + 1
        sha = hashlib.sha1(f"bench commit {i}".encode()).hexdigest()
        stamp = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}"
        conn.execute("INSERT INTO tinygrad_commits (id, sha, tree_hash, version, committed_at, subject, "
                     "committed_utc, git_position) VALUES (?, ?, '', NULL, ?, ?, ?, ?)",
                     (next_commit, sha, stamp + "+00:00", f"bench commit {i}", stamp + "Z", i))
        conn.execute("INSERT INTO runs (commit_id, suite_id, backend, renderers, status, ingested_at, "
                     "tgstore_version, is_current, case_set_id, case_seconds, features_blob_id, pattern_set_id) "
                     "VALUES (?, ?, ?, ?, 'ok', ?, 'bench', 1, ?, ?, ?, ?)",
                     (next_commit, suite_id, backend, renderers, stamp, case_set, seconds, features, patterns))
        next_commit += 1
    conn.execute(RANK_COMMITS)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


def unchanged_commit_bytes(db: Path) -> int:
    """Bytes one more commit that changes nothing adds (a commit row and a run row), on a copy of the database."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.db"
        with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)
        conn = sqlite3.connect(copy, isolation_level=None)
        conn.execute("VACUUM")
        before = copy.stat().st_size
        run = conn.execute("SELECT commit_id, suite_id, backend, renderers, case_set_id, case_seconds, "
                           "features_blob_id, pattern_set_id FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        conn.execute("BEGIN")
        for i in range(100):  # a hundred, to measure past page granularity
            sha = hashlib.sha1(f"unchanged {i}".encode()).hexdigest()
            cur = conn.execute("INSERT INTO tinygrad_commits (sha, tree_hash, committed_at, subject, committed_utc, "
                               "git_position) VALUES (?, '', '2026-12-01T00:00:00+00:00', 'docs: a readme edit', "
                               "'2026-12-01T00:00:00Z', ?)", (sha, 10**6 + i))
            conn.execute("INSERT INTO runs (commit_id, suite_id, backend, renderers, status, ingested_at, "
                         "tgstore_version, is_current, case_set_id, case_seconds, features_blob_id, pattern_set_id) "
                         "VALUES (?, ?, ?, ?, 'ok', '2026-12-01T00:00:00', 'bench', 1, ?, ?, ?, ?)",
                         (cur.lastrowid, *run[1:]))
        conn.execute(RANK_COMMITS)
        conn.execute("COMMIT")
        conn.execute("VACUUM")
        grown = copy.stat().st_size - before
        conn.close()
    return grown // 100


def parameters(conn: sqlite3.Connection) -> dict[str, str]:
    """Real values for every kind of query parameter."""
    built = conn.execute("SELECT count(*) FROM v_commits WHERE version IS NULL").fetchone()[0]
    sha_old, sha_new = [r[0] for r in conn.execute(
        "SELECT sha FROM v_commits WHERE version IS NULL ORDER BY history_rank LIMIT 1 OFFSET ?",
        (min(100, built // 2),)).fetchall()
        + conn.execute("SELECT sha FROM v_commits ORDER BY history_rank DESC LIMIT 1").fetchall()]
    return {"a": "0.12.0", "b": "0.14.0", "commit": sha_new[:10], "case_name": "softmax", "renderer": "C",
            "kernel": "", "op": "RANGE", "pattern": "Ops.ADD", "svod": "", "case": "softmax", "from": sha_old[:10],
            "to": sha_new[:10]}


def time_queries(db: Path) -> list[tuple[float, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    values = parameters(conn)
    timings = []
    for name, query in load_queries().items():
        params = {p: values.get(p, "") for p in query.parameter_names}
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            conn.execute(query.sql, params).fetchall()
            runs.append(time.perf_counter() - start)
        timings.append((statistics.median(runs), name))
    conn.close()
    return sorted(timings, reverse=True)


async def time_pages(db: Path) -> list[tuple[float, str]]:
    from urllib.parse import urlencode

    from tgstore.serve import TABLES, make_datasette

    datasette = make_datasette(db)
    await datasette.invoke_startup()
    name = db.stem
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    values = parameters(conn)
    kernel = conn.execute("SELECT hash FROM kernels ORDER BY node_count DESC LIMIT 1").fetchone()[0]
    graph = conn.execute("SELECT hash FROM graphs ORDER BY node_count DESC LIMIT 1").fetchone()[0]
    text = conn.execute("SELECT hash FROM blobs ORDER BY length(text) - length(replace(text, char(10), '')) DESC "
                        "LIMIT 1").fetchone()[0]  # the stored text with the most lines
    tables = [t for t in TABLES if not TABLES[t].get("hidden")
              and conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
    conn.close()
    pages = ["/", f"/{name}", *[f"/{name}/{t}" for t in tables]]
    for qname, query in load_queries().items():
        pages.append(f"/{name}/{qname}?" + urlencode({p: values.get(p, "") for p in query.parameter_names}))
    pages += [f"/-/graph/{kernel}", f"/-/graph/{graph}", f"/-/graph/{graph}?fold=0", f"/-/graph/{graph}.svg",
              f"/-/blob/{text}?language=C", f"/-/blob/{text}?language=C&start=500",
              "/-/diff?a=0.13.0&b=0.14.0", "/-/diff?a=0.12.0&b=0.14.0", "/-/diff?a=0.13.0&b=0.14.0&case=softmax",
              "/-/diff?a=0.12.0&b=0.14.0&case=softmax", "/-/diff?a=0.13.0&b=0.14.0&case=softmax&section=1:source-LLVM",
              "/-/diff?a=0.13.0&b=0.14.0&case=softmax&section=1:source-LLVM&fragment=1",
              *pass_pages(db), f"/{name}/v_passes?case=softmax&pass_name=expander",
              f"/{name}/v_pattern_matches?case=softmax",
              "/-/chart?metric=uops&case=softmax", "/-/chart?metric=kernels&case=softmax",
              "/-/chart?metric=matches&case=softmax", "/-/chart?metric=pass_nodes&case=softmax",
              "/-/chart?metric=pass_nodes&case=softmax&series=codegen%3A+expander"]
    timings = []
    for page in pages:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            response = await datasette.client.get(page)
            runs.append(time.perf_counter() - start)
            if response.status_code != 200:
                print(f"# {page}: HTTP {response.status_code}", flush=True)
        SIZES[page] = len(response.content)
        timings.append((statistics.median(runs), page))
    return sorted(timings, reverse=True)


SIZES: dict[str, int] = {}  # page -> bytes of its last response


def pass_pages(db: Path) -> list[str]:
    """The newest softmax kernel's biggest pass graph in its pipeline (stepping, what it changed) and that pass's
    rewrite steps page."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = conn.execute("SELECT run_id, position, renderer, pass_position, graph_hash FROM v_passes WHERE "
                       "\"case\" = 'softmax' AND scope = 'lower' AND graph_hash IS NOT NULL "
                       "ORDER BY history_rank DESC, node_count DESC LIMIT 1").fetchone()
    conn.close()
    if row is None:
        return []
    run, kernel, renderer, position, graph = row
    where = f"run={run}&case=softmax&kernel={kernel}&renderer={renderer}&pass={position}"
    return [f"/-/graph/{graph}?{where}", f"/-/rewrites?{where}",
            # the kernel workbench at that pass and step, its pass-by-pass diff, and the diff without spelling
            f"/-/kernel?case=softmax&kernel={kernel}&renderer={renderer}&pass={position}&step=0",
            "/-/kernel?case=matmul",
            f"/-/passdiff?case=softmax&kernel={kernel}&renderer={renderer}&a=0.12.0&b=0.14.0",
            "/-/diff?a=0.12.0&b=0.14.0&spelling=ignore", "/-/parity"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--db", type=Path, default=None, help="build here (default: a temporary file)")
    ap.add_argument("--keep", action="store_true", help="reuse --db if it exists")
    ap.add_argument("--smallest", action="store_true", help=SMALLEST_HELP + "; 12 commits")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "bench.db"
        cases = None
        if args.smallest:  # softmax is the case the pages name
            cases, args.commits = case_file(SMALLEST_CASES.split(","), Path(tmp) / "smallest.py"), 12
        if not (args.keep and db.is_file()):
            db.unlink(missing_ok=True)
            start = time.perf_counter()
            build(db, args.commits, cases)
            print(f"# built {db} ({db.stat().st_size / 1e6:.0f} MB, {args.commits} commits) in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        query_target, page_target = TARGETS.get(args.commits, TARGETS[1000])
        figure(f"db_bytes_{args.commits}", db.stat().st_size, f"{CHANGE_SHARE:.1%} of the commits change output")
        figure(f"unchanged_commit_bytes_{args.commits}", unchanged_commit_bytes(db), "target <= 2000")
        queries = time_queries(db)
        for seconds, name in queries[:5]:
            print(f"# query {name}: {seconds * 1000:.1f} ms")
        figure(f"query_max_seconds_{args.commits}", queries[0][0], f"{queries[0][1]}; target <= {query_target}")
        pages = asyncio.run(time_pages(db))
        print("# every page: seconds (median of 3), KB; over a target marked with !")
        for seconds, page in pages:
            over = " !" if seconds > page_target or SIZES[page] > PAGE_BYTES else ""
            print(f"#   {seconds:6.3f} s {SIZES[page] / 1e3:7.0f} KB  {page}{over}")
        figure(f"page_max_seconds_{args.commits}", pages[0][0], f"{pages[0][1]}; target <= {page_target}")
        charts = [(seconds, page) for seconds, page in pages if page.startswith("/-/chart")]
        if charts:  # charts draw every commit's value: the ones history length hurts first
            figure(f"chart_max_seconds_{args.commits}", charts[0][0], f"{charts[0][1]}; target <= {page_target}")
        drawings = [p for p in SIZES if ".svg" in p]  # a big graph's drawing, loaded by its page after it opens
        for drawing in drawings:
            figure(f"drawing_max_bytes_{args.commits}", SIZES[drawing], f"{drawing}; loaded by its page")
        largest = max((p for p in SIZES if p not in drawings), key=SIZES.__getitem__)
        seconds = next(s for s, p in pages if p == largest)
        figure(f"page_max_bytes_{args.commits}", SIZES[largest], f"{largest}; {seconds * 1000:.0f} ms; target <= "
               f"{PAGE_BYTES}")
        print("# all: " + json.dumps({name: round(s, 4) for s, name in queries}))


if __name__ == "__main__":
    main()
