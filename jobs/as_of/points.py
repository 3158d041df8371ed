"""The points a read at an instant may see, as rows of the join's one sort per key: each
window's change points on the days its reads reach, the snapshot of the day before each (placed
at that day's first window end, so only reads of that day see it), the latest rows of session
and count windows, and the days whose state before a key's first change point is in no table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.as_of.reading import KEY, MICROS, Reading, day_of, end_at_or_before, read_end_seconds, unix_day
from jobs.storage import delta_io
from jobs.tables import ARRIVAL_PARTIALS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter, days
from jobs.windows.window_inputs import continued_windows
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

SORT, RANK, WINDOW, POINT = "_pit_sort", "_pit_rank", "_pit_window", "_pit_point"
# At one instant: a snapshot row first (its day's state), then change points, then an inclusive
# lookup (it sees them); an exclusive lookup comes before all of them.
SNAPSHOT_RANK, CHANGE_RANK, INCLUSIVE_RANK, EXCLUSIVE_RANK = 0, 1, 2, -1


@dataclass(frozen=True)
class ReadReach:
    """The days a read of instants ``earliest .. latest`` reaches, per window."""

    reading: Reading
    config: PipelineConfig
    earliest: datetime
    latest: datetime

    def read_days(self, spec: WindowSpec) -> list[date]:
        """The days of the ends ``L`` of reads in the range: the change points' partitions."""
        first, last = (day_of(read_end_seconds(t, spec, self.reading.exclusive)) for t in (self.earliest, self.latest))
        return days(first, last)

    @property
    def grid(self) -> list[WindowSpec]:
        return [w for w in self.reading.windows if isinstance(w, WindowSpec)]

    @property
    def latest_rows(self) -> list[SessionSpec | CountSpec]:
        """The windows read as their key's latest row before the instant, of any earlier day."""
        return [w for w in self.reading.windows if isinstance(w, SessionSpec | CountSpec)]


def point(reading: Reading, day: Column, at: Column) -> Column:
    values = [F.col(a.name).alias(a.name) for a in reading.aggregations]
    return F.struct(day.alias("day"), at.alias("at"), F.col("event_count").alias("event_count"), *values)


def case(specs: list, value) -> Column:
    """A CASE over the row's window name (null for any other window)."""
    return reduce(lambda case, spec: case.when(F.col("window") == spec.name, value(spec)),
                  specs[1:], F.when(F.col("window") == specs[0].name, value(specs[0])))


def change_points(spark: SparkSession, lakehouse: str, plan: ReadReach, keys: list[str] | None) -> DataFrame | None:
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
    changes = read_rows(spark, WINDOW_CHANGES.path(lakehouse), filters, keys)
    index = {spec.name: i for i, spec in enumerate(reading.windows)}
    in_days = reduce(lambda a, b: a | b, [
        (F.col("window") == name) & F.col("date").between(F.lit(ds[0]), F.lit(ds[-1])) for name, ds in read_days.items()
    ] + [F.col("window").isin([s.name for s in plan.latest_rows])])
    at = F.unix_micros("window_end")
    counts = [w.name for w in reading.windows if isinstance(w, CountSpec)]
    shift = F.lit(0 if reading.exclusive else 1)
    sort = F.when(F.col("window").isin(counts), at + shift).otherwise(at) if counts else at
    return changes.where(in_days).select(
        F.col("key").alias(KEY), sort.alias(SORT), F.lit(CHANGE_RANK).alias(RANK),
        case(list(reading.windows), lambda spec: F.lit(index[spec.name])).alias(WINDOW),
        point(reading, F.unix_date("date"), at).alias(POINT))


def snapshot_points(spark: SparkSession, lakehouse: str, plan: ReadReach, keys: list[str] | None
                    ) -> tuple[DataFrame | None, dict[str, list[date]]]:
    """Each changes-window's snapshot rows of the day before each day its reads reach, where
    that snapshot holds the window as configured; and per window the days it does not (whose
    state before a key's first change point is unknown, or known empty: ``unknown_days``)."""
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
    snapshot = read_rows(spark, WINDOW_SNAPSHOT.path(lakehouse),
                         [[("date", "in", [d.isoformat() for d in snapshot_days])]], keys)
    kept = [s for s in specs if carried[s.name]]
    index = {spec.name: i for i, spec in enumerate(plan.reading.windows)}
    holds = reduce(lambda a, b: a | b,
                   [(F.col("window") == s.name) & F.col("date").isin(carried[s.name]) for s in kept])
    # Seen from the first end of the next day on: the day read (the end L's) is the next day.
    midnight = (F.unix_date("date").cast("long") + 1) * DAY_SECONDS
    first_end = case(kept, lambda s: end_at_or_before(midnight - 1, s) + s.every)
    return snapshot.where(holds).select(
        F.col("key").alias(KEY), (first_end * MICROS).alias(SORT), F.lit(SNAPSHOT_RANK).alias(RANK),
        case(kept, lambda s: F.lit(index[s.name])).alias(WINDOW),
        point(plan.reading, F.unix_date("date") + 1, F.unix_micros("as_of")).alias(POINT)), not_carried


@dataclass(frozen=True)
class Points:
    """Every point the reads of ``plan`` may see (``change_points`` and ``snapshot_points``, those
    that exist), and per window the days whose earlier state is unknown (``unknown_days``)."""

    plan: ReadReach
    rows: list[DataFrame]
    unknown: dict[str, list[date]]


def read_points(spark: SparkSession, lakehouse: str, plan: ReadReach, keys: list[str] | None) -> Points:
    """The points of ``plan``'s reads, of ``keys`` only where given."""
    snapshots, not_carried = snapshot_points(spark, lakehouse, plan, keys)
    rows = [p for p in (change_points(spark, lakehouse, plan, keys), snapshots) if p is not None]
    return Points(plan, rows, unknown_days(lakehouse, plan, not_carried))


def unknown_days(lakehouse: str, plan: ReadReach, not_carried: dict[str, list[date]]) -> dict[str, list[date]]:
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
    midnight = unix_day(day) * DAY_SECONDS
    after = spec.end_at_or_before(midnight - 1)
    start = spec.window_start(after)
    table, column = (MINUTE_PARTIALS, "event_date") if spec.time == "event" else (ARRIVAL_PARTIALS, "frame_date")
    path = table.path(lakehouse)
    if after <= start or not delta_io.table_exists(path):
        return False
    files = delta_io.file_ranges(path, ["frame_start"],
                                 partition_filters=day_filter(column, day_of(start), day_of(after - 1)))
    low, high = (datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None) for t in (start, after))
    return any(f is None or (_naive(f["frame_start"][0]) < high and _naive(f["frame_start"][1]) >= low) for f in files)


def _naive(moment: datetime) -> datetime:
    """A statistic's timestamp as naive UTC (delta-rs gives either)."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


def read_rows(spark: SparkSession, path: str, filters: list, keys: list[str] | None) -> DataFrame:
    table = delta_io.read_table(spark, path, partition_filters=filters)
    return table if keys is None else table.where(F.col("key").isin(keys))
