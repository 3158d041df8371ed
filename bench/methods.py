"""The methods the benchmark compares, each computing day D's windows from the lakehouse.

- ``scan_floor``: read the events that can belong to day D (arrival days D .. D + lateness, as
  the minute-partials job reads them), keep event day D and group them into minute buckets per
  key. The least any method must do; nothing is written (Spark's ``noop`` sink).
- ``panes_day``: the product itself, end to end for one day: ``jobs.minute_partials.run`` for D,
  then ``jobs.sliding_windows.run`` for D (continuing from D - 1's snapshot), Delta writes
  included.
- ``write_floor``: panes' output rows of day D (the partitions its last run wrote, read back and
  cached, untimed) written with Spark's own Parquet writer, no Delta commit: about the least any
  Spark method that keeps panes' tables adds to the scan floor.
- ``spark_builtin_window``: Spark's ``window(event_time, length, "1 minute")`` grouped per key,
  keeping the windows that end on day D. It runs with code generation off: generated, its
  10,080-way ``Expand`` is a Java class of over a million lines that janino spends minutes on
  and then fails to compile, before Spark falls back to interpreting it anyway.
- ``spark_range_frame``: minute buckets per key, and Spark window functions with a RANGE frame
  of the window's length, evaluated at every end where a bucket enters or leaves, keeping the
  change points of day D.

The two Spark-only methods read every event the day's windows cover (D - length .. D), do not
deduplicate across arrival days and write nothing: all in their favour. Their results are
the same windows as panes' (the values at every end of day D, or its change points).
"""

from __future__ import annotations

import math
from datetime import date, timedelta

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs import minute_partials, sliding_windows
from jobs.storage import delta_io
from jobs.tables import DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter
from windowing_core.config import PipelineConfig, reads_day_tiles
from windowing_core.reference import day_start
from windowing_core.window_spec import DAY_SECONDS

from bench.measure import Stopwatch


def _events(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig) -> DataFrame:
    """Events of event days ``first .. last`` from the arrival partitions that can hold them."""
    arrivals = day_filter("arrival_date", first, last + timedelta(days=config.allowed_lateness_days))
    events = delta_io.read_table(spark, EVENTS.path(lakehouse), partition_filters=arrivals)
    event_date = F.to_date("event_time")
    return events.where((event_date >= F.lit(first)) & (event_date <= F.lit(last)))


def _minute(column: str = "event_time"):
    seconds = F.unix_seconds(F.col(column))
    return seconds - F.pmod(seconds, F.lit(60))


def _noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def scan_floor(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig) -> dict:
    buckets = (_events(spark, lakehouse, day, day, config)
               .groupBy("key", _minute().alias("frame_start"))
               .agg(F.count(F.lit(1)).alias("event_count"), F.sum("value").alias("sum")))
    _noop(buckets)
    return {}


def panes_day(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig,
              partials_run=None, sliding_run=None) -> dict:
    """Minute partials of D, then the sliding windows of D: the daily run a schedule makes."""
    partials_run = partials_run or minute_partials.run
    sliding_run = sliding_run or sliding_windows.run
    watch = Stopwatch()
    with watch("partials"):
        partials = partials_run(spark, lakehouse, day, day, config)
    with watch("sliding"):
        windows = sliding_run(spark, lakehouse, day, day, config)
    if set((windows.get("baseline") or {}).values()) - {"snapshot"}:
        raise RuntimeError(f"the daily run of {day} did not continue from a snapshot: {windows.get('baseline')}")
    return {"parts": watch.parts, "partials": partials, "windows": windows}


def output_rows(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig) -> list[DataFrame]:
    """What panes wrote for ``day``, one cached frame per table (the partition column dropped:
    one day is one folder), for ``write_floor``. The caller unpersists them."""
    tables = [MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT]
    if reads_day_tiles(config):
        tables.append(DAILY_PARTIALS)
    rows = []
    for table in tables:
        (column,) = table.partition_by  # each is partitioned by its day alone
        df = delta_io.read_table(spark, table.path(lakehouse), partition_filters=day_filter(column, day, day))
        df = df.drop(column).persist()
        df.count()
        rows.append(df)
    return rows


def write_floor(rows: list[DataFrame], scratch: str) -> dict:
    """Spark's own Parquet writer over rows already computed: what writing them costs alone.

    Reading and grouping the events (the scan floor) and writing the output each keep most of
    the cores busy, so their sum is about the least a Spark method keeping panes' tables takes.
    """
    for i, df in enumerate(rows):
        df.write.mode("overwrite").parquet(f"{scratch}/{i}")
    return {}


def _window_days(day: date, length: int) -> date:
    """The first event day whose events can fall in a window ending on ``day``."""
    return day - timedelta(days=math.ceil(length / DAY_SECONDS))


def spark_builtin_window(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig,
                         length: int) -> dict:
    start, stop = day_start(day), day_start(day) + DAY_SECONDS
    events = _events(spark, lakehouse, _window_days(day, length), day, config)
    ends = F.unix_seconds(F.col("window.end"))
    windows = (
        events.where(F.unix_seconds("event_time") >= F.lit(start - length))
        .groupBy("key", F.window("event_time", f"{length} seconds", "1 minute"))
        .agg(F.count(F.lit(1)).alias("event_count"), F.sum("value").alias("sum"))
        .where((ends >= F.lit(start)) & (ends < F.lit(stop)))
    )
    interpreted = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    saved = {k: spark.conf.get(k, None) for k in interpreted}
    try:
        for k, v in interpreted.items():
            spark.conf.set(k, v)
        _noop(windows)
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    return {}


def spark_range_frame(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig,
                      length: int) -> dict:
    """Window values by Spark's RANGE frame, at every end where a bucket enters or leaves.

    A bucket starting at f is in the window ending at t when t - length <= f < t, so with rows
    ordered by the bucket's end e = f + 60 the window ending at t is the RANGE
    ``[t - (length - 60), t]``. A zero row at e + length makes the end where a bucket leaves a
    row too, so step-downs are seen as well. Spark evaluates a moving RANGE frame of an
    aggregate by refolding the frame's rows for every row: the cost panes avoids.
    """
    start, stop = day_start(day), day_start(day) + DAY_SECONDS
    events = _events(spark, lakehouse, _window_days(day, length), day, config)
    buckets = (events.where(F.unix_seconds("event_time") >= F.lit(start - length))
               .groupBy("key", (_minute() + 60).alias("end"))
               .agg(F.count(F.lit(1)).alias("n"), F.sum("value").alias("s")))
    points = (buckets.select("key", F.inline(F.array(
                  F.struct("end", "n", "s"),
                  F.struct((F.col("end") + length).alias("end"), F.lit(0).cast("long").alias("n"),
                           F.lit(0).cast("long").alias("s")))))
              .where(F.col("end") < stop)
              .groupBy("key", "end").agg(F.sum("n").alias("n"), F.sum("s").alias("s")))
    frame = Window.partitionBy("key").orderBy("end").rangeBetween(-(length - 60), 0)
    values = points.select("key", "end", F.sum("n").over(frame).alias("n"), F.sum("s").over(frame).alias("s"))
    by_key = Window.partitionBy("key").orderBy("end")
    changed = (~F.col("n").eqNullSafe(F.lag("n").over(by_key))) | (~F.col("s").eqNullSafe(F.lag("s").over(by_key)))
    _noop(values.withColumn("changed", changed).where((F.col("end") >= start) & F.col("changed")))
    return {}
