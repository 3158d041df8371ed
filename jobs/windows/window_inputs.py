"""What the windows job reads, and the plan that says which: per window and run, the ends it
computes and the frames, day tiles and snapshot they need (``ReadPlan``, pure arithmetic), the
reads themselves, and the refusals of inputs that were never materialised. The checks and the
point-in-time reads ask the same questions of the same tables (``continued_windows``,
``read_snapshot``), so they live here rather than in the job."""

from __future__ import annotations

from datetime import UTC, date, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.errors import MissingInputError
from jobs.storage import delta_io
from jobs.tables import (
    DAILY_PARTIALS, EVENTS, INTERVAL_STATE, LATE_EVENTS, MINUTE_PARTIALS, WINDOW_SNAPSHOT, day_filter, ingest_root,
)
from jobs.windows import arrival_frames
from jobs.windows.window_grid import Windows, seconds_of, utc_midnight
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.run_interval import RunInterval
from windowing_core.window_spec import DAY_SECONDS, WindowSpec, slides_over_day_tiles, tile_size

EPOCH = date(1970, 1, 1)


def days_of(*ranges: tuple[int, int]) -> list[str]:
    """ISO days holding any instant of the ``[start, stop)`` ranges."""
    return sorted({(EPOCH + timedelta(days=d)).isoformat() for start, stop in ranges if stop > start
                   for d in range(start // DAY_SECONDS, (stop - 1) // DAY_SECONDS + 1)})


def in_ranges(column: Column, ranges: list[tuple[int, int]]) -> Column:
    return reduce(lambda a, b: a | b, [(column >= start) & (column < stop) for start, stop in ranges])


class ReadPlan:
    """One window's time arithmetic for days ``first .. last``: which ends, which frames.

    A run below a day (``interval``, within the one day) emits the ends in it. It continues
    from the state at the last end before it where an earlier run of the day wrote that state
    (``carried``: ``interval_state``); otherwise from the day before's snapshot, computing the
    day's ends from midnight, so that it reads the day's frames so far."""

    def __init__(self, spec: WindowSpec, config: PipelineConfig, first: date, last: date,
                 interval: RunInterval | None = None, carried: bool = False) -> None:
        start, self.stop = day_start(first), day_start(last) + DAY_SECONDS
        day_last_end = spec.end_at_or_before(self.stop - 1)
        if interval is not None:  # within the one day first == last (sliding_windows.refuse_below_a_day)
            start, self.stop = interval.seconds
        self.after = spec.end_at_or_after(day_start(first)) - spec.every  # the last end before the first day
        self.last_end = spec.end_at_or_before(self.stop - 1)
        self.first_end = spec.end_at_or_after(start)  # the first end the run emits
        if carried:
            self.after = self.first_end - spec.every
        # Whether the run emits its last day's last end: only then does it write snapshots.
        self.ends_day = interval is None or self.first_end <= day_last_end == self.last_end
        length = spec.length
        # Frames entering in (after, stop) start in [after, last_end); frames leaving there
        # start one window length earlier. A cumulating window's leave together (period_leaves).
        self.delta_ranges = [(self.after - length, self.last_end - length),
                             (max(self.after, self.last_end - length), self.last_end)]
        # The window whose state the baseline is: a snapshot's (window_start, as_of), or the
        # frames a bootstrap folds.
        self.baseline_window = (spec.window_start(self.after), self.after)
        self.exact_ranges: list[tuple[int, int]] = []
        self.tile_days: list[str] = []
        if spec.cumulating:
            self.delta_ranges = [(self.after, self.last_end)]
            if any(not a.invertible for a in config.aggregations):  # the period so far
                # Every end from ``after`` on merges its period before it: the period of
                # ``after`` starts at ``start`` and the later ones within the run. Its whole days
                # before the day holding ``after`` are day tiles; the partial day at its start
                # and the days from ``after``'s on are frames (``exact_cumulating_values``).
                start = spec.window_start(self.after)
                whole = (-(-start // DAY_SECONDS) * DAY_SECONDS, self.after // DAY_SECONDS * DAY_SECONDS)
                if slides_over_day_tiles(spec) and whole[1] > whole[0]:
                    self.exact_ranges = [(start, whole[0]), (whole[1], self.last_end)]
                    self.tile_days = days_of(whole)
                else:
                    self.exact_ranges = [(start, self.last_end)]
        elif any(not a.invertible for a in config.aggregations):
            size = tile_size(spec)
            head = (self.after - length) // size * size
            if size < DAY_SECONDS:  # everything from the first head tile to the last end is small
                self.exact_ranges = [(head, self.last_end)]
            else:  # whole head and tail days as frames, the days between as tiles
                self.exact_ranges = [(head, (self.last_end - length) // size * size + size),
                                     (self.after // size * size, self.last_end)]
                self.tile_days = days_of((head + size, self.last_end // size * size))

    @property
    def emits(self) -> bool:
        """Whether the run has an end of this window (a run below a day may have none)."""
        return self.first_end <= self.last_end

    @property
    def frame_ranges(self) -> list[tuple[int, int]]:
        return self.delta_ranges + self.exact_ranges


def read_frames(spark: SparkSession, lakehouse: str, ranges: list[tuple[int, int]],
                 config: PipelineConfig | None = None, clock: str = "event") -> DataFrame:
    """Minute partials of frames starting in any range, reading only the days that hold them
    (for ``time: arrival`` windows the frames by arrival time, ``jobs.windows.arrival_frames``)."""
    if clock == "arrival":
        partials = arrival_frames.read_frames(spark, lakehouse, days_of(*ranges), config)
    else:
        partials = delta_io.read_table(spark, MINUTE_PARTIALS.path(lakehouse),
                                       partition_filters=[("event_date", "in", days_of(*ranges))])
    return partials.where(in_ranges(seconds_of(), ranges))


def read_day_tiles(spark: SparkSession, lakehouse: str, days: list[str], config: PipelineConfig | None = None,
                    clock: str = "event") -> DataFrame:
    if clock == "arrival":
        tiles = arrival_frames.read_day_tiles(spark, lakehouse, days, config)
    else:
        tiles = delta_io.read_table(spark, DAILY_PARTIALS.path(lakehouse),
                                    partition_filters=[("event_date", "in", days)])
    return tiles.withColumn("tile", utc_midnight(F.col("event_date")))


def unmaterialised_partials(spark: SparkSession, lakehouse: str, event_days: list[date],
                            config: PipelineConfig) -> list[date]:
    """The event days whose minute partials were never materialised, though their events were
    ingested: a window run over them would succeed with wrong values (their frames neither
    entering nor leaving), so the job refuses and a blocking check flags them.

    A day with frames, or with events the partials job kept as late (``behind_watermark``), was
    materialised. A day with neither is told apart from a day without events by ``events``:
    its events can have arrived on days D .. D + allowed lateness, and any one of them would have
    made a frame. The Delta logs' statistics answer for most days without a Spark job; the days
    left are checked in one query.
    """
    partials, late = (t.path(lakehouse) for t in (MINUTE_PARTIALS, LATE_EVENTS))
    events = EVENTS.path(ingest_root(lakehouse, config))
    lateness = timedelta(days=config.allowed_lateness_days)
    if not delta_io.table_exists(events):
        return []

    def empty(day: date) -> bool:
        frames = day_filter("event_date", day, day)
        if delta_io.table_exists(partials) and delta_io.row_count(partials, partition_filters=frames):
            return False
        return not (delta_io.table_exists(late) and delta_io.row_count(
            late, partition_filters=[*frames, ("reason", "=", "behind_watermark")]))

    suspect = [d for d in event_days if empty(d)
               and delta_io.row_count(events, partition_filters=day_filter("arrival_date", d, d + lateness))
               and _may_hold_events_of(events, d, lateness)]
    if not suspect:
        return []
    arrivals = sorted({a for d in suspect for a in day_filter("arrival_date", d, d + lateness)[0][2]})
    rows = (delta_io.read_table(spark, events, partition_filters=[("arrival_date", "in", arrivals)])
            .select(F.to_date("event_time").alias("event_date")).where(F.col("event_date").isin(suspect))
            .distinct().collect())
    return sorted(r["event_date"] for r in rows)


def _may_hold_events_of(events: str, day: date, lateness: timedelta) -> bool:
    """Whether the events that arrived on ``day .. day + lateness`` may hold one of ``day``, by
    the log's ``event_time`` statistics (yes, where a file has none). The days just before the
    first day of data are asked this on every bootstrap: answered here, no Spark job."""
    arrivals = day_filter("arrival_date", day, day + lateness)
    return any(f is None or f["event_time"][0].astimezone(UTC).date() <= day <= f["event_time"][1].astimezone(UTC).date()
               for f in delta_io.file_ranges(events, ["event_time"], partition_filters=arrivals))


def require_partials(spark: SparkSession, lakehouse: str, event_days: list[date], config: PipelineConfig) -> None:
    """Refuse to run over ``unmaterialised_partials``: a missing input, a one-line error."""
    missing = unmaterialised_partials(spark, lakehouse, event_days, config)
    if missing:
        listed = ", ".join(d.isoformat() for d in missing)
        raise MissingInputError(f"minute_partials of event day(s) {listed} were never materialised, though "
                                f"events holds their events: materialise minute_partials for {listed} first")


def continued_windows(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig) -> set[str]:
    """The configured windows whose state the snapshot of ``day`` holds, for the next day to
    continue from.

    A window's name can outlive its definition (the configuration edited between two days), so
    a window continues only where every row of it is the state of the interval the next day's
    baseline needs, ``(window_start, as_of)``. The others bootstrap, which is exact either way,
    as for a missing or empty snapshot.
    """
    held = _held_windows(spark, lakehouse, day)
    following = day + timedelta(days=1)
    continued = set()
    for spec in config.windows:
        start, as_of = ReadPlan(spec, config, following, following).baseline_window
        if held.get(spec.name) == ((start, start), (as_of, as_of)):
            continued.add(spec.name)
    return continued


def carried_windows(spark: SparkSession, lakehouse: str, config: PipelineConfig, interval: RunInterval,
                    plans: dict[str, ReadPlan], continued: set[str]) -> set[str]:
    """The windows a run of ``interval`` continues from the state at their last end before it:
    where that end lies within the day and an earlier run of the day reached it under the same
    definition (its marker row in ``interval_state``). Only windows the day before's snapshot
    continues, which holds the state of the keys the day has not changed; the others compute
    the day's ends from midnight (``plans``, not carried)."""
    wanted = {}
    for spec in config.windows:
        before = plans[spec.name].first_end - spec.every
        if spec.name in continued and before > plans[spec.name].after:
            wanted[spec.name] = (spec.window_start(before), before)
    path = INTERVAL_STATE.path(lakehouse)
    if not wanted or not delta_io.table_exists(path):
        return set()
    held = _reached_ends(spark, path, interval.day, sorted(wanted))
    return {name for name, (start, end) in wanted.items() if (name, start, end) in held}


def _reached_ends(spark: SparkSession, path: str, day: date, windows: list[str]) -> set[tuple[str, int, int]]:
    """``(window, window_start, as_of)`` of ``windows``' rows in ``interval_state`` of ``day``,
    in epoch seconds. A run writes one ``as_of`` and ``window_start`` per window (its last end),
    marker and keys alike, so where each file holds one window the Delta log's statistics
    answer, without a Spark job (``_held_windows``); otherwise one query of the markers does."""
    days = day_filter("date", day, day)
    files = delta_io.file_ranges(path, ["window", "window_start", "as_of"], partition_filters=days)
    if all(f is not None and all(low == high for low, high in f.values()) for f in files):
        return {(f["window"][0], int(f["window_start"][0].timestamp()), int(f["as_of"][0].timestamp()))
                for f in files if f["window"][0] in windows}
    marks = (delta_io.read_table(spark, path, partition_filters=days)
             .where(F.col("key").isNull() & F.col("window").isin(windows))
             .select("window", seconds_of("window_start"), seconds_of("as_of")))
    return {tuple(r) for r in marks.collect()}


def carried_state(spark: SparkSession, lakehouse: str, day: date, windows: Windows, after: Column,
                  snapshot: DataFrame, columns: list[str]) -> DataFrame:
    """Each key's state at its window's ``after`` within ``day``: its latest ``interval_state``
    row at or before it, else its row in the day before's ``snapshot``."""
    state = (delta_io.read_table(spark, INTERVAL_STATE.path(lakehouse), partition_filters=day_filter("date", day, day))
             .where(F.col("key").isNotNull() & windows.filter() & (F.col("as_of").cast("long") <= after)))
    rows = snapshot.where(windows.filter()).select("window", "key", "as_of", *columns).unionByName(
        state.select("window", "key", "as_of", *columns))
    return (rows.groupBy("window", "key").agg(F.max_by(F.struct(*columns), "as_of").alias("state"))
            .select("window", "key", "state.*"))


def _held_windows(spark: SparkSession, lakehouse: str, day: date) -> dict[str, tuple[tuple[int, int], ...]]:
    """Each window in the snapshot of ``day``, with the least and greatest ``window_start`` and
    ``as_of`` of its rows, in epoch seconds. The Delta log's statistics answer where each file
    holds one window, as under a single-window configuration, without a Spark job; otherwise one
    aggregate of the three columns does."""
    path, days = WINDOW_SNAPSHOT.path(lakehouse), day_filter("date", day, day)
    if not delta_io.table_exists(path) or "window_start" not in delta_io.table_columns(path):
        return {}  # none, or of a layout that did not say which interval its state is of
    files = delta_io.file_ranges(path, ["window", "window_start", "as_of"], partition_filters=days)
    if all(f is not None and f["window"][0] == f["window"][1] for f in files):
        by_window: dict[str, list[dict]] = {}
        for f in files:
            by_window.setdefault(f["window"][0], []).append(f)

        def bounds(of: list[dict], column: str) -> tuple[int, int]:
            least, greatest = min(f[column][0] for f in of), max(f[column][1] for f in of)
            return int(least.timestamp()), int(greatest.timestamp())

        return {window: (bounds(of, "window_start"), bounds(of, "as_of")) for window, of in by_window.items()}
    snapshot = delta_io.read_table(spark, path, partition_filters=days)
    ranges = snapshot.groupBy("window").agg(*[bound(seconds_of(column)) for column in ("window_start", "as_of")
                                              for bound in (F.min, F.max)])
    return {r[0]: ((r[1], r[2]), (r[3], r[4])) for r in ranges.collect()}


def read_snapshot(spark: SparkSession, lakehouse: str, day: date, windows: set[str]) -> DataFrame | None:
    """The rows of ``windows`` (``continued_windows``) in the snapshot of ``day``, or None for
    no windows: the job's baseline; the checks judge a day's first change points against it."""
    if not windows:
        return None
    days = day_filter("date", day, day)
    snapshot = delta_io.read_table(spark, WINDOW_SNAPSHOT.path(lakehouse), partition_filters=days)
    return snapshot.where(F.col("window").isin(sorted(windows)))
