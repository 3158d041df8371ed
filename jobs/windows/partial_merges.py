"""Merging and finishing the partial columns of aggregations in Spark: what the partials job and
every window kind share."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig


def merges(config: PipelineConfig) -> list[Column]:
    """Aggregate columns merging a group's partials: ``event_count`` summed and each aggregation's
    ``spark_merge``, named as the partials they merge."""
    merged = [F.sum("event_count").alias("event_count")]
    for agg in config.aggregations:
        merged += agg.spark_merged()
    return merged


def merged_in_passes(aggregations: list[Aggregation] | tuple[Aggregation, ...]) -> list[Aggregation]:
    """The aggregations whose running merges take ``prefix_merged`` (they have ``spark_combine``)."""
    return [a for a in aggregations if a.merges_in_passes]


def most_rows_of(rows: DataFrame, *by: str) -> int:
    """The most rows one group of ``by`` holds in ``rows``: the passes ``prefix_merged`` needs for
    the data at hand, one Spark job. A day tile could hold 1,440 frames (11 passes, each a
    window over the whole row set in the plan); a small day's tiles hold a few dozen (6)."""
    return rows.groupBy(*by).count().agg(F.max("count")).first()[0] or 0


def prefix_merged(rows: DataFrame, aggregations: list[Aggregation], by: list[str], order: list[Column],
                  most_rows: int) -> DataFrame:
    """``rows`` with each aggregation's partial replaced by the merge of the partials of its
    partition's rows (``by``) up to and including it in ``order``; at most ``most_rows`` rows
    per partition.

    For the partials Spark has no incremental window aggregate for (``spark_combine``: Chan's
    and Pebay's updates of moments of doubles). A running ``aggregate(collect_list(...))``
    refolds the whole frame at every row: quadratic in a partition's rows, and interpreted; a
    day tile of 1,440 frames per key at 10^7 events a day ran for more than 15 minutes in one
    stage (``bench.aggregation_cost``, ``numeric``). This is the inclusive scan of Hillis and
    Steele ("Data parallel algorithms", 1986): pass p merges each row's partial with that of the
    row 2**p before it (``lag``), so after ceil(log2(most_rows)) passes each row holds its whole
    prefix. Each pass is a window with the same partitioning and order: no shuffle, no sort, and
    the merges are generated code. The merges associate differently from a left fold, in a
    fixed order all the same: equal inputs give equal bits.
    """
    window = Window.partitionBy(*by).orderBy(*order)
    columns = [c for agg in aggregations for c in agg.field_columns()]
    for p in range(max(most_rows - 1, 0).bit_length()):
        # Each lag once, as a column: a combine names its operands several times, and Spark
        # evaluates every occurrence of a window function as a window expression of its own.
        rows = rows.withColumns({f"__earlier_{c}": F.lag(c, 2**p).over(window) for c in columns})
        merged = {}
        for agg in aggregations:
            own = agg.field_columns()
            earlier = [F.col(f"__earlier_{c}") for c in own]
            merged.update(zip(own, agg.spark_combine(earlier, [F.col(c) for c in own]), strict=True))
        rows = rows.withColumns(merged).drop(*[f"__earlier_{c}" for c in columns])
    return rows


def merged_by_element(aggregations: list[Aggregation] | tuple[Aggregation, ...]) -> list[Aggregation]:
    """The aggregations whose partial is one collection (``Aggregation.spark_elements``: k-lists,
    sets): a running merge takes them one element per row (``exploded``), since
    ``flatten(collect_list(...))`` over a growing window frame would copy every list before each
    row again."""
    return [a for a in aggregations if not a.merges_in_passes
            and a.spark_elements([F.col(c) for c in a.field_columns()]) is not None]


def exploded(rows: DataFrame, listed: list[Aggregation]) -> DataFrame:
    """``rows`` with one row per position of the ``listed`` partials' arrays, zipped (a row whose
    arrays are empty or null keeps one, position null): ``element_merges`` over a window frame
    merges them, and the other partials ride on each row's ``first_element``."""
    zipped = F.arrays_zip(*[F.col(a.field_columns()[0]) for a in listed])
    return rows.select("*", F.size(zipped).alias("__items"), F.posexplode_outer(zipped).alias("__pos", "__item"))


def element_position() -> Column:
    """An ``exploded`` row's place in its row's arrays (null for a row without elements): orders
    a running merge that must see a row's elements in turn."""
    return F.col("__pos")


def first_element() -> Column:
    """Whether an ``exploded`` row is its row's first (or only) one."""
    return element_position().isNull() | (element_position() == 0)


def last_element() -> Column:
    """Whether an ``exploded`` row is its row's last (or only) one."""
    return element_position().isNull() | (element_position() == F.col("__items") - 1)


def element_merges(agg: Aggregation, over: WindowSpec) -> list[Column]:
    """An ``exploded`` aggregation's partial columns merged over the window frame ``over``."""
    columns = agg.field_columns()
    return [c.alias(n) for c, n in zip(agg.spark_merge_elements(F.col("__item")[columns[0]], over), columns,
                                       strict=True)]


def running_counts(rows: DataFrame, counts: str, by: list[str], index: str, previous: bool = False) -> DataFrame:
    """A map of counts (``counts``, a histogram's partial) summed over each partition's rows
    (``by``) up to every ``index`` (1, 2, ... in the partition's order; rows may share one),
    entry by entry: each value's running count where it changes, held over the indices until its
    next change, gathered into one map per index in value order, without zeros. The work is the
    size of the maps returned; merging the maps of a growing window frame would fold every map
    before each row again. Rows by (``by``, ``index``), with ``previous_`` + ``counts`` (the map
    at the index before) where ``previous``; an index whose maps are empty has no row."""
    by_value = Window.partitionBy(*by, "value").orderBy(index)
    changes = (rows.select(*by, index, counts, F.max(index).over(Window.partitionBy(*by)).alias("last_index"))
               .select(*by, index, "last_index", F.explode(counts).alias("value", "n"))  # the index of every row
               .groupBy(*by, "value", index).agg(F.max("last_index").alias("last_index"), F.sum("n").alias("n"))
               .select(*by, "value", index, "last_index",
                       F.sum("n").over(by_value.rowsBetween(Window.unboundedPreceding, 0)).alias("count"),
                       F.lead(index).over(by_value).alias("next_change")))
    # held at indices index .. held_to; the map at the index after holds it as its previous
    held_to = F.coalesce(F.col("next_change") - 1, F.col("last_index"))
    through = F.least(held_to + 1, F.col("last_index")) if previous else held_to
    spread = changes.where(F.col("count") != 0).select(
        *by, "value", "count", index, held_to.alias("held_to"),
        F.explode(F.sequence(F.col(index), through)).alias("at"))
    entry = F.struct("value", "count")

    def gathered(held: Column) -> Column:
        return F.map_from_entries(F.array_sort(F.collect_list(F.when(held, entry))))

    maps = [gathered(F.col("at") <= F.col("held_to")).alias(counts)]
    if previous:
        maps.append(gathered(F.col("at") > F.col(index)).alias(f"previous_{counts}"))
    return spread.groupBy(*by, F.col("at").alias(index)).agg(*maps)


def with_finished_values(frame: DataFrame, config: PipelineConfig) -> DataFrame:
    return frame.withColumns({
        a.name: a.spark_finish([F.col(c) for c in a.field_columns()]).cast(a.output_type)
        for a in config.aggregations
    })
