"""Frames by arrival time, for processing-time windows (``time: arrival``).

A window with ``time: arrival`` places each event by its ``arrival_time`` instead of its event
time (Flink's processing-time windows, Akka's system-time windows). It folds the same accepted
events as every other window (both deduplications, the lateness cut, the late policy: each
decided at the event's arrival), only placed otherwise. So its frames are a second set of
partials beside ``minute_partials``: the partials job, which decides what is accepted per event
day, also groups the accepted events by key and *arrival* frame into ``arrival_partials``,
partitioned by the event day that wrote them and the day of the arrival frame. The sliding job
reads an arrival window's frames by ``frame_date`` and merges a key's frame across the event
days holding it; everything after that (running sums, tiles, snapshots) is the same.

Such windows are never late: an event's arrival frame is its arrival, so once an arrival day is
ingested (and the partials of the event days it reaches re-run) nothing more can enter that
day's frames, whatever the watermark. That holds where a record's ``arrival_time`` lies in the
day its landing folder is named for, as ingest sets it where the record has none (the file's
time).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.storage import delta_io
from jobs.tables import ARRIVAL_PARTIALS, frame_times, partial_columns
from jobs.windows.partial_merges import merges
from windowing_core.config import PipelineConfig


def arrival_partials(unique: DataFrame, config: PipelineConfig) -> DataFrame:
    """Accepted events (``event_date`` and ``arrival_time`` among their columns) to partials
    per key, arrival frame and event day. An event's time in these frames is its arrival time,
    so ``first`` and ``last`` are the first and last to arrive."""
    seconds = F.unix_seconds("arrival_time")
    framed = unique.withColumn("frame_start", F.timestamp_seconds(seconds - F.pmod(seconds, F.lit(config.bucket))))
    folds = [F.count(F.lit(1)).alias("event_count")]
    if frame_times(config, "arrival"):  # arrival sessions: the frame's first and last arrival
        folds += [F.min("arrival_time").alias("first_arrival_time"), F.max("arrival_time").alias("last_arrival_time")]
    for agg in config.aggregations:
        folds += [c.alias(name) for c, name in
                  zip(agg.spark_accumulate(agg.spark_value(), F.col("arrival_time")), agg.field_columns(), strict=True)]
    return (framed.groupBy("key", "frame_start", "event_date").agg(*folds)
            .select("key", "frame_start", *frame_times(config, "arrival"), "event_count", *partial_columns(config),
                    "event_date",
                    F.to_date("frame_start").alias("frame_date")))


def merged(frames: DataFrame, config: PipelineConfig, *by: str | Column, times: bool = False) -> DataFrame:
    """A key's arrival frame (or tile) merged over the event days holding parts of it (with
    ``times``, also its first and last arrival time, for sessions)."""
    bounds = [F.min("first_arrival_time").alias("first_arrival_time"),
              F.max("last_arrival_time").alias("last_arrival_time")] if times else []
    return frames.groupBy(*by).agg(*merges(config), *bounds)


def read_frames(spark: SparkSession, lakehouse: str, days: list[str], config: PipelineConfig) -> DataFrame:
    """The arrival frames of these days (ISO dates), one row per key and frame."""
    rows = delta_io.read_table(spark, ARRIVAL_PARTIALS.path(lakehouse), partition_filters=[("frame_date", "in", days)])
    return merged(rows, config, "key", "frame_start").select("key", "frame_start", "event_count",
                                                             *partial_columns(config))


def read_day_tiles(spark: SparkSession, lakehouse: str, days: list[str], config: PipelineConfig) -> DataFrame:
    """Whole arrival days as tiles (``daily_partials``' shape, by arrival day): merged from the
    day's arrival frames, since no table keeps them."""
    rows = delta_io.read_table(spark, ARRIVAL_PARTIALS.path(lakehouse), partition_filters=[("frame_date", "in", days)])
    return merged(rows, config, "key", F.col("frame_date").alias("event_date"))


def read_session_frames(spark: SparkSession, lakehouse: str, filters: list, config: PipelineConfig) -> DataFrame:
    """Arrival frames for session windows by arrival time (partition ``filters`` on
    ``frame_date``): one row per key and frame, with its first and last arrival time."""
    path = ARRIVAL_PARTIALS.path(lakehouse)
    missing = set(frame_times(config, "arrival")) - set(delta_io.table_columns(path))
    if missing:
        raise ValueError(f"{path} has no {', '.join(sorted(missing))}: it was written before a session window by "
                         "arrival time was configured; move it aside and materialise minute_partials again (a backfill)")
    rows = delta_io.read_table(spark, path, partition_filters=filters)
    return merged(rows, config, "key", "frame_start", times=True)
