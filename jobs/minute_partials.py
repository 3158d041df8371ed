"""Minute partials: one row per key and frame with the partial of every aggregation.

For event day D the events can have arrived on days D .. D + allowed lateness, so exactly those
arrival partitions are read. The same ``event_id`` arriving on two of those days counts once
(the first arrival wins, as ``windowing_core.reference`` defines). Each frame also carries
``event_count``, whatever aggregations are configured: it tells an empty state from a zero sum
and lets checks reconcile partials with events.

    python -m jobs.minute_partials --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

from datetime import date, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import delta_io
from jobs.tables import EVENTS, MINUTE_PARTIALS, day_filter
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
    """Group a day's events into frames; each partial field is the sum of its contributions."""
    sums = [F.count(F.lit(1)).alias("event_count")]
    for agg in config.aggregations:
        contributions = agg.spark_contributions(F.col("value"))
        sums += [F.sum(c).cast(f.spark_type).alias(name)
                 for c, f, name in zip(contributions, agg.fields, agg.field_columns(), strict=True)]
    return events.groupBy("key", "frame_start", "event_date").agg(*sums)


def minute_partials(events: DataFrame, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """Accepted events (from all arrival days that can hold them) to partials of event days."""
    return (
        events.transform(filter_event_days, first, last)
        .transform(deduplicate_across_arrivals)
        .transform(with_frame_start, config.bucket)
        .transform(to_partials, config)
        .select("key", "frame_start", "event_count",
                *[c for a in config.aggregations for c in a.field_columns()], "event_date")
    )


def arrival_days(first: date, last: date, config: PipelineConfig) -> tuple[date, date]:
    """Arrival days whose events can belong to event days ``first .. last``."""
    return first, last + timedelta(days=config.allowed_lateness_days)


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig) -> dict:
    """Compute event days ``first .. last`` and replace their partitions in one commit."""
    events = delta_io.read_table(spark, EVENTS.path(lakehouse),
                                 partition_filters=day_filter("arrival_date", *arrival_days(first, last, config)))
    partials = minute_partials(events, config, first, last)
    return delta_io.replace_partitions(partials, MINUTE_PARTIALS.path(lakehouse),
                                       partition_by=list(MINUTE_PARTIALS.partition_by),
                                       partition_filters=day_filter("event_date", first, last))


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
