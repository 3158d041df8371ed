"""Data-quality checks on panes' tables: Great Expectations suites and reconciliations, as
blocking Dagster asset checks per partition.

- A module per table (``events``, ``quarantine``, ``minute_partials``, ``daily_partials``,
  ``window_changes``, ``window_snapshot``, ``spine_values``): its checks, its Great Expectations
  suite and the reconciliations that judge it, and ``evaluate(inputs)``, which runs them.
- ``shared_checks``: what several tables share (signs of counts and sums, the finished values of
  a window, a window row's name and length).
- ``catalog``: every check that applies to a configuration, and each table's evaluator (one list);
  ``check``: what a check and its outcome are.
- ``inputs``: what an evaluator reads; ``validation`` runs a suite on a Spark DataFrame;
  ``conservation`` recomputes change points from the frames; ``written_whole`` reads the Delta
  logs' write ids.
- ``asset_checks``: the Dagster wiring, ``build_asset_checks(config, partitions_def)``.
"""
