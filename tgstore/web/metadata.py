"""tgstore's Datasette configuration: settings, table titles and options, canned queries from `queries/*.sql`, and
the Datasette instance with this plugin registered. The database is opened read-only (Datasette's `mode=ro` for a
mutable file), never `immutable`: an ingest may be writing to it at the same time, and WAL mode lets Datasette keep
reading while it does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tgstore.queries import Query, load_queries

SETTINGS = {
    "sql_time_limit_ms": 15_000,  # the history queries scan every run of a case
    "facet_time_limit_ms": 1_000,
    "suggest_facets": False,  # suggestions run queries over whole views: seconds on a thousand commits
    # a page shows at most this many rows (Datasette says when it cut): per-commit histories have a row per commit,
    # and 5,000 rows made 5.7 MB pages taking 2.6 s at 10,000 commits, 1,000 rows 0.97 MB and 0.4 s at 1,000 commits
    # (every cell goes through tgstore's cell renderer); `tgstore query` is not cut
    "max_returned_rows": 500,
    "default_page_size": 50,
}

DATABASE_DESCRIPTION = (
    "What tinygrad's compiler pipeline produced for a suite of tensor programs, commit by commit: schedules, kernel "
    "ASTs, linearized UOps, generated source and pattern-matcher activity. Start with the v_* views or the canned "
    "queries below; commit parameters take a full sha, a sha prefix or a version such as 0.14.0."
)

# title, description, and Datasette table options (facets, sort, label column) per table and view.
TABLES: dict[str, dict[str, Any]] = {
    "v_runs": {"title": "Runs", "description": "One extraction of one tinygrad commit over a suite on a backend.",
               "facets": ["status", "backend", "suite"], "sort_desc": "history_rank"},
    "v_commits": {"title": "Commits", "description": "Stored tinygrad commits in history order (git order, "
                  "releases placed by version).", "sort_desc": "history_rank"},
    # The views below hold a row per case, kernel, program, pass or rule of every run: on a thousand commits a sort
    # or a facet over all of them costs seconds, so they have neither by default (filter by sha, run_id or case,
    # or sort by a column, as needed); v_passes and v_pattern_matches are not counted either (tgstore.web).
    "v_run_cases": {"title": "Cases by run", "description": "Each case of each run: status, time, schedule size, "
                    "DEBUG output and traceback."},
    "v_kernels": {"title": "Kernels by run", "description": "Every schedule item of every case of every run, with "
                  "its AST as tinygrad code (pyrender) and as text, and links to its sources, passes and graph.",
                  "size": 20},
    "v_sources": {"title": "Generated sources", "description": "The code each renderer generated for each kernel.",
                  "size": 20},  # each source is highlighted: 20 a page keeps a page quick
    "v_pattern_matches": {"title": "Pattern matches", "description": "How often each PatternMatcher rule fired "
                          "(and was tried) while a case was scheduled and lowered. Filter by sha or case."},
    "v_passes": {"title": "Passes", "description": "The graph after each named pass: the scheduler's (scope "
                 "schedule) and each kernel's codegen passes per renderer (scope lower), with node counts and a "
                 "link to the drawn graph. A case at one commit with each pass C and LLVM share shown once: the "
                 "passes_at_commit query."},
    "v_commit_patterns": {"title": "Patterns by commit", "description": "The PatternMatcher rules present in each "
                          "run's tinygrad, matched or not."},
    "tinygrad_commits": {"title": "tinygrad commits", "description": "A git commit, or an installed package "
                         "(sha \"tree:<hash>\" of its source files).", "sort_desc": "committed_utc",
                         "label_column": "sha"},
    "runs": {"title": "Runs (raw)", "description": "Extractions; status ok, partial (some cases raised), failed or "
             "timeout, with the error and stderr of failed ones.", "facets": ["status", "backend"],
             "sort_desc": "id"},
    # a view with a row per case of every run, like those above: a status facet over it was 0.3-0.4 s a page at
    # 10,000 commits (`_facet=status` still asks for it)
    "run_cases": {"title": "Run cases (raw)", "description": "A case within a run, pointing at its shared result."},
    "run_missing": {"title": "Missing features", "description": "What a run's tinygrad could not provide.",
                    "facets": ["feature"]},
    "case_missing": {"title": "Missing features by case", "facets": ["feature"]},
    "suites": {"title": "Suites", "description": "Sets of cases, identified by the hash of their files.",
               "label_column": "name"},
    "cases": {"title": "Cases", "label_column": "name"},
    "case_results": {"title": "Case results", "description": "What a case produced, stored once per distinct "
                     "content and shared by every run that produced the same."},
    "schedule_items": {"title": "Schedule items", "facets": ["root_op"]},
    "kernels": {"title": "Kernel ASTs", "description": "Content-addressed UOp graphs of schedule items.",
                "facets": ["root_op"], "sort_desc": "node_count"},
    "uop_nodes": {"title": "AST UOp nodes", "description": "A kernel AST's nodes in toposort order.",
                  "facets": ["op"]},
    "uop_edges": {"title": "AST UOp edges", "description": "parent_idx's source number src_pos is child_idx."},
    "linears": {"title": "Linearized UOp lists", "sort_desc": "uop_count"},
    "linear_uops": {"title": "Linearized UOps", "facets": ["op"]},
    "programs": {"title": "Programs", "description": "A kernel rendered by one renderer.",
                 "facets": ["renderer"], "label_column": "name"},
    "patterns": {"title": "Patterns", "description": "PatternMatcher rules; a rule that moved is a new row.",
                 "facets": ["matcher", "file"], "label_column": "function_name"},
    "pattern_sets": {"title": "Pattern sets", "description": "The rules of one tinygrad, shared by runs."},
    "pattern_set_members": {"title": "Pattern set members"},
    "pattern_matches": {"title": "Pattern matches (raw)", "sort_desc": "matches"},
    "blobs": {"title": "Text blobs", "description": "Sources, pyrender, AST text and DEBUG output, stored once.",
              "sort_desc": "size"},
    "v_svod_stages": {"title": "Svod stages", "description": "Node counts per codegen stage of each Svod kernel.",
                      "facets": ["case", "label"]},
    "v_svod_kernels": {"title": "Svod kernels", "description": "Each Svod kernel's stages and generated code.",
                       "facets": ["case"]},
    "svod_runs": {"title": "Svod outputs", "description": "One ingested Svod output (a log, a dump directory, a "
                  "capture file), with its files.", "sort_desc": "id"},
    "svod_files": {"title": "Svod files", "description": "Each file of a Svod output, kept whole."},
    "svod_kernels": {"title": "Svod kernels (raw)"},
    "svod_stages": {"title": "Svod stage dumps", "description": "A Svod kernel's tree at one stage, parsed."},
    "svod_trees": {"title": "Svod trees", "description": "Svod IR trees, id-free, stored once by hash."},
    "svod_events": {"title": "Svod tracing events", "facets": ["level", "target"]},
    "svod_problems": {"title": "Svod problems", "description": "Lines that could not be parsed, with file and line; "
                      "everything else was kept."},
    "svod_rule_fires": {"title": "Svod pattern matches", "description": "Svod's `pattern matched` events counted "
                        "per kernel, stage and op key (`tgstore parity --rules`).", "facets": ["label", "op_key"]},
    "svod_stage_map": {"title": "Svod stage map", "description": "Svod's stage labels and messages, the tinygrad "
                       "pass and canonical stage each corresponds to (tgstore/spelling/maps.toml)."},
    "alembic_version": {"hidden": True},
}


def canned_query(query: Query) -> dict[str, Any]:
    return {"sql": query.sql, "title": query.title, "description": query.description,
            "params": query.parameter_names, "hide_sql": True}


# Table options that Datasette 1.0 reads from configuration, not from metadata.
CONFIG_TABLE_KEYS = ("facets", "sort", "sort_desc", "label_column", "hidden", "size")


def build_metadata(db_path: Path, queries: dict[str, Query] | None = None) -> dict[str, Any]:
    """Datasette 0.65 metadata for the database at `db_path` (Datasette names it by the file's stem): titles,
    descriptions, table options and canned queries all in one."""
    queries = load_queries() if queries is None else queries
    return {
        "title": "tgstore",
        "description": "tinygrad compiler artifacts by commit",
        "databases": {
            Path(db_path).stem: {
                "description": DATABASE_DESCRIPTION,
                "tables": TABLES,
                "queries": {name: canned_query(query) for name, query in queries.items()},
            }
        },
    }


def split_for_datasette_1(metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, config) for the Datasette 1.0 line, where canned queries and table options moved from metadata
    to configuration (canned queries left in metadata are ignored there: every one would be a 404)."""
    meta: dict[str, Any] = {k: v for k, v in metadata.items() if k != "databases"}
    config: dict[str, Any] = {"databases": {}}
    meta["databases"] = {}
    for name, database in metadata["databases"].items():
        tables_meta = {t: {k: v for k, v in spec.items() if k not in CONFIG_TABLE_KEYS}
                       for t, spec in database["tables"].items()}
        tables_config = {t: {k: v for k, v in spec.items() if k in CONFIG_TABLE_KEYS}
                         for t, spec in database["tables"].items()}
        meta["databases"][name] = {"description": database["description"],
                                   "tables": {t: m for t, m in tables_meta.items() if m}}
        config["databases"][name] = {"queries": database["queries"],
                                     "tables": {t: c for t, c in tables_config.items() if c}}
    return meta, config
