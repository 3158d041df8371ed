"""PySpark jobs: ingest, minute partials, sliding and session windows, snapshots; Delta I/O."""

from jobs.py4j_lookups import remember_lookups

remember_lookups()
