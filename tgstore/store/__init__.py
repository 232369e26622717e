"""The store: bundles and databases into SQLite. `content` (hash -> id, many rows at a time), `rows` (the
get-or-insert and row encoders every writer uses), `commits` (naming a stored commit, history order), `ingest`
(a bundle), `merge` (another database), `timings` (kernel timing sessions)."""
