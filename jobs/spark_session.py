"""One place for the Spark settings every panes job needs, locally and on a cluster.

The session time zone is UTC because event days, frames and window ends are UTC; everything
else is a laptop-friendly default that spark-submit or the Dagster resource may override.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

SPARK_DEFAULTS: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "panes",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Rows reach panes' Delta writer (a Python data source) as Arrow batches. Under a byte limit
    # Spark measures the batch after every row it adds (`ArrowWriter.sizeInBytes`, 11 percent of
    # the driver JVM's samples in a profile of the daily run); at Int.MaxValue it skips that, and
    # the row limit alone bounds a batch: 100,000 rows (Spark's default 10,000), a tenth as many
    # batches to frame and hand over, about 15 MB of event rows each. The daily run at 10^7
    # events: 10.44 s against 12.39 s with Spark's two defaults, 1.19x (best of 7 interleaved,
    # `python -m bench.variants --pair "arrow batches" --reps 7`).
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # The throughput collector: on a local master the driver JVM runs every task, and against
    # Java 17's default G1 it made panes' daily run 1.30x faster at 10^7 events with 0.73x the
    # CPU time (`python -m bench.collectors`, one process per collector; bench/README, item 14).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}


LOOPBACK = "127.0.0.1"


def local_python(config: dict[str, str]) -> dict[str, str]:
    """On a local master, Python workers must run this interpreter (the one with panes installed),
    and the driver listens on loopback only.

    Spark's UI (port 4040) has no authentication, and it binds to ``SPARK_LOCAL_IP``, else to all
    interfaces (``WebUI.bind``): no ``spark.ui.*`` setting moves it. On a local master nothing
    outside the machine needs the driver, so ``SPARK_LOCAL_IP`` defaults to 127.0.0.1 (the JVM
    started next inherits it; it also binds the driver's RPC there). Setting ``SPARK_LOCAL_IP``
    (``0.0.0.0``, or the host's address) before the job or Dagster starts opens the UI again.
    A cluster's driver must be reachable by its executors, so other masters are left alone.
    """
    if config.get("spark.master", "local").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # planner-side Python runners
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        return {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable, **config}
    return config


def connect_config(remote: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """A Spark Connect session's settings (``remote`` is ``sc://host:15002``): the server's
    master, memory and JVM stand, so only panes' SQL settings apply."""
    sql = {k: v for k, v in {**SPARK_DEFAULTS, **(overrides or {})}.items() if k.startswith("spark.sql.")}
    return {"spark.remote": remote, **sql}


def get_spark(overrides: dict[str, str] | None = None) -> SparkSession:
    """The active session, or a new one with panes' defaults (spark-submit's settings win).

    With ``SPARK_REMOTE`` set it is a Spark Connect session (``connect_config``).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        return SparkSession.builder.config(map=connect_config(remote, overrides)).getOrCreate()
    builder = SparkSession.builder
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit: its master and JVM stand
    for key, value in local_python({**SPARK_DEFAULTS, **(overrides or {})}).items():
        if submitted and key in ("spark.master", "spark.driver.memory", "spark.driver.extraJavaOptions"):
            continue
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
