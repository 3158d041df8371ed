"""Data-quality checks on panes' tables: Great Expectations suites and reconciliations, as
blocking Dagster asset checks per daily partition.

- ``catalog``: every check, its table, severity and what it guards against (one list).
- ``suites``: each table's Great Expectations suite (row and schema expectations);
  ``validation`` runs one on a Spark DataFrame, one outcome per check and day.
- ``reconciliation``: checks across tables and rows (counts, snapshots, the spine's join);
  ``conservation``: change points recomputed from the frames, for a sample of keys.
- ``asset_checks``: the Dagster wiring, ``build_asset_checks(config, partitions_def)``.
"""
