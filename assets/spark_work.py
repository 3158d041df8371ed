"""How an asset runs its Spark work: visible while it runs, and run again if it was overtaken."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pyspark.sql import SparkSession

from jobs.errors import ConcurrentWriteError, table_files_checked
from jobs.runtime import progress

OVERTAKEN_RETRIES = 2  # another run replacing the same days twice more during a retry is rare

SPARK_POOL = "panes_spark"
"""The Dagster concurrency pool of every step that runs Spark: each asset and each table's checks.

One pool rather than one per table: a step belongs to exactly one pool, and the tables do not
divide among the steps (``ingest_events`` and ``partials`` both write ``late_events``), so a
pool per written table could not keep two writers of ``late_events`` apart. With the pool's
limit at 1 (``dagster.yaml``) one Spark step runs at a time across all runs: a late firing
beside a backfill waits instead of starting a second Spark job on a laptop's cores, and no two
runs write one Delta table at once, the mutual exclusion that the local file system and object
storage do not give a Delta log without a locking log store (Delta's S3DynamoDBLogStore). With
such a store, or on a cluster with room for more, raise the limit: overlapping writes of the
same days are then refused and retried (``spark_work``)."""


@contextmanager
def spark_work(context: dg.AssetExecutionContext, spark: SparkSession, what: str) -> Iterator[None]:
    """Report the work's Spark progress to the run's log (``jobs.runtime.progress``), and retry the step
    when its commit was refused because another run replaced the same partitions after it
    started (``ConcurrentWriteError``: a late firing beside a backfill of the same days).

    The retry is what Delta's writers advise for a conflicting commit: the step reads its inputs
    again, now including what the other run read, and commits; nothing of the refused attempt
    was committed. Any other error fails the step as before.
    """
    try:
        with table_files_checked(), progress.reported(spark, what, context.log.info):
            yield
    except ConcurrentWriteError as err:
        context.log.warning(f"{what}: {err}; running the step again on the newer tables")
        raise dg.RetryRequested(max_retries=OVERTAKEN_RETRIES, seconds_to_wait=1) from err
