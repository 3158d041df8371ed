"""Point-in-time reads: every window's value for a key (or all keys) as of an instant.

Answered from the window tables alone, never from events: the snapshot of the day before gives
each key's state as of that day's last window end, and the change points of the instant's own
day up to the instant override it. A key's value at ``t`` is the value of its latest change
point at or before ``t``. For ``final`` windows the value at ``t`` is the row of the last
window closed by ``t``, or nothing where the key had no events in it.

On a window's first day, where the snapshot of the day before holds no state of it (the
window was added, or redefined under its name, that day), a key's value before its first
change point of the day is in no table, and it is not answered.

    python -m jobs.point_in_time --lakehouse DIR --at 2025-01-30T12:00:00Z [--key K ...]
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, datetime, timedelta, timezone
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs import delta_io
from jobs.cli import documented_parser
from jobs.sliding_windows import continued_windows
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import from_epoch_seconds, to_epoch_seconds


def values_as_of(spark: SparkSession, lakehouse: str, at: datetime, config: PipelineConfig,
                 keys: list[str] | None = None) -> DataFrame:
    """``key, window, window_end, event_count, <aggregations>`` of every non-empty key and window."""
    values = [a.name for a in config.aggregations]
    answers = []
    continued: dict[date, set[str]] = {}
    for spec in config.windows:
        end = from_epoch_seconds(spec.end_at_or_before(to_epoch_seconds(at)))
        day = end.date()
        changes = _read(spark, WINDOW_CHANGES.path(lakehouse), day, keys).where(
            (F.col("window") == spec.name) & (F.col("window_end") <= F.lit(end)))
        if spec.emit == "final":
            latest = changes.where(F.col("window_end") == F.lit(end))
        else:
            before = day - timedelta(days=1)
            if before not in continued:
                continued[before] = continued_windows(spark, lakehouse, before, config)
            points = changes.select("key", "window_end", "event_count", *values)
            if spec.name in continued[before]:  # else its first day: the day before holds no state of it
                carried = _read(spark, WINDOW_SNAPSHOT.path(lakehouse), before, keys).where(
                    F.col("window") == spec.name).select("key", F.col("as_of").alias("window_end"), "event_count",
                                                         *values)
                points = carried.unionByName(points)
            newest = Window.partitionBy("key").orderBy(F.desc("window_end"))
            latest = points.withColumn("n", F.row_number().over(newest)).where("n = 1")
        answers.append(latest.where(F.col("event_count") > 0).select(
            "key", F.lit(spec.name).alias("window"), F.lit(end).alias("window_end"), "event_count", *values))
    return reduce(DataFrame.unionByName, answers)


def _read(spark: SparkSession, path: str, day: date, keys: list[str] | None) -> DataFrame:
    table = delta_io.read_table(spark, path, partition_filters=day_filter("date", day, day))
    return table if keys is None else table.where(F.col("key").isin(keys))


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 instant: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give a time zone (for example {text}Z): {text!r}")
    return moment.astimezone(timezone.utc)


def main(argv: list[str] | None = None) -> int:
    from jobs.spark_session import get_spark

    parser = documented_parser(__doc__)
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--at", required=True, type=_instant, help="ISO-8601 instant with a zone")
    parser.add_argument("--key", action="append", help="a key to read (repeatable); default: all keys")
    parser.add_argument("--config", default=None)
    parser.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
    args = parser.parse_args(argv)
    try:
        config = PipelineConfig.load(args.config)
    except ValueError as err:
        parser.error(f"bad configuration: {err}")
    try:
        rows = values_as_of(get_spark(), args.lakehouse, args.at, config, args.key)
        rows.orderBy("window", "key").show(args.limit, truncate=False)
    except delta_io.MissingTableError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
