"""The store: bundles and databases into SQLite. `content` (hash -> id, many rows at a time), `rows` (the
get-or-insert and row encoders every writer uses), `commits` (naming and storing a commit, history order),
`ingest` (a bundle, as steps), `artifacts` (its content), `carry` (what a new run keeps of the current one), `runs`
(a commit's current run; failed and copied runs), `merge` (another database), `timings` (kernel timing sessions)."""
