"""tgstore: a SQLite-backed artifact database for tinygrad's compiler pipeline."""

__version__ = "0.1.0"
