"""Answers: one library function per question, each returning a typed value with one way to JSON.

The contract every presentation relies on (the CLI, the Datasette pages and their `.json` twins, `tgstore mcp`):
* A question is a function in a module of this package (`answers/runs.py: runs(db, ...) -> RunsAnswer`), taking a
  read connection (`answers.base.Reader`) and plain, typed parameters; its signature is what the MCP tool schema
  and the CLI options are derived from.
* Its value is a dataclass deriving from `answers.base.Answer`; `to_json()` is the one name for "to JSON", and the
  JSON of an empty answer has the same keys as that of a full one (lists empty, never a different shape).
* Nothing is shaped for a terminal here: `cli/` formats a value (or prints `to_json()` for `--json`), a page
  renders it and its twin is `to_json()`, the MCP tool returns `to_json()`.
Layer: above history/, svod/ and queries, below web/ and cli/ (tests/import_graph.py).
"""
