"""Count windows: one row per firing, from the accepted events themselves, exactly.

The rules are ``windowing_core.count_windows``'s. A count cuts inside a frame, so the windows
read the events the partials job accepts (``minute_partials.accepted_events``: deduplicated,
filtered, late ones left out). Per window and key, in (event time, event id) order:

    position = the key's events before the run + row_number()
    event p  -> the firings f = kS with p <= f <= p + N - 1 (and f an event of the run's days)
    window f = one groupBy (window, key, f) folding its events (``spark_accumulate``, as the
               partials job folds a frame), the last of the firings at one instant kept
               (``lead`` over the key's firings)

so an event is folded into ``ceil(N / S)`` windows, the cost of Flink's evicting window, which
folds its N buffered events again at each firing; a tumbling window folds each event once.

Keys' numbers run across days, so ``count_state`` carries, per window and day, each key's events
that a window still to fire will hold (at most N - 1, with their numbers and the fields the
aggregations read: the next day numbers its events after them). The fields, not each event's
partials: a sketch's partial of one event is a whole sketch, its field one value, and the
windows then fold every event alike, carried or new. A row with a null key marks a day
materialised under the window's count and slide; where the day before has no such mark (the
first run, a day skipped, a window redefined) the numbers are bootstrapped once from every
earlier event, which is exact either way, as ``session_state`` is for sessions.
"""

from __future__ import annotations

from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.minute_partials import accepted_events, accumulations
from jobs.storage import delta_write
from jobs.tables import COUNT_STATE, TABLE_COLUMN, WINDOW_CHANGES, read_fields
from jobs.windows import carried_state
from jobs.windows.partial_merges import with_finished_values
from jobs.windows.window_grid import Windows
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval

EARLIEST = date(1970, 1, 1)
"""Where a bootstrap starts reading events: every day before the run."""
PIECE = ["window", "key", "event_time", "event_id"]
DEFINITION: carried_state.Definition = {"count_size": lambda s: s.size, "count_slide": lambda s: s.slide}
"""What a ``count_state`` row says of its window's definition."""


def event_pieces(events: DataFrame, config: PipelineConfig) -> DataFrame:
    """Each accepted event with the fields the aggregations read."""
    return events.select("key", "event_time", "event_id", "event_date", *read_fields(config))


def _for_windows(pieces: DataFrame, counts: Windows) -> DataFrame:
    return pieces.withColumn("window", F.explode(F.array(*[F.lit(n) for n in counts.names])))


def numbered(pieces: DataFrame, counts: Windows, first: date) -> DataFrame:
    """Each piece with its ``position`` in its key's events, ``total`` (the key's events up to the
    run's last day) and ``first_new`` (the position of the key's first event on or after
    ``first``). Carried pieces keep their numbers: they come first, and are contiguous."""
    by_key = Window.partitionBy("window", "key")
    offset = F.coalesce(F.min("position").over(by_key), F.lit(1)) - 1
    position = offset + F.row_number().over(by_key.orderBy("event_time", "event_id"))
    return (pieces.withColumn("position", position.cast("long"))
            .withColumn("total", F.max("position").over(by_key))
            .withColumn("first_new", F.min(F.when(F.col("event_date") >= F.lit(first), F.col("position")))
                        .over(by_key)))


def _multiple_at_or_after(n: Column, slide: Column) -> Column:
    """The least multiple of ``slide`` at or after ``n``, in whole numbers."""
    return n + slide - 1 - F.pmod(n + slide - 1, slide)


def firings(pieces: DataFrame, counts: Windows, config: PipelineConfig, first: date, last: date,
            interval: RunInterval | None = None) -> DataFrame:
    """``window_changes`` rows: every firing among the events of days ``first .. last`` (or in
    ``interval``)."""
    size, slide = counts.param(lambda s: s.size), counts.param(lambda s: s.slide)
    start = _multiple_at_or_after(F.greatest("position", "first_new"), slide)
    stop = F.least(F.col("position") + size - 1, F.col("total"))
    none = F.array().cast("array<long>")
    exploded = pieces.where(F.col("first_new").isNotNull()).withColumn(
        "fired", F.explode(F.when(start <= stop, F.sequence(start, stop, slide)).otherwise(none)))
    windows = exploded.groupBy("window", "key", "fired").agg(
        F.min("event_time").alias("window_start"), F.max("event_time").alias("window_end"), *accumulations(config))
    # of the firings at one instant the last; partitioned as the numbering was: no other shuffle
    next_end = F.lead("window_end").over(Window.partitionBy("window", "key").orderBy("fired"))
    kept = windows.withColumn("_next_end", next_end).where(
        F.col("_next_end").isNull() | (F.col("_next_end") != F.col("window_end")))
    return with_finished_values(kept, config).select(
        "key", "window", "window_start", "window_end", "event_count", *[a.name for a in config.aggregations],
        F.to_date("window_end").alias("date"), F.lit(WINDOW_CHANGES.name).alias(TABLE_COLUMN)
    ).where(F.col("date").between(F.lit(first), F.lit(last)) if interval is None else
            (F.col("window_end") >= F.lit(interval.start)) & (F.col("window_end") < F.lit(interval.until)))


def carried(pieces: DataFrame, counts: Windows, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """``count_state`` rows: per key and day of ``first .. last``, its events a window still to
    fire will hold, from their own day to the day before the event from which they are in no
    such window (``count_windows.released_after``)."""
    size, slide = counts.param(lambda s: s.size), counts.param(lambda s: s.slide)
    released = _multiple_at_or_after(F.col("position") + size, slide) - slide
    columns = ["key", "window", "position", "event_time", "event_id", *read_fields(config),
               *carried_state.definition_columns(counts, DEFINITION)]
    if first == last:  # one day: held at its end unless the key's count there releases it
        return pieces.where(released > F.col("total")).select(
            *columns, F.lit(first).alias("date"), F.lit(COUNT_STATE.name).alias(TABLE_COLUMN))
    ends = pieces.select("window", "key", F.col("position").alias("released"),
                         F.col("event_date").alias("released_on"))
    since = F.greatest(F.col("event_date"), F.lit(first))
    until = F.least(F.lit(last), F.date_sub(F.coalesce("released_on", F.lit(last + timedelta(days=1))), 1))
    return (pieces.withColumn("released", released.cast("long")).join(ends, ["window", "key", "released"], "left")
            .where(since <= until)
            .select(*columns, F.explode(F.sequence(since, until)).alias("date"),
                    F.lit(COUNT_STATE.name).alias(TABLE_COLUMN)))


def count_windows(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig,
                  interval: RunInterval | None = None) -> tuple[DataFrame | None, dict]:
    """The rows of ``window_changes`` and ``count_state`` (``TABLE_COLUMN``) of every count
    window for days ``first .. last``; ``info["baseline"]`` says per window whether it continued
    from the state of the day before or was bootstrapped from every earlier event.

    ``interval`` (part of the one day ``first == last``) writes the firings in it, numbering the
    day's events before its end after the state of the day before: a firing is its window's last
    event, so none in the part depends on a later one. Only the part that closes the day writes
    the day's state."""
    if not config.counts:
        return None, {"baseline": {}}
    counts = Windows(config.counts)
    state, continued = carried_state.continued_state(spark, lakehouse, COUNT_STATE, counts, DEFINITION, first)
    fresh = counts.where(lambda s: s.name not in continued)
    reach = EARLIEST if fresh else first
    events = event_pieces(accepted_events(spark, lakehouse, config, reach, last), config)
    if interval is not None:  # the day's events before the part's end
        events = events.where(F.col("event_time") < F.lit(interval.until))
    pieces = []
    if continued:
        pieces.append(_for_windows(events.where(F.col("event_date") >= F.lit(first)), counts.where(
            lambda s: s.name in continued)).withColumn("position", F.lit(None).cast("long")))
        pieces.append(state.select(*PIECE, *read_fields(config), "position",
                                   F.to_date("event_time").alias("event_date")))
    if fresh:
        pieces.append(_for_windows(events, fresh).withColumn("position", F.lit(None).cast("long")))
    union = pieces[0]
    for more in pieces[1:]:
        union = union.unionByName(more)
    ordered = numbered(union, counts, first)
    rows = firings(ordered, counts, config, first, last, interval)
    if interval is None or interval.closes_day:
        rows = (rows.unionByName(carried(ordered, counts, config, first, last), allowMissingColumns=True)
                .unionByName(carried_state.day_marks(spark, COUNT_STATE, counts, DEFINITION, first, last),
                             allowMissingColumns=True))
    return rows, {"baseline": {s.name: "state" if s.name in continued else "bootstrap" for s in counts.specs}}


def state_target(lakehouse: str, first: date, last: date, config: PipelineConfig) -> delta_write.Target:
    return carried_state.state_target(COUNT_STATE, lakehouse, first, last, config)
