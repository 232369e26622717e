"""SQLAlchemy 2 models of the tgstore schema, one module per group of tables: run_tables (commits, suites, cases,
runs, case sets), artifact_tables (what runs point at, content-addressed), timing_tables (kernel and compile times),
triage_tables (regressions: triage state and confirmations by re-timing),
svod_tables (what Svod printed). Importing this package puts every table in `Base.metadata` (migrations/env.py,
gc and the schema test read it there); code that uses a model imports it from its module.
"""

from tgstore.db.models import (  # noqa: F401  (their tables)
    artifact_tables,
    run_tables,
    svod_tables,
    timing_tables,
    triage_tables,
)
from tgstore.db.models.base import Base

__all__ = ["Base"]
