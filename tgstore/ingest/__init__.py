"""Moved: tgstore.store.ingest, and the row primitives to tgstore.store.rows. Re-exported for svod/store.py and
bench/ until they import from there."""

from tgstore.store.ingest import ingest_bundle
from tgstore.store.rows import case_ids, insert_returning_id, now_iso

__all__ = ["case_ids", "ingest_bundle", "insert_returning_id", "now_iso"]
