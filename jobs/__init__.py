"""PySpark jobs, one module per command (ingest, minute partials, windows, point in time, online
values, vacuum); their parts live in ``ingest``, ``windows``, ``storage`` and ``runtime``."""

from jobs.runtime.py4j_lookups import remember_lookups

remember_lookups()
