"""Values exact at any instant (``precision: event``): a sliding window read at ``t`` holds exactly
the events with event time in ``[t - length, t)``, at microsecond precision, not the window
ending at the last bucket end before ``t``; a cumulating window those in ``[period start, t)``.

Windows whose answer is already exact for their definition keep ``jobs.point_in_time``'s rule
(``bucket``): tumbling and ``emit: final`` windows answer the last window that ended, session
windows their rows, and windows on arrival time their arrival frames.

How, per lookup and window, for every aggregation kind alike (nothing is deducted): the frames of
``minute_partials`` that lie whole inside the interval, plus the events of the two frames it cuts
(its first and its last), as the partials job accepts them (``jobs.minute_partials
.accepted_events``: deduplicated, filtered, late ones left out), each instant's events folded as
one partial; all merged with the aggregations' own ``spark_merge``. The frames of the lookups'
keys are read for the days the intervals reach; the events of those days pass the partials job's
acceptance whole (a watermark runs over every arrival), about the cost of a partials run over
those days (``bench.point_in_time_join --precision event``), and only the cut frames' events of
the lookups' keys meet the lookups: never a key's every event.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.as_of.reading import MICROS
from jobs.minute_partials import accepted_events, merge_partials, to_partials
from jobs.storage import delta_io
from jobs.tables import MINUTE_PARTIALS, day_filter, partial_columns
from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

_LO, _HI, _WINDOW = "_pit_lo", "_pit_hi", "_pit_window"


def interval(at: Column, spec: WindowSpec) -> tuple[Column, Column]:
    """``[lo, hi)`` in epoch microseconds: ``[t - length, t)``, or for a cumulating window from
    the start of the period its window ending at ``t`` belongs to."""
    hi = F.unix_micros(at)
    if not spec.cumulating:
        return hi - F.lit(spec.length * MICROS), hi
    period, offset = F.lit(spec.length * MICROS), F.lit(spec.offset * MICROS)
    before = hi - F.lit(1)  # at a period's end, its whole period; inside one, its start so far
    return before - F.pmod(before - offset, period), hi


def with_exact_values(spark: SparkSession, lakehouse: str, lookups: DataFrame, key: str, at: str,
                      config: PipelineConfig, specs: list[WindowSpec], aggs: tuple[Aggregation, ...],
                      columns: dict[str, list[str]], earliest: datetime, latest: datetime) -> DataFrame:
    """The distinct ``(key, at)`` of ``lookups`` with each window's columns (``columns[name]``:
    ``window_end``, ``read_at``, ``event_count``, then one per aggregation of ``aggs``), exact at
    ``at``: ``window_end`` and ``read_at`` are ``at`` itself. ``earliest .. latest`` bound the
    instants (the days read follow from them)."""
    asks = lookups.select(F.col(key).alias("key"), F.col(at).alias("at")).distinct()
    bounds = reduce(DataFrame.unionByName, [
        asks.select("key", "at", F.lit(i).alias(_WINDOW), *[c.alias(n) for c, n in zip(interval(F.col("at"), s),
                                                                                       (_LO, _HI))])
        for i, s in enumerate(specs)])
    first = (earliest - max(timedelta(seconds=s.length) for s in specs)).date()
    last = latest.date()
    partials = partial_columns(config)  # every aggregation's, as merge_partials merges them all
    keys = asks.select("key").distinct()

    frames = delta_io.read_table(spark, MINUTE_PARTIALS.path(lakehouse), partition_filters=day_filter(
        "event_date", first, last)).join(keys, "key", "left_semi")
    start = F.unix_micros("frame_start")
    whole = (bounds.join(frames.select("key", start.alias("_pit_start"), "event_count", *partials), "key")
             .where((F.col("_pit_start") >= F.col(_LO)) & (F.col("_pit_start") + F.lit(config.bucket * MICROS)
                                                              <= F.col(_HI))))
    instants = (accepted_events(spark, lakehouse, config, first, last).join(keys, "key", "left_semi")
                .withColumn("frame_start", F.col("event_time")).transform(to_partials, config))
    bucket = F.lit(config.bucket * MICROS)
    when = F.unix_micros("frame_start")
    frame_of = when - F.pmod(when, bucket)
    cut = (bounds.join(instants.select("key", when.alias("_pit_when"), frame_of.alias("_pit_start"), "event_count",
                                       *partials), "key")
           .where((F.col("_pit_when") >= F.col(_LO)) & (F.col("_pit_when") < F.col(_HI))
                  & ((F.col("_pit_start") < F.col(_LO)) | (F.col("_pit_start") + bucket > F.col(_HI))))
           .drop("_pit_when"))
    merged = merge_partials(whole.unionByName(cut), config, "key", "at", _WINDOW)
    finished = merged.select("key", "at", _WINDOW, "event_count", *[
        a.spark_finish([F.col(c) for c in a.field_columns()]).cast(a.output_type).alias(a.name) for a in aggs])
    per_window = F.struct("event_count", *[a.name for a in aggs])
    pivoted = finished.groupBy("key", "at").pivot(_WINDOW, list(range(len(specs)))).agg(F.first(per_window))
    answered = asks.join(pivoted, ["key", "at"], "left")
    out = []
    for i, spec in enumerate(specs):
        end, read_at, count, *names = columns[spec.name]
        value = F.col(str(i))
        out += [F.col("at").alias(end), F.col("at").alias(read_at),
                F.coalesce(value["event_count"], F.lit(0).cast("bigint")).alias(count)]
        out += [F.when(value.isNotNull(), value[a.name]).otherwise(a.spark_empty_value()).cast(a.output_type)
                .alias(n) for a, n in zip(aggs, names)]
    return answered.select(F.col("key").alias(key), F.col("at").alias(at), *out)

