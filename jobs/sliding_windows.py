"""Sliding windows: change points and per-key snapshots from minute partials, by entering and leaving.

For the window ends of days ``first .. last`` the job never expands a frame into the windows
that hold it and never refolds a whole window. A frame starting at ``f`` changes a window
exactly twice: when it enters (the first end ``t > f``) and when it leaves (the first end
``t > f + length``). So each frame becomes two deltas, ``+partial`` at its enter end and
``-partial`` at its leave end, and a key's invertible state at every end is

    baseline (its state just before ``first``) + running sum of its deltas up to that end,

one Spark window function. The baseline is the previous day's snapshot; only where that holds
no state of the window as configured (the first run, a day not materialised, a window added or
redefined since) is it bootstrapped once from the frames of the window before ``first``.
Non-invertible aggregations are evaluated at the same ends from hierarchical frames
(``exact_values``): the suffix of the tile the window starts in, whole tiles, and the prefix of
the tile it ends in. A daily run therefore reads the frames that enter and leave that day, the
day tiles in between, and one small snapshot, whatever the length.

The same machinery serves every window kind of ``WindowSpec``: offsets and gaps only move the
grid of ends (a frame in a gap enters and leaves at one end); a cumulating window's frames leave
together at its next period (``period_leaves``); a non-keyed window slides over the frames of all
keys combined (``with_all_keys``); ``final`` emission repeats a key's state at every end.

    python -m jobs.sliding_windows --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.runtime import pipes
from jobs.storage import commits, delta_write
from jobs.tables import (
    COUNT_STATE,
    MINUTE_PARTIALS,
    SESSION_STATE,
    TABLE_COLUMN,
    WINDOW_CHANGES,
    WINDOW_SNAPSHOT,
    day_filter,
    declared_columns,
    frame_stamp,
    partial_columns,
    written_together,
)
from jobs.tables import days as day_range
from jobs.windows import count_windows, session_windows
from jobs.windows.partial_merges import merged_in_passes, merges, most_rows_of, prefix_merged, with_finished_values
from jobs.windows.window_grid import Windows, floor_to, seconds_of, utc_midnight
from jobs.windows.window_inputs import (
    ReadPlan, continued_windows, days_of, in_ranges, read_day_tiles, read_frames, read_snapshot, require_partials,
)
from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.window_spec import ALL_KEYS, DAY_SECONDS, WindowSpec, tile_size

EPOCH = date(1970, 1, 1)


def state_columns(config: PipelineConfig) -> list[str]:
    """What the running sum carries: ``event_count`` (0 means empty) and the invertible partials."""
    return ["event_count", *partial_columns(config, invertible=True)]


def _invertible(config: PipelineConfig) -> list[Aggregation]:
    return [a for a in config.aggregations if a.invertible]


def merged_state(config: PipelineConfig, over: WindowSpec | None = None, prefix: str = "") -> list[Column]:
    """The state columns combined (in ``groupBy``, or over a window frame) with each invertible
    aggregation's own ``spark_merge``: a sum for vectors of sums, a merge of counts for a
    histogram. Named ``prefix`` + the column."""
    merged = [_over(F.sum("event_count"), over).alias(f"{prefix}event_count")]
    for a in _invertible(config):
        columns = a.field_columns()
        merged += [c.alias(f"{prefix}{n}") for c, n in zip(a.spark_merge([F.col(c) for c in columns], over), columns)]
    return merged


def negated_state(config: PipelineConfig, state: list[Column] | None = None) -> list[Column]:
    """``-state`` with each invertible aggregation's ``spark_negate``, named as the state columns."""
    columns = state_columns(config)
    values = dict(zip(columns, state or [F.col(c) for c in columns]))
    negated = [(-values["event_count"]).alias("event_count")]
    for a in _invertible(config):
        names = a.field_columns()
        negated += [c.alias(n) for c, n in zip(a.spark_negate([values[n] for n in names]), names)]
    return negated


def _over(aggregate: Column, window: WindowSpec | None) -> Column:
    return aggregate if window is None else aggregate.over(window)


def _timestamp(seconds: Column | str) -> Column:
    return F.timestamp_seconds(F.col(seconds) if isinstance(seconds, str) else seconds)


def _utc_date(seconds: Column) -> Column:
    """The UTC date of an instant in epoch seconds, as whole days since 1970: ``to_date`` of a
    timestamp takes each row through java.time's zone rules (4 percent of the sliding job's
    samples in a profile), the same answer in UTC."""
    return F.date_from_unix_date((floor_to(seconds, DAY_SECONDS) / DAY_SECONDS).cast("int"))


def with_all_keys(frames: DataFrame, config: PipelineConfig, *by: str) -> DataFrame:
    """Frames (or tiles) of every key combined into one key, ``ALL_KEYS``, per ``by`` (the frame
    or tile and its day): what a non-keyed window (``keyed: false``, Flink's ``windowAll``)
    slides over. Every partial combines, invertible or not, so the window is exact as for a key.
    All keys being one, its running sum is one task's work, as Flink's windowAll runs at
    parallelism 1; its input is one row per frame, whatever the number of keys."""
    return frames.groupBy(*by).agg(*merges(config)).select(F.lit(ALL_KEYS).alias("key"), *by, "event_count",
                                                    *partial_columns(config))


# -- invertible aggregations: a running sum of entering and leaving deltas ------------------------


def frame_deltas(frames: DataFrame, windows: Windows, config: PipelineConfig, after: Column,
                 stop: int) -> DataFrame:
    """``+state`` at each frame's enter end, ``-state`` at its leave end, for ends in (after, stop).

    One pass over the frames (each tagged with its ``window``) emits both deltas of a frame
    (``inline`` of a two-element array), so the frames are read once and never cached.
    ``entering`` counts the frames entering at an end.

    A cumulating window's frames leave together, at the first end of the next period: those
    deltas are ``period_leaves``, one per key and period, and the frames give only ``+state``.
    """
    state = state_columns(config)
    f, bucket = seconds_of(), windows.param(lambda s: s.bucket)
    enter = F.struct(windows.end_at_or_after(f + bucket).alias("end"), *[F.col(c).alias(c) for c in state],
                     F.lit(1).alias("entering"))
    leave = F.struct(windows.end_at_or_after(f + windows.param(lambda s: s.length) + bucket).alias("end"),
                     *negated_state(config), F.lit(0).alias("entering"))
    both = windows.choose(lambda s: s.cumulating, lambda: F.array(enter), lambda: F.array(enter, leave))
    return (frames.select("window", "key", F.inline(both))
            .where((F.col("end") > after) & (F.col("end") < stop)))


def period_leaves(entering: DataFrame, windows: Windows, config: PipelineConfig, stop: int) -> DataFrame:
    """A cumulating window starts again each period: ``-state`` of the whole period (the
    baseline's state where the period began before the run, plus the frames entering since) at
    the period's restart, the first end of the next period. One row per key and period, from the
    rows the running sum reads anyway, so no frame of an earlier day is read to deduct it."""
    restart = (windows.window_start_of(F.col("end")) + windows.param(lambda s: s.length)
               + windows.param(lambda s: s.step))
    return (entering.groupBy("window", "key", restart.alias("end")).agg(*merged_state(config))
            .where(F.col("end") < stop).select("window", "key", "end", *negated_state(config),
                                               F.lit(0).alias("entering")))


KEY_HASH = "key_hash"  # the high 32 bits of xxhash64(key): the running sum's first sort column


def with_key_hash(deltas: DataFrame) -> DataFrame:
    return deltas.withColumn(KEY_HASH, F.shiftright(F.xxhash64("key"), 32))


def presorted_by_key(deltas: DataFrame, windows: Windows, after: Column) -> DataFrame:
    """The deltas clustered on key and, within each task, in the running sum's order already.

    Spark's radix sort serves only a sort on one column whose 8-byte prefix is its whole value,
    so the Window's own sort on (key, end) runs comparisons: 29 percent of the sliding job's
    samples in a JFR profile at 10^7 events (``bench.profile``). Sorting first on one long,
    ``(key_hash << 32) + (place << 27) + (end - after)``, is a radix sort, and the Window's sort
    on (key_hash, window, key, end) then finds its input in order: one run of TimSort. ``place``
    is the window's among the run's, in the Window's order; ends lie after ``after`` (the
    baseline's end) within the run, less than 2**27 s (four years) later. Exact whatever the hash,
    the places and the run's length: out-of-order rows only leave the Window's sort some rows to
    move, which it still does. The sliding job's rows into the ``noop`` sink, interleaved, best
    of 5: 1.17x faster at 10^7 events, 1.09x at 10^6, level at 10^4 (``bench/variants.py``, since removed, reran the comparison: git log).
    """
    place = {name: i for i, name in enumerate(sorted(windows.names))}
    order = (F.shiftleft(F.col(KEY_HASH), 32) + F.shiftleft(windows.param(lambda s: place[s.name]), 27)
             + (F.col("end") - after))
    return with_key_hash(deltas).repartition(KEY_HASH, "window", "key").sortWithinPartitions(order)


def with_running_state(deltas: DataFrame, config: PipelineConfig) -> DataFrame:
    """Each key's state at every end where its window changes: the running sum of its deltas
    (``presorted_by_key``, whose ``key_hash`` it partitions on beside the key).

    A RANGE frame sums all of a key's deltas up to and including a row's end, so deltas sharing
    an end (a frame entering as another leaves, the baseline) need no aggregate first: every
    row of an end carries the same state, and the last of them is kept. ``entering`` counts
    the frames entering at the end (the end's peers). One shuffle on key and one ordering serve
    these frames; a per-(key, end) sum first, hashing nearly as many groups as rows, was slower
    (``bench/variants.py``).

    The same Window hands each kept row what the marks need from its neighbours, so they need
    no second Window: ``previous_*``, the invertible state at the key's previous end (this
    end's minus the deltas at it), and ``next_end`` (the row after an end's last is the first
    of the key's next end).
    """
    by_key = Window.partitionBy(KEY_HASH, "window", "key").orderBy("end")
    upto, at = (by_key.rangeBetween(Window.unboundedPreceding, Window.currentRow),
                by_key.rangeBetween(Window.currentRow, Window.currentRow))
    state = state_columns(config)
    running = deltas.select("window", "key", "end", F.sum("entering").over(at).alias("entering"),
                            *merged_state(config, upto),
                            *merged_state(config, at, prefix="at_end_")[1:],
                            F.lead("end").over(by_key).alias("next_end"))
    last_of_end = F.col("next_end").isNull() | (F.col("next_end") != F.col("end"))
    previous = []
    for a in _invertible(config):
        names = a.field_columns()
        previous += [c.alias(f"previous_{n}") for c, n in zip(
            a.spark_deduct([F.col(n) for n in names], [F.col(f"at_end_{n}") for n in names]), names)]
    return running.where(last_of_end).select("window", "key", "end", "entering", *state, *previous, "next_end")


def baseline_from_snapshot(snapshot: DataFrame, windows: Windows, config: PipelineConfig,
                           after: Column) -> DataFrame:
    return snapshot.where(windows.filter()).select(
        "window", "key", after.alias("end"), *state_columns(config), F.lit(0).alias("entering"))


def baseline_from_frames(frames: DataFrame, windows: Windows, config: PipelineConfig,
                         plans: dict[str, ReadPlan]) -> DataFrame:
    """Bootstrap: fold the frames of the window ending at each window's ``after`` (only where no
    snapshot holds its state); ``frames`` are tagged with their window."""
    f = seconds_of()
    start, at = windows.param(lambda s: plans[s.name].baseline_window[0]), windows.param(lambda s: plans[s.name].after)
    inside = frames.where((f >= start) & (f < at))
    return inside.groupBy("window", "key").agg(*merged_state(config)).select(
        "window", "key", at.alias("end"), *state_columns(config), F.lit(0).alias("entering"))


# -- non-invertible aggregations: exact over hierarchical frames ----------------------------------


def _running_merge(rows: DataFrame, config: PipelineConfig, order: list[Column], most_frames: int) -> DataFrame:
    """Each query row's merge of the frame rows before it in ``order`` within its (key, tile),
    which holds at most ``most_frames`` frame rows (``frames_per_tile``), per window.

    Three ways, by what Spark can merge incrementally over a growing window frame:
    - a window aggregate (``spark_merge`` over the frame: sums, min/max, sketch unions);
    - a partial that is a collection (``Aggregation.spark_elements``: k-lists, distinct sets):
      ``flatten(collect_list(...))`` would copy every partial before the row at every row, so it
      is exploded, one row per element (the other partials ride on its first), and merged
      element by element (``spark_merge_elements``: ``max_by``/``min_by`` with k, whose buffer
      is at most k long);
    - a partial Spark has no aggregate for (``spark_combine``): the frame rows' prefix merges
      (``prefix_merged``, frame rows before query rows), and each query row takes the last
      frame row's before it.
    """
    window = Window.partitionBy("window", "key", "tile").orderBy(*order).rowsBetween(Window.unboundedPreceding, 0)
    aggregations = [a for a in config.aggregations if not a.invertible]
    scanned = merged_in_passes(aggregations)
    if scanned:
        rows = prefix_merged(rows, scanned, ["window", "key", "tile"], [F.col("is_query").asc(), *order], most_frames)
    listed = {a.name for a in aggregations if a.spark_elements([F.col(c) for c in a.field_columns()]) is not None}
    if listed:  # query rows (null partials) and empty lists keep one row, position null
        lists = [a.field_columns()[0] for a in aggregations if a.name in listed]
        rows = rows.select("*", F.posexplode_outer(F.arrays_zip(*[F.col(c) for c in lists])).alias("__pos", "__item"))
    first = F.col("__pos").isNull() | (F.col("__pos") == 0)
    merged = []
    for agg in aggregations:
        columns = agg.field_columns()
        if agg in scanned:
            prefix = F.last(F.when(~F.col("is_query"), F.struct(*columns)), ignorenulls=True).over(window)
            merged += [prefix[c].alias(c) for c in columns]
        elif agg.name in listed:
            merged += [c.alias(n) for c, n in zip(agg.spark_merge_elements(F.col("__item")[columns[0]], window),
                                                  columns)]
        else:
            fields = [F.when(first, F.col(c)) if listed else F.col(c) for c in columns]
            merged += [c.alias(n) for c, n in zip(agg.spark_merge(fields, window), columns)]
    return rows.select("window", "key", "end", "is_query", *merged).where("is_query").drop("is_query")


def _nulls(config: PipelineConfig) -> list[Column]:
    return [F.lit(None).cast(t).alias(c) for a in config.aggregations if not a.invertible
            for c, t in zip(a.field_columns(), [x.spark_type for x in a.fields])]


def exact_values(frames: DataFrame, tiles: DataFrame, ends: DataFrame, windows: Windows,
                 config: PipelineConfig) -> DataFrame:
    """Non-invertible partials of the window ending at each (window, key, end) in ``ends``.

    The window ``[t - length, t)`` splits into the suffix of the tile holding its start (frames
    at or after the start), the whole tiles strictly between, and the prefix of the tile holding
    its end (frames before the end): the two stacks of a two-stacks queue (Hirzel et al.), here
    as running aggregates over one tile's frames, and never a refold of the window's frames.
    """
    size = windows.param(tile_size)
    fields = partial_columns(config, invertible=False)
    f = seconds_of()
    frame_rows = frames.select("window", "key", f.alias("pos"), floor_to(f, size).alias("tile"), *fields,
                               F.lit(False).alias("is_query"), F.lit(None).cast("long").alias("end"))
    start = F.col("end") - windows.param(lambda s: s.length)

    # suffix of the start's tile: frames with f >= start, so frames sort before the query on ties
    head_queries = ends.select("window", "key", start.alias("pos"), floor_to(start, size).alias("tile"),
                               *_nulls(config), F.lit(True).alias("is_query"), "end")
    most_frames = frames_per_tile(frame_rows, config)
    head = _running_merge(frame_rows.unionByName(head_queries), config,
                          [F.col("pos").desc(), F.col("is_query").asc()], most_frames)
    # prefix of the end's tile: frames with f < end, so the query sorts before frames on ties
    tail_queries = ends.select("window", "key", F.col("end").alias("pos"), floor_to(F.col("end"), size).alias("tile"),
                               *_nulls(config), F.lit(True).alias("is_query"), "end")
    tail = _running_merge(frame_rows.unionByName(tail_queries), config,
                          [F.col("pos").asc(), F.col("is_query").desc()], most_frames)
    # whole tiles strictly between: evaluated once per key and tile span, not per end
    spans = ends.select("window", "key", "end", (floor_to(start, size) + size).alias("lo"),
                        floor_to(F.col("end"), size).alias("hi"))
    distinct_spans = spans.select("window", "key", "lo", "hi").distinct()
    inside = distinct_spans.join(tiles, (distinct_spans.window == tiles.window) & (distinct_spans.key == tiles.key)
                                 & (tiles.tile >= distinct_spans.lo) & (tiles.tile < distinct_spans.hi)
                                 ).select(distinct_spans.window, distinct_spans.key, "lo", "hi", *fields)
    per_span = merge_non_invertible(inside, config, "window", "key", "lo", "hi")
    middle = spans.join(per_span, ["window", "key", "lo", "hi"]).select("window", "key", "end", *fields)
    return merge_non_invertible(head.unionByName(tail).unionByName(middle), config, "window", "key", "end")


def exact_cumulating_values(frames: DataFrame, tiles: DataFrame | None, ends: DataFrame, windows: Windows,
                            config: PipelineConfig) -> DataFrame:
    """Non-invertible partials of a cumulating window at each (window, key, end): a running
    merge of the frames (and whole-day ``tiles``, where the plan reads them: ``ReadPlan``) of the
    end's period before the end (a frame or tile sorts after a query at its own position; a tile
    lies wholly before every end of the run), one Window over the period's frames and never a
    refold per end. Day tiles keep a long period's read to its whole days' tiles plus the frames
    of at most two partial days, whatever the length."""
    fields = partial_columns(config, invertible=False)
    step = windows.param(lambda s: s.step)
    f = seconds_of()
    frame_rows = frames.select("window", "key", f.alias("pos"), windows.window_start_of(f + step).alias("tile"),
                               *fields, F.lit(False).alias("is_query"), F.lit(None).cast("long").alias("end"))
    if tiles is not None:
        at = F.col("tile")
        frame_rows = frame_rows.unionByName(tiles.select(
            "window", "key", at.alias("pos"), windows.window_start_of(at + step).alias("tile"), *fields,
            F.lit(False).alias("is_query"), F.lit(None).cast("long").alias("end")))
    queries = ends.select("window", "key", F.col("end").alias("pos"), windows.window_start_of(F.col("end")).alias("tile"),
                          *_nulls(config), F.lit(True).alias("is_query"), "end")
    # a period's frame rows: its frames and the whole-day tiles read for the days they do not cover
    merged = _running_merge(frame_rows.unionByName(queries), config, [F.col("pos").asc(), F.col("is_query").desc()],
                            frames_per_tile(frame_rows, config))
    return merge_non_invertible(merged, config, "window", "key", "end")


def frames_per_tile(frame_rows: DataFrame, config: PipelineConfig) -> int:
    """The most frame rows of one (key, tile), counted only where a partial merges in passes."""
    return most_rows_of(frame_rows, "window", "key", "tile") if merged_in_passes(config.aggregations) else 0


def merge_non_invertible(rows: DataFrame, config: PipelineConfig, *by: str) -> DataFrame:
    merged = []
    for agg in config.aggregations:
        if not agg.invertible:
            columns = agg.field_columns()
            merged += [c.alias(n) for c, n in zip(agg.spark_merge([F.col(c) for c in columns]), columns)]
    return rows.groupBy(*by).agg(*merged)


def tiles_of(frames: DataFrame, windows: Windows, config: PipelineConfig) -> DataFrame:
    """Tiles smaller than a day, merged from frames the job reads anyway."""
    tiled = frames.withColumn("tile", floor_to(seconds_of(), windows.param(tile_size)))
    return merge_non_invertible(tiled, config, "window", "key", "tile")


# -- change points and snapshots ------------------------------------------------------------------


def with_emission_marks(values: DataFrame, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """Mark each of a key's ends with what both tables need.

    ``changed``: some finished value differs from the key's previous end (a key's first end
    compares with the empty window, whose finished values every key starts from). An
    invertible aggregation's previous state rides on the row (``previous_*``); only a
    non-invertible one, whose exact values join in after the running sum, takes a ``lag`` over
    a second Window. Without one the marks are plain expressions: 1.25x faster at 10^7 events
    than ``lag`` and ``lead`` over a second Window, and 1.79x at 10^4 (``bench/variants.py``).
    ``date``/``until``: the day of an end (the baseline's end counts as the first day) and, on
    the day's last end, the last day its state holds before the key's next change.
    """
    by_key = Window.partitionBy("window", "key").orderBy("end")

    def previous(a: Aggregation) -> Column:
        if a.invertible:
            return a.spark_finish([F.col(f"previous_{c}") for c in a.field_columns()])
        return F.when(F.lag("end").over(by_key).isNull(), a.spark_empty_value()).otherwise(
            F.lag(a.name).over(by_key))

    changed = reduce(lambda a, b: a | b, [~a.spark_comparable(F.col(a.name)).eqNullSafe(
        a.spark_comparable(previous(a).cast(a.output_type))) for a in config.aggregations])

    def day_of(end: Column) -> Column:
        return F.greatest(_utc_date(end), F.lit(first))

    day, next_end = day_of(F.col("end")), F.col("next_end")
    until = (F.when(next_end.isNull(), F.lit(last))
             .when(day_of(next_end) > day, F.date_sub(day_of(next_end), 1)))  # else null: not the day's last
    handed_on = [f"previous_{c}" for c in partial_columns(config, invertible=True)]  # next_end: final rows
    marks = [changed.alias("changed"), day.alias("date"), until.alias("until")]
    return values.select("*", *marks).drop(*handed_on)


def table_rows(marked: DataFrame, windows: Windows, config: PipelineConfig, plans: dict[str, ReadPlan]) -> DataFrame:
    """Both tables' rows of one window from one pass over its marks, tagged by ``TABLE_COLUMN``.

    ``window_changes``: the change points, or for ``final`` emission one row per key and window
    end whose window holds events (as Flink and Bytewax emit). A key's state holds from one of
    its ends to the next, so a ``final`` row of a sliding or cumulating window is repeated at
    every end in between (a sequence of ends; tumbling windows and gaps need one). That is the
    cost ``final`` asks for: a 7d window sliding every minute writes 10,080 rows for each key with
    one event. ``window_snapshot``: each key's state as of each day's last window end, carried
    over the following days without a change (a sequence of days, never of windows); empty keys
    drop out.

    Each marked row is tagged for both tables and kept where it belongs, by two generators that
    Spark compiles: one pass, no cache, and at 10^7 events faster than persisting the marks and
    filtering them per table or than building arrays of structs per row with lambdas (which win
    only on small days, where both are fast; ``bench/variants.py``). The second generator's
    elements are longs for both tables: ends in epoch seconds, or days since 1970.
    """
    end, is_change = F.col("end"), F.col(TABLE_COLUMN) == WINDOW_CHANGES.name
    slide, after = windows.param(lambda s: s.slide), windows.param(lambda s: plans[s.name].after)
    # ``final``: every end from this one to the key's next, within the run
    first = F.greatest(end, after + slide)
    last = F.coalesce(F.col("next_end") - slide, windows.param(lambda s: plans[s.name].last_end))
    def final(s: WindowSpec) -> bool:
        return s.emit == "final"

    emitted = windows.choose(final, lambda: (F.col("event_count") > 0) & (first <= last),
                             lambda: (end > after) & F.col("changed"))
    change_ends = windows.choose(final, lambda: F.sequence(first, last, slide), lambda: F.array(end))
    held = F.col("until").isNotNull() & (F.col("event_count") > 0)
    tagged = (marked.select("*", F.explode(F.array(F.lit(WINDOW_CHANGES.name), F.lit(WINDOW_SNAPSHOT.name)))
                            .alias(TABLE_COLUMN))
              .where(F.when(is_change, emitted).otherwise(held)))
    days = tagged.select("*", F.explode(F.when(is_change, change_ends).otherwise(
        F.sequence(F.unix_date("date").cast("long"), F.unix_date("until").cast("long")))).alias("at"))
    at = F.col("at")
    day = F.when(is_change, _utc_date(at)).otherwise(F.date_from_unix_date(at.cast("int")))
    as_of = windows.end_at_or_after(utc_midnight(day) + DAY_SECONDS) - slide
    return days.select(
        "key",
        "window",
        _timestamp(windows.window_start_of(F.when(is_change, at).otherwise(as_of))).alias("window_start"),
        F.when(is_change, _timestamp(at)).alias("window_end"),
        F.when(~is_change, _timestamp(as_of)).alias("as_of"),
        "event_count",
        *[F.when(~is_change, F.col(c)).alias(c) for c in partial_columns(config, invertible=True)],
        *[a.name for a in config.aggregations],
        day.alias("date"),
        TABLE_COLUMN,
    )


# -- the job --------------------------------------------------------------------------------------


class _Inputs:
    """What a run reads, per window: its frames (a non-keyed window's of all keys combined:
    ``with_all_keys``) within the ranges a step needs, and its tiles, each row tagged with its
    ``window``, so that one plan serves all windows (``jobs.windows.window_grid``)."""

    def __init__(self, spark: SparkSession, lakehouse: str, frames: DataFrame, config: PipelineConfig,
                 plans: dict[str, ReadPlan], clock: str) -> None:
        self.spark, self.lakehouse, self.config, self.plans, self.clock = spark, lakehouse, config, plans, clock
        self.frames = {True: frames}
        if any(not s.keyed for s in config.windows):
            self.frames[False] = with_all_keys(frames, config, "frame_start", "event_date")
        self.columns = ["key", "frame_start", *state_columns(config), *partial_columns(config, invertible=False)]

    def frames_of(self, windows: Windows, ranges: Callable[[WindowSpec], list[tuple[int, int]]]) -> DataFrame:
        return reduce(DataFrame.unionByName, [
            self.frames[s.keyed].where(in_ranges(seconds_of(), ranges(s))).select(F.lit(s.name).alias("window"),
                                                                                 *self.columns)
            for s in windows.specs])

    def tiles_of(self, windows: Windows) -> DataFrame | None:
        """Each window's tiles for its exact values: whole days (``daily_partials``) where its plan
        reads them, else (a sliding window) tiles merged from its frames, or none."""
        fields = ["window", "key", "tile", *partial_columns(self.config, invertible=False)]
        by_day = windows.where(lambda s: bool(self.plans[s.name].tile_days))
        parts = []
        if by_day:
            days = sorted({d for s in by_day.specs for d in self.plans[s.name].tile_days})
            tiles = {True: read_day_tiles(self.spark, self.lakehouse, days, self.config, self.clock)}
            if any(not s.keyed for s in by_day.specs):
                tiles[False] = with_all_keys(tiles[True], self.config, "tile", "event_date")
            for s in by_day.specs:
                midnights = [day_start(date.fromisoformat(d)) for d in self.plans[s.name].tile_days]
                parts.append(tiles[s.keyed].where(F.col("tile").isin(midnights))
                             .select(F.lit(s.name).alias("window"), *fields[1:]))
        from_frames = windows.where(lambda s: not self.plans[s.name].tile_days and not s.cumulating)
        if from_frames:
            frames = self.frames_of(from_frames, lambda s: self.plans[s.name].exact_ranges)
            parts.append(tiles_of(frames, from_frames, self.config).select(*fields))
        return reduce(DataFrame.unionByName, parts) if parts else None


def window_values(inputs: _Inputs, baseline: DataFrame, windows: Windows, stop: int) -> DataFrame:
    """Every aggregation's finished value at each (window, key, end) where a key's window can change."""
    plans, config = inputs.plans, inputs.config
    after = windows.param(lambda s: plans[s.name].after)
    deltas = frame_deltas(inputs.frames_of(windows, lambda s: plans[s.name].delta_ranges), windows, config,
                          after, stop).unionByName(baseline)
    cumulating = windows.where(lambda s: s.cumulating)
    if cumulating:
        entering = deltas if cumulating.names == windows.names else deltas.where(cumulating.filter())
        deltas = deltas.unionByName(period_leaves(entering, cumulating, config, stop))
    running = with_running_state(presorted_by_key(deltas, windows, after), config)
    exact = []
    for is_cumulating, values in ((False, exact_values), (True, exact_cumulating_values)):
        family = windows.where(lambda s, c=is_cumulating: s.cumulating == c and bool(plans[s.name].exact_ranges))
        if family:
            ends = running.select("window", "key", "end")
            ends = ends if family.names == windows.names else ends.where(family.filter())
            frames = inputs.frames_of(family, lambda s: plans[s.name].exact_ranges)
            exact.append(values(frames, inputs.tiles_of(family), ends, family, config))
    if exact:
        running = running.join(reduce(DataFrame.unionByName, exact), ["window", "key", "end"], "left")
    return with_finished_values(running, config)


def sliding_windows(spark: SparkSession, lakehouse: str, first: date, last: date,
                    config: PipelineConfig, clock: str = "event") -> tuple[DataFrame | None, dict]:
    """The rows of both tables (``table_rows``) of every configured window, for days ``first .. last``.

    All windows come from one read of the minute partials, the union of the frames each needs
    (with ``clock="arrival"``, of the frames by arrival time: ``jobs.windows.arrival_frames``), and go
    through one plan (``jobs.windows.window_grid``). The rows are None for a configuration without
    sliding windows. ``info["baseline"]`` says per window whether it continued from the snapshot
    of the day before ``first`` or was bootstrapped; ``info["persisted"]`` lists what the caller
    unpersists once the rows are written.
    """
    commits.require_stamp(MINUTE_PARTIALS.path(lakehouse), frame_stamp(config))
    if not config.windows:  # only session windows (jobs.windows.session_windows)
        return None, {"baseline": {}, "persisted": []}
    plans = {spec.name: ReadPlan(spec, config, first, last) for spec in config.windows}
    continued = continued_windows(spark, lakehouse, first - timedelta(days=1), config)
    previous = read_snapshot(spark, lakehouse, first - timedelta(days=1), continued)
    ranges = [r for p in plans.values() for r in p.frame_ranges]
    ranges += [p.baseline_window for name, p in plans.items() if name not in continued]
    # Every day whose frames the run reads, the days before ``first`` too: a bootstrap reads a
    # window's length of them, and a frame never made would silently neither enter nor leave.
    # A day before the data holds no events and passes (``unmaterialised_partials``).
    read = day_range(first, last) if clock == "arrival" else [date.fromisoformat(d) for d in days_of(*ranges)]
    require_partials(spark, lakehouse, read, config)
    frames = read_frames(spark, lakehouse, ranges, config, clock)
    persisted = []
    # The daily case (one invertible window continuing from a snapshot) reads the frames once;
    # anything reading them again (a bootstrap, exact values, more windows) reads them cached.
    if len(continued) < len(plans) or len(plans) > 1 or any(p.exact_ranges for p in plans.values()):
        frames = frames.persist()
        persisted.append(frames)
    try:
        inputs = _Inputs(spark, lakehouse, frames, config, plans, clock)
        windows = Windows(config.windows)
        baselines = []
        if continued:
            kept = windows.where(lambda s: s.name in continued)
            baselines.append(baseline_from_snapshot(previous, kept, config, kept.param(lambda s: plans[s.name].after)))
        bootstrapped = windows.where(lambda s: s.name not in continued)
        if bootstrapped:
            at = inputs.frames_of(bootstrapped, lambda s: [plans[s.name].baseline_window])
            baselines.append(baseline_from_frames(at, bootstrapped, config, plans))
        stop = day_start(last) + DAY_SECONDS
        values = window_values(inputs, reduce(DataFrame.unionByName, baselines), windows, stop)
        rows = table_rows(with_emission_marks(values, config, first, last), windows, config, plans)
    except BaseException:  # the caller unpersists only what it is handed
        for df in persisted:
            df.unpersist()
        raise
    info = {"baseline": {name: "snapshot" if name in continued else "bootstrap" for name in plans},
            "persisted": persisted}
    return rows, info


def by_clock(config: PipelineConfig, clock: str) -> PipelineConfig | None:
    """The configuration with only the sliding windows of one clock (``time``), or None."""
    windows = tuple(w for w in config.windows if w.time == clock)
    return replace(config, windows=windows, sessions=(), counts=()) if windows else None


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig) -> dict:
    """Compute days ``first .. last`` and replace both tables' partitions, from one pass; with
    session or count windows configured, their rows and ``session_state`` or ``count_state`` join
    the same write (``jobs.windows.session_windows``, ``jobs.windows.count_windows``)."""
    commits.require_whole_writes([t.path(lakehouse) for t in written_together(WINDOW_CHANGES, config)], first, last)
    event = by_clock(config, "event")
    rows, info = (sliding_windows(spark, lakehouse, first, last, event) if event
                  else (None, {"baseline": {}, "persisted": []}))
    if config.arrival_windows:  # ``time: arrival``: the same job over the frames by arrival time
        arrival_rows, arrival_info = sliding_windows(spark, lakehouse, first, last, by_clock(config, "arrival"),
                                                     clock="arrival")
        rows = arrival_rows if rows is None else rows.unionByName(arrival_rows)
        info = {"baseline": {**info["baseline"], **arrival_info["baseline"]},
                "persisted": info["persisted"] + arrival_info["persisted"]}
    sessions, session_info = session_windows.session_windows(spark, lakehouse, first, last, config)
    counts, count_info = count_windows.count_windows(spark, lakehouse, first, last, config)
    rows = with_key_columns(reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                                   [r for r in (rows, sessions, counts) if r is not None]), config)
    days = day_filter("date", first, last)
    targets = {t.name: delta_write.Target(t.path(lakehouse), [c for c, _ in declared_columns(t.name, config)],
                                       list(t.partition_by), days) for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT)}
    if config.sessions:
        targets[SESSION_STATE.name] = session_windows.state_target(lakehouse, first, last, config)
    if config.counts:
        targets[COUNT_STATE.name] = count_windows.state_target(lakehouse, first, last, config)
    if config.sessions or config.counts:
        declared = {c: t for name in targets for c, t in declared_columns(name, config)}
        rows = rows.select("*", *[F.lit(None).cast(declared[c]).alias(c) for c in declared if c not in rows.columns])
    try:
        written = delta_write.replace_partitions_routed(rows, TABLE_COLUMN, targets, days=(first, last))
    finally:
        for df in info["persisted"]:
            df.unpersist()
    return {"changes": written[WINDOW_CHANGES.name], "snapshots": written[WINDOW_SNAPSHOT.name],
            "baseline": {**info["baseline"], **session_info["baseline"], **count_info["baseline"]},
            **({"session_state": written[SESSION_STATE.name], "session_watermark": session_info["watermark"]}
               if config.sessions else {}),
            **({"count_state": written[COUNT_STATE.name]} if config.counts else {})}


def with_key_columns(rows: DataFrame, config: PipelineConfig) -> DataFrame:
    """A composite key's fields as columns, from ``key`` (a JSON array of their values): null in
    a non-keyed window's rows (``ALL_KEYS``), whose key is no array."""
    if not config.key_fields:
        return rows
    parts = F.from_json("key", "array<string>")
    return rows.withColumns({name: F.get(parts, i) for i, name in enumerate(config.key_fields)})


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import run_job

    def job(spark, config, args, first, last):
        result = run(spark, args.lakehouse, first, last, config)
        pipes.report("sliding_windows", result)
        return (f"wrote {result['changes']['rows_written']} change points and "
                f"{result['snapshots']['rows_written']} snapshot rows for {first} .. {last} "
                f"(baseline: {', '.join(f'{w} {b}' for w, b in result['baseline'].items())})")

    return run_job(__doc__, job, argv)

if __name__ == "__main__":
    raise SystemExit(main())
