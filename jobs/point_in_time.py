"""Values as of an instant: what each window held for a key at a time ``t``, from the window tables.

One definition serves every read: ``values_as_of`` (all keys at one instant, this module's
command line) and ``jobs.point_in_time_join`` (each spine row at its own instant) both join a
frame of lookups ``(key, t)`` to the window tables' points (``jobs.as_of.join``).

What a read at ``t`` gets (``exclusive``: ``<`` where ``<=`` is written):

- a sliding, tumbling or cumulating window emitting ``changes``: the value of the window
  ending at ``L``, the last window end ``<= t``. It is the key's latest change point with
  ``window_end <= L`` among the change points of ``L``'s day (``window_changes`` of that date),
  else the key's row in the snapshot of the day before (its state at that day's last end),
  else empty. The snapshot of the day before plus that day's change points: never a change
  point of another day, so a window redefined under its name is never read across the change.
- ``emit: final``: the row of the window ending at ``L`` exactly, else empty (no events in it).
- a session window: the key's latest row with ``window_end <= t``, from every day up to ``t``'s
  (no snapshot carries sessions), else empty. Under ``emit: final`` that is the latest closed
  session; a session still open at ``t`` is not seen. Under ``emit: changes`` it is the open
  session so far at the last bucket end at or before ``t``, or the step back to empty after it
  closed: the rows are change points on the bucket grid, each holding events before its end.
- a count window: the key's latest firing whose last event is before ``t`` (``window_end < t``,
  with or without ``exclusive``: its ``window_end`` is an event inside it), from every day up to
  ``t``'s, else empty.

Bounds: instants compare at microsecond precision (Spark's timestamps), window ends are whole
seconds. With a 10-minute slide a read at 12:00:00.000 gets the window ending 12:00:00 (with
``exclusive``, the one ending 11:50:00), and one at 11:59:59.999 the one ending 11:50:00. The
window read ends at or before ``t`` and holds events before its end only, so no value carries an
event at or after ``t``; ``exclusive`` also leaves out a change point exactly at ``t``.

Empty: ``event_count`` 0 and each aggregation's ``finish(empty())``: count 0, sum 0,
approx_distinct 0, the others (mean, variances, min, max, first, last) null.
Unknown: on a window's first day (added or redefined that day, or the first day materialised
where earlier frames exist), its state before a key's first change point of the day is in no
table: ``event_count`` and every value are null (``values_as_of`` leaves such keys out).

How: an as-of join by sort (``jobs.as_of.join``).

With ``precision: event`` (``--precision event``) a sliding or cumulating window is read at the
instant itself instead: ``jobs.as_of.exact``.

    python -m jobs.point_in_time --lakehouse DIR --at 2025-01-30T12:00:00Z [--key K ...] [--precision event]
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta, timezone
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import errors
from jobs.as_of.join import join_points
from jobs.as_of.points import ReadReach, read_points, read_rows
from jobs.as_of.reading import AT, KEY, Reading
from jobs.cli import documented_parser, group_arguments, parsed
from jobs.tables import MINUTE_PARTIALS, day_filter
from windowing_core.config import PipelineConfig
from windowing_core.spine import PRECISIONS


def values_as_of(spark: SparkSession, lakehouse: str, at: datetime, config: PipelineConfig,
                 keys: list[str] | None = None, precision: str = "bucket") -> DataFrame:
    """``key, window, window_end, event_count, <aggregations>`` of every non-empty key and window
    at ``at``: the as-of join with one lookup per key (the keys given, or every key of the points
    the join reads, read once for both), keys with an empty or unknown value left out."""
    reading = Reading.everything(config, precision)
    points = read_points(spark, lakehouse, ReadReach(reading, config, at, at), keys)
    if keys is not None:
        lookups = spark.createDataFrame([(k,) for k in keys], f"{KEY} string")
    else:
        known = [p.select(KEY) for p in points.rows]
        if reading.exact:  # a key whose only events came after the last window end has no point yet
            reach = at - timedelta(seconds=max(w.length for w in reading.exact))
            days = day_filter("event_date", reach.date(), at.date())
            known.append(read_rows(spark, MINUTE_PARTIALS.path(lakehouse), days, None).select(F.col("key").alias(KEY)))
        lookups = reduce(DataFrame.unionByName, known).distinct()
    lookups = lookups.withColumn(AT, F.lit(at).cast("timestamp"))
    joined = join_points(spark, lakehouse, lookups, points)
    answers = []
    for spec in reading.windows:
        end, _, count, *values = reading.columns(spec)
        answers.append(joined.where(F.col(count) > 0).select(
            F.col(KEY).alias("key"), F.lit(spec.name).alias("window"), F.col(end).alias("window_end"),
            F.col(count).alias("event_count"), *[F.col(v).alias(a.name) for v, a in zip(values, reading.aggregations)]))
    return reduce(DataFrame.unionByName, answers)


def instant(text: str) -> datetime:
    """An ISO-8601 instant with a zone, as UTC (for ``argparse``)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 instant: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give a time zone (for example {text}Z): {text!r}")
    return moment.astimezone(timezone.utc)


def main(argv: list[str] | None = None) -> int:
    from jobs.runtime.spark_session import get_spark

    parser = documented_parser(__doc__)
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--at", required=True, type=instant, help="ISO-8601 instant with a zone")
    parser.add_argument("--key", action="append", help="a key to read (repeatable); default: all keys")
    parser.add_argument("--config", default=None)
    parser.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
    parser.add_argument("--precision", choices=PRECISIONS, default="bucket",
                        help="event: sliding and cumulating windows hold exactly the events before --at "
                             "(default: bucket, the window ending at the last end before it)")
    group_arguments(parser)
    args, config = parsed(parser, argv)
    try:
        rows = values_as_of(get_spark(roots=[args.lakehouse]), args.lakehouse, args.at, config, args.key,
                            args.precision)
        rows.orderBy("window", "key").show(args.limit, truncate=False)
    except errors.MissingTableError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
