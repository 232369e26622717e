"""The store: bundles and databases into SQLite. `content` (hash -> id, many rows at a time), `rows` (the
get-or-insert and row encoders every writer uses), `commits` (naming a stored commit, history order), `ingest`
(a bundle), `merge` (another database), `timings` (kernel timing sessions)."""

# svod/store.py and web/cells.py import these from here
from tgstore.store.content import ContentStore, sha256_text

__all__ = ["ContentStore", "sha256_text"]
