"""Values as of an instant: what each window held for a key at a time ``t``, from the window tables.

One definition serves every read: ``values_as_of`` (all keys at one instant, this module's
command line) and ``jobs.point_in_time_join`` (each spine row at its own instant) both call
``with_values_as_of`` on a frame of lookups ``(key, t)``.

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

How: an as-of join by sort, never a lookup per row nor a cross product. The lookups and every
point a lookup may read (change points, snapshot rows, sessions) are one union, sorted per key
by instant; one Spark window function per read window carries the key's last point forward
(``last(..., ignorenulls)`` over the rows before), and each lookup keeps what it carried if the
point is of the day it reads. All windows share the one sort. A snapshot row of day ``D - 1``
is placed at the first window end of day ``D``, so that only reads of ``D``'s windows see it.
The cost is a sort of the rows in (lookups and points), not rows times points.

With ``precision: event`` (``--precision event``) a sliding or cumulating window is read at the
instant itself instead: ``jobs.point_in_time_exact``.

    python -m jobs.point_in_time --lakehouse DIR --at 2025-01-30T12:00:00Z [--key K ...] [--precision event]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs import errors
from jobs.cli import documented_parser, group_arguments, parsed
from jobs.point_in_time_exact import with_exact_values
from jobs.storage import delta_io
from jobs.tables import ARRIVAL_PARTIALS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter, days
from jobs.windows.window_inputs import continued_windows
from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.spine import PRECISIONS, read_at_instant, selected
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

MICROS = 1_000_000
KEY, AT = "_pit_key", "_pit_at"
"""The lookups' key (a string) and instant (a timestamp): what ``with_values_as_of`` reads them by."""
_SORT, _RANK, _WINDOW, _POINT = "_pit_sort", "_pit_rank", "_pit_window", "_pit_point"
# At one instant: a snapshot row first (its day's state), then change points, then an inclusive
# lookup (it sees them); an exclusive lookup comes before all of them.
_SNAPSHOT_RANK, _CHANGE_RANK, _INCLUSIVE_RANK, _EXCLUSIVE_RANK = 0, 1, 2, -1


@dataclass(frozen=True)
class Reading:
    """What a read answers: which windows (sliding and session) and aggregations, and whether a
    change point exactly at the instant is seen (not with ``exclusive``)."""

    windows: tuple[WindowSpec | SessionSpec | CountSpec, ...]
    aggregations: tuple[Aggregation, ...]
    exclusive: bool = False
    precision: str = "bucket"  # "event": sliding and cumulating windows exact at the instant

    @classmethod
    def of(cls, config: PipelineConfig, windows: tuple[str, ...] | None = None,
           aggregations: tuple[str, ...] | None = None, exclusive: bool = False, *, where: str = "spine",
           precision: str = "bucket") -> Reading:
        """A join's reading: by name, every keyed window and every aggregation by default."""
        specs, aggs = selected(config, windows, aggregations, where=where)
        return cls(specs, aggs, exclusive, precision)

    @classmethod
    def everything(cls, config: PipelineConfig, precision: str = "bucket") -> Reading:
        return cls((*config.windows, *config.sessions, *config.counts), tuple(config.aggregations),
                   precision=precision)

    @property
    def exact(self) -> list[WindowSpec]:
        """The windows read at the instant itself (``precision: event``), not at a bucket end."""
        return [w for w in self.windows if self.precision == "event" and read_at_instant(w)]

    def columns(self, spec: WindowSpec | SessionSpec | CountSpec) -> list[str]:
        """A window's output columns in a join, in order."""
        return [f"{spec.name}__{c}" for c in ("window_end", "read_at", "event_count",
                                              *[a.name for a in self.aggregations])]


def end_at_or_before(seconds: Column, spec: WindowSpec) -> Column:
    """``WindowSpec.end_at_or_before`` as a Spark expression (epoch seconds)."""
    return seconds - F.pmod(seconds - F.lit(spec.end_offset), F.lit(spec.every))


def read_end(at: Column, spec: WindowSpec, exclusive: bool) -> Column:
    """The end ``L`` (epoch seconds) of the window a read at the timestamp ``at`` gets: the last
    end ``<= at``, or ``< at`` with ``exclusive``, at microsecond precision."""
    micros, unit = F.unix_micros(at), F.lit(MICROS)
    # whole seconds in integers: exact for every timestamp (a quotient in doubles keeps the
    # microseconds only while the seconds fit in 32 bits, until 2106)
    seconds = ((micros + F.pmod(-micros, unit)) / unit - 1) if exclusive else (micros - F.pmod(micros, unit)) / unit
    return end_at_or_before(seconds.cast("long"), spec)


def _read_end(at: datetime, spec: WindowSpec, exclusive: bool) -> int:
    """``read_end`` in Python, for the days a read reaches."""
    micros = (at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
    seconds = -(-micros // MICROS) - 1 if exclusive else micros // MICROS
    return spec.end_at_or_before(seconds)


def _day_of(seconds: int) -> date:
    return date(1970, 1, 1) + timedelta(days=seconds // DAY_SECONDS)


def _unix_day(day: date) -> int:
    return (day - date(1970, 1, 1)).days


# -- the points a read may see ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """The days a read of instants ``earliest .. latest`` reaches, per window."""

    reading: Reading
    config: PipelineConfig
    earliest: datetime
    latest: datetime

    def read_days(self, spec: WindowSpec) -> list[date]:
        """The days of the ends ``L`` of reads in the range: the change points' partitions."""
        first, last = (_day_of(_read_end(t, spec, self.reading.exclusive)) for t in (self.earliest, self.latest))
        return days(first, last)

    @property
    def grid(self) -> list[WindowSpec]:
        return [w for w in self.reading.windows if isinstance(w, WindowSpec)]

    @property
    def latest_rows(self) -> list[SessionSpec | CountSpec]:
        """The windows read as their key's latest row before the instant, of any earlier day."""
        return [w for w in self.reading.windows if isinstance(w, SessionSpec | CountSpec)]


def _point(reading: Reading, day: Column, at: Column) -> Column:
    values = [F.col(a.name).alias(a.name) for a in reading.aggregations]
    return F.struct(day.alias("day"), at.alias("at"), F.col("event_count").alias("event_count"), *values)


def _case(specs: list, value) -> Column:
    """A CASE over the row's window name (null for any other window)."""
    return reduce(lambda case, spec: case.when(F.col("window") == spec.name, value(spec)),
                  specs[1:], F.when(F.col("window") == specs[0].name, value(specs[0])))


def _change_points(spark: SparkSession, lakehouse: str, plan: _Plan, keys: list[str] | None) -> DataFrame | None:
    """Change points (and final rows) of each grid window on the days its reads reach, and the
    closed sessions and count windows' firings up to the last day read: one scan of
    ``window_changes``. A firing sorts a microsecond after its ``window_end`` unless the read is
    ``exclusive``: a read at that instant must not see it."""
    reading, specs = plan.reading, plan.grid
    read_days = {spec.name: plan.read_days(spec) for spec in specs}
    wanted = sorted({d for ds in read_days.values() for d in ds})
    filters = [[("date", "in", [d.isoformat() for d in wanted])]] if wanted else []
    if plan.latest_rows:
        filters.append([("date", "<=", plan.latest.date().isoformat())])
    if not filters:
        return None
    changes = _read(spark, WINDOW_CHANGES.path(lakehouse), filters, keys)
    index = {spec.name: i for i, spec in enumerate(reading.windows)}
    in_days = reduce(lambda a, b: a | b, [
        (F.col("window") == name) & F.col("date").between(F.lit(ds[0]), F.lit(ds[-1])) for name, ds in read_days.items()
    ] + [F.col("window").isin([s.name for s in plan.latest_rows])])
    at = F.unix_micros("window_end")
    counts = [w.name for w in reading.windows if isinstance(w, CountSpec)]
    shift = F.lit(0 if reading.exclusive else 1)
    sort = F.when(F.col("window").isin(counts), at + shift).otherwise(at) if counts else at
    return changes.where(in_days).select(
        F.col("key").alias(KEY), sort.alias(_SORT), F.lit(_CHANGE_RANK).alias(_RANK),
        _case(list(reading.windows), lambda spec: F.lit(index[spec.name])).alias(_WINDOW),
        _point(reading, F.unix_date("date"), at).alias(_POINT))


def _snapshot_points(spark: SparkSession, lakehouse: str, plan: _Plan, keys: list[str] | None
                     ) -> tuple[DataFrame | None, dict[str, list[date]]]:
    """Each changes-window's snapshot rows of the day before each day its reads reach, where
    that snapshot holds the window as configured; and per window the days it does not (whose
    state before a key's first change point is unknown, or known empty: ``_unknown_days``)."""
    specs = [s for s in plan.grid if s.emit == "changes"]
    if not specs:
        return None, {}
    read_days = {s.name: plan.read_days(s) for s in specs}
    before = sorted({d - timedelta(days=1) for ds in read_days.values() for d in ds})
    held = {d: continued_windows(spark, lakehouse, d, plan.config) for d in before}
    carried = {s.name: [d - timedelta(days=1) for d in read_days[s.name] if s.name in held[d - timedelta(days=1)]]
               for s in specs}
    not_carried = {s.name: [d for d in read_days[s.name] if s.name not in held[d - timedelta(days=1)]] for s in specs}
    snapshot_days = sorted({d for ds in carried.values() for d in ds})
    if not snapshot_days:
        return None, not_carried
    snapshot = _read(spark, WINDOW_SNAPSHOT.path(lakehouse),
                     [[("date", "in", [d.isoformat() for d in snapshot_days])]], keys)
    kept = [s for s in specs if carried[s.name]]
    index = {spec.name: i for i, spec in enumerate(plan.reading.windows)}
    holds = reduce(lambda a, b: a | b, [(F.col("window") == s.name) & F.col("date").isin(carried[s.name]) for s in kept])
    # Seen from the first end of the next day on: the day read (the end L's) is the next day.
    midnight = (F.unix_date("date").cast("long") + 1) * DAY_SECONDS
    first_end = _case(kept, lambda s: end_at_or_before(midnight - 1, s) + s.every)
    return snapshot.where(holds).select(
        F.col("key").alias(KEY), (first_end * MICROS).alias(_SORT), F.lit(_SNAPSHOT_RANK).alias(_RANK),
        _case(kept, lambda s: F.lit(index[s.name])).alias(_WINDOW),
        _point(plan.reading, F.unix_date("date") + 1, F.unix_micros("as_of")).alias(_POINT)), not_carried


def _unknown_days(lakehouse: str, plan: _Plan, not_carried: dict[str, list[date]]) -> dict[str, list[date]]:
    """The days whose state before a key's first change point is in no table: no snapshot of
    the day before holds the window, and frames lie in the window that state is of (the window
    ending at the last end before the day, which the day's run bootstrapped from them). With no
    frame there (the Delta log's statistics of frame_start say so) the state was empty."""
    unknown = {}
    for spec in plan.grid:
        unknown[spec.name] = [d for d in not_carried.get(spec.name, []) if _frames_before(lakehouse, spec, d)]
    return unknown


def _frames_before(lakehouse: str, spec: WindowSpec, day: date) -> bool:
    """Whether any frame may lie in the window ending at the last end before ``day``."""
    midnight = _unix_day(day) * DAY_SECONDS
    after = spec.end_at_or_before(midnight - 1)
    start = spec.window_start(after)
    table, column = (MINUTE_PARTIALS, "event_date") if spec.time == "event" else (ARRIVAL_PARTIALS, "frame_date")
    path = table.path(lakehouse)
    if after <= start or not delta_io.table_exists(path):
        return False
    files = delta_io.file_ranges(path, ["frame_start"],
                                 partition_filters=day_filter(column, _day_of(start), _day_of(after - 1)))
    low, high = (datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None) for t in (start, after))
    return any(f is None or (_naive(f["frame_start"][0]) < high and _naive(f["frame_start"][1]) >= low) for f in files)


def _naive(moment: datetime) -> datetime:
    """A statistic's timestamp as naive UTC (delta-rs gives either)."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


def _read(spark: SparkSession, path: str, filters: list, keys: list[str] | None) -> DataFrame:
    table = delta_io.read_table(spark, path, partition_filters=filters)
    return table if keys is None else table.where(F.col("key").isin(keys))


# -- the join ---------------------------------------------------------------------------------------


def with_values_as_of(spark: SparkSession, lakehouse: str, lookups: DataFrame, config: PipelineConfig,
                      reading: Reading, earliest: datetime, latest: datetime,
                      keys: list[str] | None = None) -> DataFrame:
    """``lookups`` (``KEY``, ``AT`` and any other columns) with each read window's columns
    (``Reading.columns``): ``window_end`` (the end of the window read; a session's own end),
    ``read_at`` (the ``window_end`` or snapshot ``as_of`` of the row the value was read from;
    null where the value is empty or unknown), ``event_count`` and each aggregation.

    ``earliest .. latest`` bound the lookups' instants (the days read follow from them);
    ``keys`` (optional) bounds their keys. See the module's docstring for the definition.
    """
    plan = _Plan(reading, config, earliest, latest)
    snapshots, not_carried = _snapshot_points(spark, lakehouse, plan, keys)
    unknown = _unknown_days(lakehouse, plan, not_carried)
    points = [p for p in (_change_points(spark, lakehouse, plan, keys), snapshots) if p is not None]
    rank = _EXCLUSIVE_RANK if reading.exclusive else _INCLUSIVE_RANK
    asks = lookups.withColumns({_SORT: F.unix_micros(AT), _RANK: F.lit(rank)})
    rows = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), [asks, *points])
    # One sort per key for every window: rows before a lookup are the points it may see.
    before = Window.partitionBy(KEY).orderBy(_SORT, _RANK, F.col(f"{_POINT}.day")).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    carried = [F.last(F.when(F.col(_WINDOW) == i, F.col(_POINT)), ignorenulls=True).over(before).alias(f"_pit_{i}")
               for i in range(len(reading.windows))]
    if not points:  # nothing to read: every lookup carries no point
        nothing = F.lit(None).cast(_point_type(reading))
        carried = [nothing.alias(f"_pit_{i}") for i in range(len(reading.windows))]
    kept = lookups.columns
    answered = rows.select(*kept, _RANK, *carried).where(F.col(_RANK) == rank)
    exact = {spec.name for spec in reading.exact}
    outputs = [c for i, spec in enumerate(reading.windows) if spec.name not in exact
               for c in _answer(F.col(f"_pit_{i}"), spec, reading, unknown.get(spec.name, []))]
    answered = answered.select(*kept, *outputs)
    if exact:
        columns = {spec.name: reading.columns(spec) for spec in reading.exact}
        answered = answered.join(with_exact_values(spark, lakehouse, lookups, KEY, AT, config, reading.exact,
                                                   reading.aggregations, columns, earliest, latest), [KEY, AT], "left")
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
        missing = (F.floor(end_seconds / DAY_SECONDS).isin([_unix_day(d) for d in unknown]) if unknown
                   else F.lit(False))
    values = [("event_count", F.lit(0).cast("bigint"), "bigint")]
    values += [(a.name, a.spark_empty_value(), a.output_type) for a in reading.aggregations]
    columns = [F.when(hit, end).otherwise(F.lit(None) if latest_row else end).alias(names[0]),
               F.when(hit, F.timestamp_micros(point["at"])).alias(names[1])]
    columns += [F.when(hit, point[field].cast(ddl)).when(~missing, empty).otherwise(F.lit(None).cast(ddl)).alias(name)
                for (field, empty, ddl), name in zip(values, names[2:])]
    return columns


# -- every key at one instant -----------------------------------------------------------------------


def values_as_of(spark: SparkSession, lakehouse: str, at: datetime, config: PipelineConfig,
                 keys: list[str] | None = None, precision: str = "bucket") -> DataFrame:
    """``key, window, window_end, event_count, <aggregations>`` of every non-empty key and window
    at ``at``: ``with_values_as_of`` with one lookup per key (the keys given, or every key of
    the rows read), keys with an empty or unknown value left out."""
    reading = Reading.everything(config, precision)
    plan = _Plan(reading, config, at, at)
    points = [p for p in (_change_points(spark, lakehouse, plan, keys), _snapshot_points(spark, lakehouse, plan, keys)[0])
              if p is not None]
    if keys is not None:
        lookups = spark.createDataFrame([(k,) for k in keys], f"{KEY} string")
    else:
        known = [p.select(KEY) for p in points]
        if reading.exact:  # a key whose only events came after the last window end has no point yet
            reach = at - timedelta(seconds=max(w.length for w in reading.exact))
            days = day_filter("event_date", reach.date(), at.date())
            known.append(_read(spark, MINUTE_PARTIALS.path(lakehouse), days, None).select(F.col("key").alias(KEY)))
        lookups = reduce(DataFrame.unionByName, known).distinct()
    lookups = lookups.withColumn(AT, F.lit(at).cast("timestamp"))
    joined = with_values_as_of(spark, lakehouse, lookups, config, reading, at, at, keys)
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
