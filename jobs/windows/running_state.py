"""The invertible families' sliding: each frame becomes a delta where it enters a window (+) and
where it leaves (-), and a key's state at every end is its baseline plus the running sum of its
deltas, one Spark window function. The baseline is the previous day's snapshot, or once the
frames of the window before the run's first end."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.tables import partial_columns
from jobs.windows.partial_merges import merges, running_counts
from jobs.windows.window_grid import Windows, seconds_of
from jobs.windows.window_inputs import ReadPlan
from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import ALL_KEYS, WindowSpec


def state_columns(config: PipelineConfig) -> list[str]:
    """What the running sum carries: ``event_count`` (0 means empty) and the invertible partials."""
    return ["event_count", *partial_columns(config, invertible=True)]


def _invertible(config: PipelineConfig) -> list[Aggregation]:
    return [a for a in config.aggregations if a.invertible]


def merged_state(config: PipelineConfig, over: WindowSpec | None = None, prefix: str = "",
                 by_entry: bool = True) -> list[Column]:
    """The state columns combined (in ``groupBy``, or over a window frame) with each invertible
    aggregation's own ``spark_merge``: a sum for vectors of sums, a merge of counts for a
    histogram. Named ``prefix`` + the column. Without ``by_entry``, the aggregations whose
    partials merge entry by entry (``running_counts``) are left out."""
    merged = [_over(F.sum("event_count"), over).alias(f"{prefix}event_count")]
    for a in _invertible(config):
        if a.counts_by_entry and not by_entry:
            continue
        merged += a.spark_merged(over, prefix)
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


def with_all_keys(frames: DataFrame, config: PipelineConfig, *by: str) -> DataFrame:
    """Frames (or tiles) of every key combined into one key, ``ALL_KEYS``, per ``by`` (the frame
    or tile and its day): what a non-keyed window (``keyed: false``, Flink's ``windowAll``)
    slides over. Every partial combines, invertible or not, so the window is exact as for a key.
    All keys being one, its running sum is one task's work, as Flink's windowAll runs at
    parallelism 1; its input is one row per frame, whatever the number of keys."""
    return frames.groupBy(*by).agg(*merges(config)).select(F.lit(ALL_KEYS).alias("key"), *by, "event_count",
                                                    *partial_columns(config))


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


END_INDEX = "end_index"  # an end's place among its key's ends in the run, from 1


def hands_on_previous(config: PipelineConfig) -> bool:
    """Whether the running state hands each invertible state at the key's previous end to the
    change marks (``previous_*``). Not where a non-invertible aggregation is configured: the
    marks take every previous value by a ``lag`` then (``emission.with_emission_marks``)."""
    return all(a.invertible for a in config.aggregations)


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
    end's minus the deltas at it; only where ``hands_on_previous``), and ``next_end`` (the row
    after an end's last is the first of the key's next end). A map of counts is summed entry by
    entry (``running_counts``).
    """
    by_key = Window.partitionBy(KEY_HASH, "window", "key").orderBy("end")
    handed_on = hands_on_previous(config)
    upto, at = (by_key.rangeBetween(Window.unboundedPreceding, Window.currentRow),
                by_key.rangeBetween(Window.currentRow, Window.currentRow))
    maps = [a for a in _invertible(config) if a.counts_by_entry]
    indexed = deltas.withColumn(END_INDEX, F.dense_rank().over(by_key)) if maps else deltas
    at_end = merged_state(config, at, prefix="at_end_", by_entry=False)[1:] if handed_on else []
    running = indexed.select(KEY_HASH, "window", "key", "end", *([END_INDEX] if maps else []),
                             F.sum("entering").over(at).alias("entering"),
                             *merged_state(config, upto, by_entry=False),
                             *at_end,
                             F.lead("end").over(by_key).alias("next_end"))
    last_of_end = F.col("next_end").isNull() | (F.col("next_end") != F.col("end"))
    kept = running.where(last_of_end)
    columns, previous = [], []
    for a in _invertible(config):
        names = a.field_columns()
        if a.counts_by_entry:  # an end without counts has no row: the empty map
            (counts,) = names
            by = [KEY_HASH, "window", "key"]
            kept = kept.join(running_counts(indexed, counts, by, END_INDEX, previous=handed_on),
                             [*by, END_INDEX], "left")
            columns.append(F.coalesce(F.col(counts), a.spark_empty_value()).alias(counts))
            if handed_on:
                previous.append(F.coalesce(F.col(f"previous_{counts}"), a.spark_empty_value())
                                .alias(f"previous_{counts}"))
            continue
        columns += names
        if handed_on:
            previous += [c.alias(f"previous_{n}") for c, n in zip(
                a.spark_deduct([F.col(n) for n in names], [F.col(f"at_end_{n}") for n in names]), names)]
    return kept.select("window", "key", "end", "entering", "event_count", *columns, *previous, "next_end")


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
