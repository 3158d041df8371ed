"""The non-invertible families (min, max, sketches, lists) at every end, exactly: the suffix of the
tile a window starts in, whole tiles between, and the prefix of the tile it ends in, merged by a
running merge over two stacks, so no frame is folded more than a few times."""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.tables import partial_columns
from jobs.windows.partial_merges import (element_merges, exploded, first_element, merged_by_element, merged_in_passes,
                                        most_rows_of, prefix_merged)
from jobs.windows.window_grid import Windows, floor_to, seconds_of
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import tile_size


def running_merge(rows: DataFrame, config: PipelineConfig, order: list[Column], most_frames: int) -> DataFrame:
    """Each query row's merge of the frame rows before it in ``order`` within its (key, tile),
    which holds at most ``most_frames`` frame rows (``frames_per_tile``), per window.

    Three ways, by what Spark can merge incrementally over a growing window frame:
    - a window aggregate (``spark_merge`` over the frame: sums, min/max, sketch unions);
    - a partial that is a collection (``partial_merges.merged_by_element``: k-lists, distinct
      sets): exploded, one row per element (the other partials ride on its first), and merged
      element by element (``max_by``/``min_by`` with k, whose buffer is at most k long);
    - a partial Spark has no aggregate for (``spark_combine``): the frame rows' prefix merges
      (``prefix_merged``, frame rows before query rows), and each query row takes the last
      frame row's before it.
    """
    window = Window.partitionBy("window", "key", "tile").orderBy(*order).rowsBetween(Window.unboundedPreceding, 0)
    aggregations = [a for a in config.aggregations if not a.invertible]
    scanned = merged_in_passes(aggregations)
    if scanned:
        rows = prefix_merged(rows, scanned, ["window", "key", "tile"], [F.col("is_query").asc(), *order], most_frames)
    listed = merged_by_element(aggregations)
    if listed:  # query rows (null partials) keep one row, position null
        rows = exploded(rows, listed)
    if scanned:  # each prefix once, as a column: every field taken from the window function would repeat it
        rows = rows.withColumns({f"__prefix_{a.name}": F.last(F.when(~F.col("is_query"), F.struct(*a.field_columns())),
                                                               ignorenulls=True).over(window) for a in scanned})
    merged = []
    for agg in aggregations:
        columns = agg.field_columns()
        if agg in scanned:
            merged += [F.col(f"__prefix_{agg.name}")[c].alias(c) for c in columns]
        elif agg in listed:
            merged += element_merges(agg, window)
        else:
            fields = [F.when(first_element(), F.col(c)) if listed else F.col(c) for c in columns]
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
    head = running_merge(frame_rows.unionByName(head_queries), config,
                          [F.col("pos").desc(), F.col("is_query").asc()], most_frames)
    # prefix of the end's tile: frames with f < end, so the query sorts before frames on ties
    tail_queries = ends.select("window", "key", F.col("end").alias("pos"), floor_to(F.col("end"), size).alias("tile"),
                               *_nulls(config), F.lit(True).alias("is_query"), "end")
    tail = running_merge(frame_rows.unionByName(tail_queries), config,
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
    return merged_in_order([head, middle, tail], config, "window", "key", "end")


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
    merged = running_merge(frame_rows.unionByName(queries), config, [F.col("pos").asc(), F.col("is_query").desc()],
                            frames_per_tile(frame_rows, config))
    return merge_non_invertible(merged, config, "window", "key", "end")


def frames_per_tile(frame_rows: DataFrame, config: PipelineConfig) -> int:
    """The most frame rows of one (key, tile), counted only where a partial merges in passes."""
    return most_rows_of(frame_rows, "window", "key", "tile") if merged_in_passes(config.aggregations) else 0


def merge_non_invertible(rows: DataFrame, config: PipelineConfig, *by: str) -> DataFrame:
    merged = [c for agg in config.aggregations if not agg.invertible for c in agg.spark_merged()]
    return rows.groupBy(*by).agg(*merged)


def merged_in_order(parts: list[DataFrame], config: PipelineConfig, *by: str) -> DataFrame:
    """The non-invertible partials of ``parts``, each at most one row per ``by``, merged per ``by``.

    A partial Spark merges in passes (Chan's and Pebay's states) is taken from each part by its
    place (``first`` in a hash aggregate) and combined in that order, one projection per step:
    ``merge_non_invertible``'s sorted collection and fold is an object aggregate that sorts every
    row, 3x the time of this on 1.4 million ends of three states (docs/performance.md). Each
    step's fields are columns of their own, not a struct, so that Spark does not inline one step
    into the next (``CollapseProject`` inlines a struct read field by field).

    The parts are shuffled by ``by`` before the aggregate: an end's parts come from different
    partitions, so an aggregate before the shuffle would merge nothing and serialise each
    sketch once more (``python -m bench.end_merge --sketches``)."""
    aggregations = [a for a in config.aggregations if not a.invertible]
    scanned = merged_in_passes(aggregations)
    tagged = [part.withColumn("__part", F.lit(place)) for place, part in enumerate(parts)]
    rows = functools.reduce(DataFrame.unionByName, tagged).repartition(*by)
    if not scanned:  # nothing whose order matters: one aggregate (Spark prunes the unused tag)
        return merge_non_invertible(rows, config, *by)
    merged = []
    for agg in aggregations:
        columns = agg.field_columns()
        if agg in scanned:
            merged += [F.first(F.when(F.col("__part") == place, F.col(c)), ignorenulls=True).alias(f"__{place}_{c}")
                       for place in range(len(parts)) for c in columns]
        else:
            merged += agg.spark_merged()
    rows = rows.groupBy(*by).agg(*merged)
    so_far = {a.name: [F.col(f"__0_{c}") for c in a.field_columns()] for a in scanned}
    for place in range(1, len(parts)):
        steps = {}
        for agg in scanned:
            step = agg.spark_combine(so_far[agg.name], [F.col(f"__{place}_{c}") for c in agg.field_columns()])
            steps.update({f"__to{place}_{c}": s for c, s in zip(agg.field_columns(), step, strict=True)})
        rows = rows.withColumns(steps)
        so_far = {a.name: [F.col(f"__to{place}_{c}") for c in a.field_columns()] for a in scanned}
    out = []
    for agg in aggregations:
        if agg in scanned:  # no state at all: the empty state the fold starts from
            empty = F.coalesce(so_far[agg.name][0], F.lit(0)) == 0
            out += [F.when(empty, F.lit(0).cast(f.spark_type)).otherwise(c).alias(n)
                    for c, n, f in zip(so_far[agg.name], agg.field_columns(), agg.fields, strict=True)]
        else:
            out += [F.col(c) for c in agg.field_columns()]
    return rows.select(*by, *out)


def tiles_of(frames: DataFrame, windows: Windows, config: PipelineConfig) -> DataFrame:
    """Tiles smaller than a day, merged from frames the job reads anyway."""
    tiled = frames.withColumn("tile", floor_to(seconds_of(), windows.param(tile_size)))
    return merge_non_invertible(tiled, config, "window", "key", "tile")
