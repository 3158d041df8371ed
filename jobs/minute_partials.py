"""Minute partials: one row per key and frame with the partial of every aggregation.

Alongside, ``daily_partials`` holds the same partials combined per key and whole event day:
the coarser tiles that let non-invertible aggregations slide exactly without reading every
frame of a long window (see ``windowing_core.aggregations``).

For event day D the events can have arrived on days D .. D + allowed lateness, so exactly those
arrival partitions are read. The same ``event_id`` arriving on two of those days counts once
(the first arrival wins, as ``windowing_core.reference`` defines). Each frame also carries
``event_count``, whatever aggregations are configured: it tells an empty state from a zero sum
and lets checks reconcile partials with events.

    python -m jobs.minute_partials --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import delta_io
from jobs.tables import DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS, day_filter, partial_columns
from windowing_core.config import PipelineConfig


def filter_event_days(events: DataFrame, first: date, last: date) -> DataFrame:
    event_date = F.to_date("event_time")
    return events.where((event_date >= F.lit(first)) & (event_date <= F.lit(last)))


def deduplicate_across_arrivals(events: DataFrame) -> DataFrame:
    """The same event_id within one event day counts once: the earliest arrival wins."""
    first = F.min(F.struct("arrival_date", "source_file", "key", "event_time", "value"))
    return (
        events.withColumn("event_date", F.to_date("event_time"))
        .groupBy("event_date", "event_id")
        .agg(first.alias("first"))
        .select("event_date", "first.key", "first.event_time", "first.value")
    )


def with_frame_start(events: DataFrame, bucket_seconds: int) -> DataFrame:
    seconds = F.unix_seconds("event_time")
    return events.withColumn("frame_start", F.timestamp_seconds(seconds - F.pmod(seconds, F.lit(bucket_seconds))))


def to_partials(events: DataFrame, config: PipelineConfig) -> DataFrame:
    """Group a day's events into frames with each aggregation's ``spark_accumulate``."""
    folds = [F.count(F.lit(1)).alias("event_count")]
    for agg in config.aggregations:
        folds += [c.alias(name) for c, name in
                  zip(agg.spark_accumulate(F.col("value"), F.col("event_time")), agg.field_columns(), strict=True)]
    return events.groupBy("key", "frame_start", "event_date").agg(*folds)


def merge_partials(partials: DataFrame, config: PipelineConfig, *by: str | Column) -> DataFrame:
    """Combine partials per group with each aggregation's ``spark_merge``."""
    merges = [F.sum("event_count").alias("event_count")]
    for agg in config.aggregations:
        columns = agg.field_columns()
        merges += [c.alias(name) for c, name in
                   zip(agg.spark_merge([F.col(c) for c in columns]), columns, strict=True)]
    return partials.groupBy(*by).agg(*merges)


def to_daily_partials(partials: DataFrame, config: PipelineConfig) -> DataFrame:
    """One tile per key and event day."""
    return merge_partials(partials, config, "key", "event_date").select(
        "key", "event_count", *partial_columns(config), "event_date")


def minute_partials(events: DataFrame, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """Accepted events (from all arrival days that can hold them) to partials of event days."""
    return (
        events.transform(filter_event_days, first, last)
        .transform(deduplicate_across_arrivals)
        .transform(with_frame_start, config.bucket)
        .transform(to_partials, config)
        .select("key", "frame_start", "event_count", *partial_columns(config), "event_date")
    )


def arrival_days(first: date, last: date, config: PipelineConfig) -> tuple[date, date]:
    """Arrival days whose events can belong to event days ``first .. last``."""
    return first, last + timedelta(days=config.allowed_lateness_days)


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig) -> dict:
    """Compute event days ``first .. last``; replace their partitions of both tables."""
    events = delta_io.read_table(spark, EVENTS.path(lakehouse),
                                 partition_filters=day_filter("arrival_date", *arrival_days(first, last, config)))
    partials = minute_partials(events, config, first, last).persist()
    try:
        days = day_filter("event_date", first, last)
        written = delta_io.replace_partitions(partials, MINUTE_PARTIALS.path(lakehouse),
                                              partition_by=list(MINUTE_PARTIALS.partition_by),
                                              partition_filters=days)
        daily = delta_io.replace_partitions(to_daily_partials(partials, config), DAILY_PARTIALS.path(lakehouse),
                                            partition_by=list(DAILY_PARTIALS.partition_by), partition_filters=days)
    finally:
        partials.unpersist()
    return {**written, "daily_rows_written": daily["rows_written"]}


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import job_arguments, run_job

    parser = job_arguments(__doc__)
    args = parser.parse_args(argv)

    def job(spark, config):
        result = run(spark, args.lakehouse, args.date, args.until or args.date, config)
        return f"wrote {result['rows_written']} minute partials for {args.date} .. {args.until or args.date}"

    return run_job(parser, args, job)


if __name__ == "__main__":
    raise SystemExit(main())
