"""The as-of join that answers every read of values at an instant (the definition of what a read
gets is ``jobs.point_in_time``'s docstring).

How: an as-of join by sort, never a lookup per row nor a cross product. The lookups and every
point a lookup may read (change points, snapshot rows, sessions) are one union, sorted per key
by instant; one Spark window function per read window carries the key's last point forward
(``last(..., ignorenulls)`` over the rows before), and each lookup keeps what it carried if the
point is of the day it reads. All windows share the one sort. A snapshot row of day ``D - 1``
is placed at the first window end of day ``D``, so that only reads of ``D``'s windows see it.
The cost is a sort of the rows in (lookups and points), not rows times points.
"""

from __future__ import annotations

from datetime import date, datetime
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.as_of.exact import with_exact_values
from jobs.as_of.points import EXCLUSIVE_RANK, INCLUSIVE_RANK, POINT, RANK, SORT, WINDOW, Points, ReadReach, read_points
from jobs.as_of.reading import AT, KEY, MICROS, Reading, read_end, unix_day
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import DAY_SECONDS, WindowSpec


def with_values_as_of(spark: SparkSession, lakehouse: str, lookups: DataFrame, config: PipelineConfig,
                      reading: Reading, earliest: datetime, latest: datetime,
                      keys: list[str] | None = None) -> DataFrame:
    """``lookups`` (``KEY``, ``AT`` and any other columns) with each read window's columns
    (``Reading.columns``): ``window_end`` (the end of the window read; a session's own end),
    ``read_at`` (the ``window_end`` or snapshot ``as_of`` of the row the value was read from;
    null where the value is empty or unknown), ``event_count`` and each aggregation.

    ``earliest .. latest`` bound the lookups' instants (the days read follow from them);
    ``keys`` (optional) bounds their keys. See ``jobs.point_in_time``'s docstring for the definition.
    """
    points = read_points(spark, lakehouse, ReadReach(reading, config, earliest, latest), keys)
    return join_points(spark, lakehouse, lookups, points)


def join_points(spark: SparkSession, lakehouse: str, lookups: DataFrame, points: Points) -> DataFrame:
    """``with_values_as_of`` from points already read: each lookup's instant must lie in
    ``points.plan``'s range, and its key among the keys the points were read for."""
    reading, plan = points.plan.reading, points.plan
    rank = EXCLUSIVE_RANK if reading.exclusive else INCLUSIVE_RANK
    asks = lookups.withColumns({SORT: F.unix_micros(AT), RANK: F.lit(rank)})
    rows = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), [asks, *points.rows])
    # One sort per key for every window: rows before a lookup are the points it may see.
    before = Window.partitionBy(KEY).orderBy(SORT, RANK, F.col(f"{POINT}.day")).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    carried = [F.last(F.when(F.col(WINDOW) == i, F.col(POINT)), ignorenulls=True).over(before).alias(f"_pit_{i}")
               for i in range(len(reading.windows))]
    if not points.rows:  # nothing to read: every lookup carries no point
        nothing = F.lit(None).cast(_point_type(reading))
        carried = [nothing.alias(f"_pit_{i}") for i in range(len(reading.windows))]
    kept = lookups.columns
    answered = rows.select(*kept, RANK, *carried).where(F.col(RANK) == rank)
    exact = {spec.name for spec in reading.exact}
    outputs = [c for i, spec in enumerate(reading.windows) if spec.name not in exact
               for c in _answer(F.col(f"_pit_{i}"), spec, reading, points.unknown.get(spec.name, []))]
    answered = answered.select(*kept, *outputs)
    if exact:
        columns = {spec.name: reading.columns(spec) for spec in reading.exact}
        answered = answered.join(with_exact_values(spark, lakehouse, lookups, KEY, AT, plan.config, reading.exact,
                                                   reading.aggregations, columns, plan.earliest, plan.latest),
                                 [KEY, AT], "left")
    return answered.select(*kept, *[c for spec in reading.windows for c in reading.columns(spec)])


def _point_type(reading: Reading) -> str:
    return ("struct<day:int,at:bigint,event_count:bigint"
            + "".join(f",{a.name}:{a.output_type}" for a in reading.aggregations) + ">")


def _answer(point: Column, spec: WindowSpec | SessionSpec | CountSpec, reading: Reading,
            unknown: list[date]) -> list[Column]:
    """A window's output columns from the point a lookup carried."""
    names = reading.columns(spec)
    latest_row = isinstance(spec, SessionSpec | CountSpec)
    if latest_row:
        hit, end = point.isNotNull(), F.timestamp_micros(point["at"])
        missing = F.lit(False)
    else:
        end_seconds = read_end(F.col(AT), spec, reading.exclusive)
        if spec.emit == "final":
            hit = point.isNotNull() & (point["at"] == end_seconds * MICROS)
        else:
            hit = point.isNotNull() & (point["day"] == F.floor(end_seconds / DAY_SECONDS))
        end = F.timestamp_seconds(end_seconds)
        missing = (F.floor(end_seconds / DAY_SECONDS).isin([unix_day(d) for d in unknown]) if unknown
                   else F.lit(False))
    values = [("event_count", F.lit(0).cast("bigint"), "bigint")]
    values += [(a.name, a.spark_empty_value(), a.output_type) for a in reading.aggregations]
    columns = [F.when(hit, end).otherwise(F.lit(None) if latest_row else end).alias(names[0]),
               F.when(hit, F.timestamp_micros(point["at"])).alias(names[1])]
    columns += [F.when(hit, point[field].cast(ddl)).when(~missing, empty).otherwise(F.lit(None).cast(ddl)).alias(name)
                for (field, empty, ddl), name in zip(values, names[2:])]
    return columns
