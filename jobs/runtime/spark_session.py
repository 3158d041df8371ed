"""One place for the Spark settings every panes job needs, locally and on a cluster.

The session time zone is UTC because event days, frames and window ends are UTC; everything
else is a laptop-friendly default that spark-submit or the Dagster resource may override.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from jobs.runtime import class_archive, jvm_packages
from jobs.storage.locations import aws_region, s3_endpoint

SPARK_DEFAULTS: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "panes",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # PySpark records the Python call site of every Column function for error messages: about
    # six more Py4J round trips a call. Building the windows job's plan (3 windows, 21
    # aggregations) made 103,646 round trips with it and 29,936 without, 70 s -> 41 s on a busy
    # 2-core machine (cProfile). Errors still name the failing expression, not the Python line.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # The throughput collector: on a local master the driver JVM runs every task, and against
    # Java 17's default G1 it made panes' daily run 1.30x faster at 10^7 events with 0.73x the
    # CPU time (one process per collector, measured by bench/collectors.py, since removed: git log).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    # A whole-stage method above HotSpot's 8,000 bytes of bytecode is never JIT-compiled: it runs
    # in the bytecode interpreter. Ingest's one projection (the line's parse, every field's JSON
    # kind and typed value, the quarantine reason) is such a method. At 8000, as Spark's docs
    # advise on HotSpot, Spark compiles that stage per operator instead: at 10^6 events a day
    # (python -m bench, 10^5 keys, best of 2) ingest 22.3 -> 19.3 s, windows 6.6 -> 6.1 s.
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # Delta rebuilds a table's state (its log replayed as a Spark job) for every write, in 50
    # partitions by default: sized for clusters and long logs, where a laptop's 2 cores spend
    # most of a small write scheduling them. 12 partition replaces of 25,000 rows: median 5.5 s
    # a write at 50, 2.0 s at 2 (an ad-hoc script; docs/lessons.md).
    "spark.databricks.delta.snapshotPartitions": "2",
    # Every write commits, also one that neither removes nor adds a file (a day with no change
    # points): the tables of one run then all carry its write id (``commits.require_whole_writes``).
    "spark.databricks.delta.skipRecordingEmptyCommits": "false",
    # delta-spark writes every table (jobs/storage/delta_io.py); its jars come from jobs/runtime/jvm_packages.py.
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


# Set when the server starts (its own --conf), never by a session.
STATIC_SQL = ("spark.sql.extensions", "spark.sql.catalog.spark_catalog")


def with_jvm_packages(config: dict[str, str], roots: Iterable[str] = ()) -> dict[str, str]:
    """Delta's jars on the driver's and executors' class path; where one of ``roots`` (the
    landing and lakehouse roots the session reads and writes) is on S3, also the S3 connector's,
    and S3's endpoint from the standard ``AWS_*`` variables.

    The class path names files in the local Maven repository: nothing is copied at start, and on
    a cluster whose nodes hold the same files (one image, or a shared home) the executors find
    them too. Elsewhere submit with ``--jars`` (``python -m jobs.runtime.jvm_packages --jars``).
    """
    jars = jvm_packages.class_path(s3=jvm_packages.on_object_storage(roots))
    extra = {}
    for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
        extra[key] = os.pathsep.join(p for p in (config.get(key), jars) if p)
    return {**config, **extra, **s3a_settings(config)}


def with_class_archive(config: dict[str, str]) -> dict[str, str]:
    """The driver's JVM started from the class archive of its class path, where setup built one
    (``jobs.runtime.class_archive``)."""
    archive = class_archive.java_options(config.get("spark.driver.extraClassPath", ""))
    if not archive:
        return config
    options = " ".join(o for o in (config.get("spark.driver.extraJavaOptions", ""), archive) if o)
    return {**config, "spark.driver.extraJavaOptions": options}


def archive_classes() -> Path | None:
    """Build the class archive of the default driver (``jobs.runtime.class_archive``): start it with
    ``get_spark``, write and read a small Delta table with a window query (the classes a job
    loads), and let its JVM dump them as it exits. Returns its path (None without ``java``, or
    where this process does not start the JVM)."""
    extra_class_path = with_jvm_packages({})["spark.driver.extraClassPath"]
    path = class_archive.archive_path(extra_class_path)
    if path is None or (not path.is_file() and not starts_a_jvm()):
        return None
    if not path.is_file():
        _dump_classes(path)
    if path.is_file():
        class_archive.record(path, extra_class_path)
    class_archive.prune()
    return path if path.is_file() else None


def _dump_classes(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")  # two setups at once each write their own
    spark = get_spark({"spark.master": "local[1]", "spark.ui.enabled": "false",
                       "spark.driver.extraJavaOptions": f"{SPARK_DEFAULTS['spark.driver.extraJavaOptions']} "
                                                        f"{class_archive.dump_options(partial)}"})
    with tempfile.TemporaryDirectory() as scratch:
        table = str(Path(scratch, "t"))
        spark.sql("select id % 7 as key, id as value, current_date() as day from range(1000)") \
            .write.format("delta").partitionBy("day").save(table)
        spark.sql(f"select key, sum(value) over (partition by key order by value) as running "
                  f"from delta.`{table}`").groupBy("key").count().collect()
    process = spark.sparkContext._gateway.proc
    spark.stop()
    process.stdin.close()  # the JVM exits when its standard input closes, and dumps as it exits
    process.wait(timeout=300)
    if partial.is_file():
        partial.replace(path)


def s3a_settings(config: dict[str, str] | None = None) -> dict[str, str]:
    """``s3a://`` settings from the environment, as the AWS CLI reads it: ``AWS_ENDPOINT_URL``
    (an S3-compatible server: path-style access, TLS only for https) and ``AWS_REGION``.
    Credentials need nothing here: S3A's default chain reads ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY`` itself, and executors get them as ``spark.executorEnv``. Explicit
    settings win."""
    settings = {}
    endpoint = s3_endpoint()
    if endpoint:
        settings["spark.hadoop.fs.s3a.endpoint"] = endpoint
        settings["spark.hadoop.fs.s3a.path.style.access"] = "true"
        settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(urlparse(endpoint).scheme == "https").lower()
    region = aws_region()
    if region:
        settings["spark.hadoop.fs.s3a.endpoint.region"] = region
    # Executors on a cluster read credentials from their own environment: hand the driver's on
    # (Spark's UI redacts the secret and the token).
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if endpoint and os.environ.get(name):
            settings[f"spark.executorEnv.{name}"] = os.environ[name]
    return {k: v for k, v in settings.items() if k not in (config or {})}


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
    sql = {k: v for k, v in {**SPARK_DEFAULTS, **(overrides or {})}.items()
           if k.startswith("spark.sql.") and k not in STATIC_SQL}
    return {"spark.remote": remote, **sql}


def _submitted() -> bool:
    """Launched by spark-submit: its master and JVM stand."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def starts_a_jvm() -> bool:
    """Whether ``get_spark`` would start the JVM here, so that JVM options still apply: not
    under spark-submit, Spark Connect or a live session."""
    return SparkSession.getActiveSession() is None and not os.environ.get("SPARK_REMOTE") and not _submitted()


def get_spark(overrides: dict[str, str] | None = None, roots: Iterable[str] = ()) -> SparkSession:
    """The active session, or a new one with panes' defaults (spark-submit's settings win), for
    reading and writing under ``roots`` (``with_jvm_packages``).

    With ``SPARK_REMOTE`` set it is a Spark Connect session (``connect_config``).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        return SparkSession.builder.config(map=connect_config(remote, overrides)).getOrCreate()
    builder = SparkSession.builder
    submitted = _submitted()
    config = local_python({**SPARK_DEFAULTS, **(overrides or {})})
    # Under spark-submit the JVM has started: its class path (--jars) stands.
    config = {**config, **s3a_settings(config)} if submitted else with_class_archive(with_jvm_packages(config, roots))
    for key, value in config.items():
        if submitted and key in ("spark.master", "spark.driver.memory", "spark.driver.extraJavaOptions"):
            continue
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.runtime.spark_session", description=__doc__.splitlines()[0])
    parser.add_argument("--archive-classes", action="store_true",
                        help="build the class archive the driver's JVM starts from (jobs.runtime.class_archive), once")
    if not parser.parse_args(argv).archive_classes:
        parser.print_usage(sys.stderr)
        return 2
    path = archive_classes()
    print(f"[panes] the driver's class archive: {path or 'none (no java here, or this process does not start its own JVM)'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
