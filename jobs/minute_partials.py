"""Minute partials: one row per key and frame with the partial of every aggregation.

Alongside, where a non-invertible aggregation slides over a window of a day or more
(``windowing_core.config.reads_day_tiles``), ``daily_partials`` holds the same partials combined per
key and whole event day: the coarser tiles that let it slide exactly without reading every
frame of a long window (see ``windowing_core.aggregations``).

For event day D the events can have arrived on days D .. D + allowed lateness, so exactly those
arrival partitions are read. The same ``event_id`` arriving on two of those days counts once
(the first arrival wins, as ``windowing_core.reference`` defines). Each frame also carries
``event_count``, whatever aggregations are configured: it tells an empty state from a zero sum
and lets checks reconcile partials with events.

Computed fields (``columns``) are computed for every copy of an event before the deduplication,
and the row filter (``where``) judges the copy that counts: the events it does not select reach
neither the frames nor ``late_events`` (``windowing_core.reference``, step 5).

Under ``late_policy: drop`` the events behind the watermark at their arrival go to
``late_events`` (reason ``behind_watermark``) instead; the watermark is
``windowing_core.watermark``'s, computed here in Spark without sorting all events on one task.

    python -m jobs.minute_partials --lakehouse DIR --date YYYY-MM-DD
    python -m jobs.minute_partials --lakehouse DIR --from 2025-01-27T13:00 --until 2025-01-27T14:00

The second replaces the frames of part of a day (on the bucket grid) and refolds its tile.
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.runtime import pipes
from jobs.storage import commits, delta_io, delta_write
from jobs.storage.filters import interval as interval_filter
from jobs.tables import (
    ARRIVAL_PARTIALS,
    DAILY_PARTIALS,
    EVENTS,
    LATE_EVENTS,
    MINUTE_PARTIALS,
    TABLE_COLUMN,
    Table,
    day_filter,
    event_columns,
    frame_stamp,
    frame_times,
    ingest_root,
    partial_columns,
    read_fields,
)
from jobs.windows import arrival_frames
from jobs.windows.partial_merges import merges
from windowing_core.config import PipelineConfig, reads_day_tiles
from windowing_core.run_interval import RunInterval, refuse_below_a_day

BEHIND_WATERMARK = "behind_watermark"
SELECTED = "selected"
ARRIVAL_ORDER = ["arrival_date", "arrival_time", "source_file", "line"]


def with_watermark(events: DataFrame, config: PipelineConfig) -> DataFrame:
    """Add ``watermark``: the largest event time seen before each event, in arrival order,
    minus the maximum out-of-orderness (null for the first event of its scope).

    Per key it is one running max partitioned by key. Globally it is a parallel prefix scan:
    the events are cut into chunks of one arrival minute; each chunk's running max runs in its
    own task and starts from the max of all earlier chunks, which a window over the (small)
    table of chunk maxima gives. No task sorts more than one chunk or one key.

    Under ``watermark_clock: arrival`` (Bytewax's event clock) the same scan runs over each
    event's lead, ``event_time - arrival_time``: Bytewax's base moves to an event only where
    ``event_time - out_of_orderness`` is ahead of ``base + (arrival - base_arrival)``, that is
    where the event's lead exceeds the base's, so the watermark at an arrival ``a`` is
    ``a + (the largest lead seen before) - out_of_orderness``. ``windowing_core.watermark`` keeps
    Bytewax's step-by-step form, against which the tests hold this one.
    """
    before = Window.unboundedPreceding, -1
    arrival_clock = config.watermark_clock == "arrival"
    measure = (F.unix_micros("event_time") - F.unix_micros("arrival_time")) if arrival_clock else F.col("event_time")
    events = events.withColumn("measure", measure)
    if config.watermark_scope == "key":
        seen = F.max("measure").over(Window.partitionBy("key").orderBy(*ARRIVAL_ORDER).rowsBetween(*before))
        marked = events.withColumn("seen", seen)
    else:
        chunked = events.withColumn("chunk", F.struct("arrival_date", F.date_trunc("minute", "arrival_time")))
        maxima = chunked.groupBy("chunk").agg(F.max("measure").alias("chunk_max"))
        earlier = maxima.select("chunk", F.max("chunk_max").over(Window.orderBy("chunk").rowsBetween(*before))
                                .alias("earlier"))
        within = F.max("measure").over(Window.partitionBy("chunk").orderBy(*ARRIVAL_ORDER).rowsBetween(*before))
        marked = (chunked.join(F.broadcast(earlier), "chunk")
                  .withColumn("seen", F.greatest("earlier", within)).drop("chunk", "earlier"))
    seen_micros = (F.unix_micros("arrival_time") + F.col("seen")) if arrival_clock else F.unix_micros("seen")
    return marked.withColumn(
        "watermark", F.timestamp_micros(seen_micros - config.max_out_of_orderness * 1_000_000)
    ).drop("seen", "measure")


def with_computed_columns(events: DataFrame, config: PipelineConfig) -> DataFrame:
    """Add the computed fields (``columns``), each cast to its declared type, and under a row
    filter (``where``) ``selected``: whether it holds, null counting as false as in SQL's WHERE.
    Computed for every copy of an event, so the copy the deduplication keeps brings its own."""
    if config.columns:
        declared = dict(config.fields)
        events = events.withColumns({name: F.expr(sql).cast(declared[name]) for name, sql in config.columns})
    if config.where is not None:
        events = events.withColumn(SELECTED, F.coalesce(F.expr(config.where), F.lit(False)))
    return events


def filter_event_days(events: DataFrame, first: date, last: date) -> DataFrame:
    event_date = F.to_date("event_time")
    return events.where((event_date >= F.lit(first)) & (event_date <= F.lit(last)))


def deduplicate_across_arrivals(events: DataFrame, columns: list[str]) -> DataFrame:
    """The same event_id within one event day counts once: the earliest arrival wins.

    Returns ``event_date``, ``event_id``, the winner's ``arrival_date`` and its ``columns``:
    only what the caller reads afterwards is shuffled and sorted. The arrival day alone decides:
    ``events`` holds an ``event_id`` once per arrival day (ingest keeps the first, as the
    reference's step 1 does), so the reference's further order, file and raw line, never breaks
    a tie here, and leaving them out of the shuffled rows made the frames 1.07x to 1.19x faster at
    10^7 events over three runs, 1.27x at 10^4 (``bench/variants.py``). Were the table ever to
    hold an id twice in a day, the rest of the struct would still pick the same winner on every
    run. A ``min`` over a struct holding strings is a sort-based aggregate; shuffled first on the
    group's columns it runs whole on the reduce side, so the events are sorted once, not on
    both sides of the shuffle (duplicates are rare: a map-side pre-aggregate saves nothing).
    """
    first = F.min(F.struct("arrival_date", *[c for c in columns if c not in ("arrival_date", "event_id")]))
    return (
        events.withColumn("event_date", F.to_date("event_time"))
        .repartition("event_date", "event_id")
        .groupBy("event_date", "event_id")
        .agg(first.alias("first"))
        .select("event_date", "event_id", "first.*")
    )


def copies_of_ids_in(events: DataFrame, interval: RunInterval) -> DataFrame:
    """The copies of the event ids with a copy in ``interval``: all a part's deduplication needs.

    An event that counts in the part is the winning copy of its id, so that id has a copy in
    the part, and every copy of it is kept here: the winner is the day's. The day's other ids are
    left out before the deduplication's shuffle instead of after it; their ids, one hour's at
    most, are broadcast."""
    ids = events.where(in_interval(interval)).select("event_id")
    return events.join(F.broadcast(ids.distinct()), "event_id", "left_semi")


def in_interval(interval: RunInterval) -> Column:
    """Whether an event's time lies in the part ``interval``."""
    return (F.col("event_time") >= F.lit(interval.start)) & (F.col("event_time") < F.lit(interval.until))


def with_frame_start(events: DataFrame, bucket_seconds: int) -> DataFrame:
    seconds = F.unix_seconds("event_time")
    return events.withColumn("frame_start", F.timestamp_seconds(seconds - F.pmod(seconds, F.lit(bucket_seconds))))


def accumulations(config: PipelineConfig) -> list[Column]:
    """Aggregate columns folding a group's events into partials: ``event_count`` and each
    aggregation's ``spark_accumulate``, named as its partial columns."""
    folds = [F.count(F.lit(1)).alias("event_count")]
    for agg in config.aggregations:
        folds += [c.alias(name) for c, name in
                  zip(agg.spark_accumulate(agg.spark_value(), F.col("event_time")), agg.field_columns(), strict=True)]
    return folds


def to_partials(events: DataFrame, config: PipelineConfig) -> DataFrame:
    """Group a day's events into frames with each aggregation's ``spark_accumulate``."""
    times = []
    if frame_times(config):  # sessions: a frame's first and last event time (``windowing_core.sessions``)
        times = [F.min("event_time").alias("first_event_time"), F.max("event_time").alias("last_event_time")]
    return events.groupBy("key", "frame_start", "event_date").agg(*accumulations(config), *times)


def merge_partials(partials: DataFrame, config: PipelineConfig, *by: str | Column) -> DataFrame:
    """Combine partials per group with each aggregation's ``spark_merge``."""
    return partials.groupBy(*by).agg(*merges(config))


def to_daily_partials(partials: DataFrame, config: PipelineConfig) -> DataFrame:
    """One tile per key and event day."""
    return merge_partials(partials, config, "key", "event_date").select(
        "key", "event_count", *partial_columns(config), "event_date")


def minute_partials(events: DataFrame, config: PipelineConfig, first: date,
                    last: date) -> tuple[DataFrame, DataFrame]:
    """Accepted events (from all arrival days that can hold them) to partials of event days,
    and the events kept as late under the late policy."""
    partials, late, _ = frame_sets(events, config, first, last)
    return partials, late


def accepted_and_late(events: DataFrame, config: PipelineConfig, first: date, last: date,
                      interval: RunInterval | None = None) -> tuple[DataFrame, Column]:
    """The events of event days ``first .. last`` the partials fold, before the late policy: each
    event id once (the copy that arrived first), with its computed fields, where the filter
    selects it; and which of them are late (behind the watermark, under ``drop``). ``interval``
    keeps those of part of the day, chosen after the day's deduplication as a daily run's."""
    events = events.transform(with_computed_columns, config)
    selected = [SELECTED] if config.where is not None else []
    if config.late_policy == "drop":  # the watermark runs over every arrival, whatever its day
        events = events.transform(with_watermark, config)
        computed = [name for name, _ in config.columns]
        carried = [*event_columns(config), *computed, *selected, "watermark"]  # late events are kept whole
        is_late = F.coalesce(F.col("event_time") < F.col("watermark"), F.lit(False))
    else:
        measured = read_fields(config)  # only the fields aggregated
        carried = ["key", "event_time", *measured, *(["arrival_time"] if config.places_by_arrival else []),
                   *selected]
        is_late = F.lit(False)
    events = events.transform(filter_event_days, first, last)
    if interval is not None:
        events = events.transform(copies_of_ids_in, interval)
    unique = events.transform(deduplicate_across_arrivals, carried)
    if selected:  # the filter judges the copy that won, and late or not, the others are not this group's
        unique = unique.where(F.col(SELECTED)).drop(SELECTED)
    if interval is not None:
        unique = unique.where(in_interval(interval))
    return unique, is_late


def read_events(spark: SparkSession, lakehouse: str, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """The ingested events of every arrival day that can hold events of days ``first .. last``."""
    return delta_io.read_table(spark, EVENTS.path(ingest_root(lakehouse, config)),
                               partition_filters=day_filter("arrival_date", *arrival_days(first, last, config)))


def accepted_events(spark: SparkSession, lakehouse: str, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """The events of days ``first .. last`` exactly as the partials job folds them into frames
    (``key``, ``event_time``, ``event_date`` and what the aggregations read): for reads that
    need the events inside a frame (``jobs.as_of.exact``)."""
    unique, is_late = accepted_and_late(read_events(spark, lakehouse, config, first, last), config, first, last)
    return unique.where(~is_late)


def frame_sets(events: DataFrame, config: PipelineConfig, first: date, last: date,
               interval: RunInterval | None = None) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """``minute_partials``' two results, and where a window is by arrival time the same
    accepted events' frames by arrival time (``jobs.windows.arrival_frames``), else None."""
    unique, is_late = accepted_and_late(events, config, first, last, interval)
    partials = (
        unique.where(~is_late)
        .transform(with_frame_start, config.bucket)
        .transform(to_partials, config)
        .select("key", "frame_start", *frame_times(config), "event_count", *partial_columns(config), "event_date")
    )
    late_columns = [*event_columns(config), F.lit(BEHIND_WATERMARK).alias("reason"), "event_date", "arrival_date"]
    if config.late_policy == "drop":
        late = unique.where(is_late).select(*late_columns)
    else:  # nothing is late: the same schema, and no second pass over the events
        shape = events.withColumn("event_date", F.to_date("event_time")).select(*late_columns)
        late = events.sparkSession.createDataFrame([], shape.schema)
    arrival = arrival_frames.arrival_partials(unique.where(~is_late), config) if config.places_by_arrival else None
    return partials, late, arrival


def arrival_days(first: date, last: date, config: PipelineConfig) -> tuple[date, date]:
    """Arrival days whose events can belong to event days ``first .. last``."""
    return first, last + timedelta(days=config.allowed_lateness_days)


def write_tables(lakehouse: str, tables: list[tuple[Table, DataFrame, list, list]],
                 config: PipelineConfig) -> dict[str, dict]:
    """Replace each ``(table, rows, partition filters, row filters)``'s rows, all from one Spark write."""
    rows = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                  [df.withColumn(TABLE_COLUMN, F.lit(t.name)) for t, df, _, _ in tables])
    targets = {t.name: delta_write.Target(t.path(lakehouse), df.columns, list(t.partition_by), filters,
                                       stamp=frame_stamp(config) if t == MINUTE_PARTIALS else {}, row_filters=rows_in)
               for t, df, filters, rows_in in tables}
    return delta_write.replace_partitions_routed(rows, TABLE_COLUMN, targets)


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig, *,
        interval: RunInterval | None = None) -> dict:
    """Compute event days ``first .. last``; replace their partitions of minute_partials,
    daily_partials (where kept) and (behind the watermark) late_events in one routed write.

    ``interval`` (within the one day ``first == last``, on the bucket grid) runs part of a day:
    it replaces the frames starting in it and the late events of it, and refolds the day's tile
    from its frames as they then stand (``day_so_far``)."""
    refuse_below_a_day(config, "partials", interval, first, last)
    partials, late, arrival = frame_sets(read_events(spark, lakehouse, config, first, last), config, first, last,
                                         interval)
    days = day_filter("event_date", first, last)
    frame_rows, late_rows = ([interval_filter(c, interval.start, interval.until) for c in ("frame_start", "event_time")]
                             if interval else ([], []))
    late_days = [*days, ("reason", "=", BEHIND_WATERMARK)]
    late_path = LATE_EVENTS.path(lakehouse)
    write_late = (config.late_policy == "drop" or not delta_io.table_exists(late_path)
                  or delta_io.row_count(late_path, partition_filters=late_days))
    # The frames are written and folded into the daily tiles in one query, without a cache: Spark
    # reuses the shuffle both branches share, so the events are read, deduplicated and grouped
    # once, and AQE still merges small partitions (a persisted plan keeps all 8): 0.87 s against
    # 1.46 s at 10^4 events, and level at 10^7, 7.91 s against 7.70 s (``bench/variants.py``).
    tables = [(MINUTE_PARTIALS, partials, days, frame_rows)]
    if reads_day_tiles(config):
        day_frames = day_so_far(spark, lakehouse, partials, config, interval) if interval else partials
        tables.append((DAILY_PARTIALS, to_daily_partials(day_frames, config), days, []))
    if arrival is not None:  # every arrival frame the event days hold, whatever its own day
        tables.append((ARRIVAL_PARTIALS, arrival, days, []))
    if write_late:
        # Under ``include`` nothing is late: written only to create the table, or to empty
        # what an earlier ``drop`` run kept there (the Delta log says, without a Spark job).
        tables.append((LATE_EVENTS, late, late_days, late_rows))
    written = write_tables(lakehouse, tables, config)

    def rows(table: Table) -> int | None:  # None: not kept under this configuration
        return written[table.name]["rows_written"] if table.name in written else None

    return {**written[MINUTE_PARTIALS.name], "daily_rows_written": rows(DAILY_PARTIALS),
            "arrival_rows_written": rows(ARRIVAL_PARTIALS),
            "late_rows_written": rows(LATE_EVENTS) or 0}




def day_so_far(spark: SparkSession, lakehouse: str, partials: DataFrame, config: PipelineConfig,
               interval: RunInterval) -> DataFrame:
    """The day's frames as a run of part of it leaves them: its own, and the rest of the day's
    as written (read at the version before this run's commit)."""
    path = MINUTE_PARTIALS.path(lakehouse)
    if not delta_io.table_exists(path):
        return partials
    commits.require_stamp(path, frame_stamp(config))
    written = delta_io.read_table(spark, path, partition_filters=day_filter("event_date", interval.day, interval.day),
                                  columns=partials.columns)
    outside = (F.col("frame_start") < F.lit(interval.start)) | (F.col("frame_start") >= F.lit(interval.until))
    return partials.unionByName(written.where(outside))


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import run_job

    def job(spark, config, args, first, last):
        result = run(spark, args.lakehouse, first, last, config, interval=args.interval)
        pipes.report("minute_partials", result)
        return f"wrote {result['rows_written']} minute partials for {args.interval or f'{first} .. {last}'}"

    return run_job(__doc__, job, argv, below_a_day="partials")

if __name__ == "__main__":
    raise SystemExit(main())
