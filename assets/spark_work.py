"""How an asset runs its Spark work: visible while it runs, and run again if it was overtaken."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pyspark.sql import SparkSession

from jobs import progress
from jobs.delta_io import ConcurrentWriteError

OVERTAKEN_RETRIES = 2  # another run replacing the same days twice more during a retry is rare


@contextmanager
def spark_work(context: dg.AssetExecutionContext, spark: SparkSession, what: str) -> Iterator[None]:
    """Report the work's Spark progress to the run's log (``jobs.progress``), and retry the step
    when its commit was refused because another run replaced the same partitions after it
    started (``ConcurrentWriteError``: a late firing beside a backfill of the same days).

    The retry is what Delta's writers advise for a conflicting commit: the step reads its inputs
    again, now including what the other run read, and commits; nothing of the refused attempt
    was committed. Any other error fails the step as before.
    """
    try:
        with progress.reported(spark, what, context.log.info):
            yield
    except ConcurrentWriteError as err:
        context.log.warning(f"{what}: {err}; running the step again on the newer tables")
        raise dg.RetryRequested(max_retries=OVERTAKEN_RETRIES, seconds_to_wait=1) from err
