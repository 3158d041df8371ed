"""Data-quality checks on panes' tables: Great Expectations suites and reconciliations, as
blocking Dagster asset checks per daily partition.

- ``catalog``: every check, its table, severity and what it guards against (one list).
- ``suites``: Great Expectations suites on Spark DataFrames (row and schema expectations).
- ``reconciliation``: checks across tables and rows (counts, conservation, snapshots).
- ``asset_checks``: the Dagster wiring, ``build_asset_checks(config, partitions_def)``.
"""
