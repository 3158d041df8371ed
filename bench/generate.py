"""The generated event set (``orchestration.event_set``) drawn by Spark, straight into the
``events`` table or as landing files.

The demo's sampler (``orchestration.demo_events``) writes the same shape line by line in
Python: right for the demo, far too slow for 10^7 events. Here every column is a pure function
of the row id and a seed (``xxhash64``), so the same arguments give the same rows on any machine
and any number of partitions, and 10^7 rows take seconds. The draws invert the shape's
distributions: a continuous Zipf, rounded, for the key's rank (a bijection then spreads the ranks
over the ids), Newton's method on the daily cycle's integral for the time of day (five steps: within
10^-8 of a day), exponential delays. ``n`` events are spread evenly over ``days`` event days.

Lines landing beyond the allowed lateness, and re-sends of late lines that do, are in the set
(ingest sets them aside); the ``events`` table holds only what ingest accepts (:func:`accepted`).
"""

from __future__ import annotations

import math
import random
import shutil
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.ingest.arrival_parts import arrival_day_end
from jobs.ingest.lateness import beyond_lateness
from jobs.storage import delta_write
from jobs.tables import EVENT_COLUMNS, EVENTS
from orchestration.event_set.landing_lines import MALFORMED_KINDS, malformed_line
from orchestration.event_set.shape import EventShape
from windowing_core.config import PipelineConfig

DAY_SECONDS = 86_400
NEWTON_STEPS = 5
ID_SPREAD = 2_147_483_647  # a prime: rank -> (rank * ID_SPREAD) mod keys is a bijection for fewer keys


def _uniform(seed: int, salt: int, row: str = "id") -> Column:
    """A deterministic uniform draw in [0, 1) per row, independent for each salt."""
    bits = F.xxhash64(F.lit(seed), F.lit(salt), F.col(row)).bitwiseAND(F.lit((1 << 53) - 1))
    return bits.cast("double") / F.lit(float(1 << 53))


def _draw(seed: int, salt: int, modulus: int) -> Column:
    return F.pmod(F.xxhash64(F.lit(seed), F.lit(salt), F.col("id")), F.lit(modulus))


def _exponential(seed: int, salt: int, mean: float) -> Column:
    return F.floor(-F.log(F.lit(1.0) - _uniform(seed, salt)) * F.lit(mean))


def _key_number(shape: EventShape, u: Column) -> Column:
    """The key's id number: a rank drawn from the shape's Zipf (its continuous form on
    ``[0.5, keys + 0.5)``, rounded: the top 1 % of keys within 1 % of the discrete shares),
    spread over ``1 .. keys``."""
    s, low, high = shape.zipf_exponent, 0.5, shape.keys + 0.5
    if s == 1.0:
        rank = F.lit(low) * F.exp(u * F.lit(math.log(high / low)))
    else:
        t = 1 - s
        rank = F.pow(F.lit(low**t) + u * F.lit(high**t - low**t), F.lit(1 / t))
    rank = F.least(F.floor(rank + 0.5), F.lit(shape.keys)).cast("long")
    return F.pmod((rank - 1) * F.lit(ID_SPREAD), F.lit(shape.keys)) + 1


def _second_of_day(shape: EventShape, u: Column) -> Column:
    """A second of the day following the shape's cycle: :meth:`EventShape.traffic_share_until`
    solved for ``u`` by Newton's method from ``24 u`` (its derivative is ``traffic / 24``)."""

    def step(hour: Column, _: Column) -> Column:  # a lambda of Spark's: the steps do not nest the expression
        moved = hour - (shape.traffic_share_until(hour, F.sin) - u) * 24 / shape.traffic(hour, F.cos)
        return F.least(F.greatest(moved, F.lit(0.0)), F.lit(24.0))

    hour = F.aggregate(F.array_repeat(F.lit(0), NEWTON_STEPS), u * 24, step)
    return F.least(F.floor(hour * 3600), F.lit(DAY_SECONDS - 1)).cast("long")


def _delay_days(shape: EventShape, u: Column, seed: int) -> Column:
    beyond = F.element_at(F.array(*map(F.lit, shape.beyond_delay_days)),
                          (_draw(seed, 6, len(shape.beyond_delay_days)) + 1).cast("int"))
    return (F.when(u < shape.beyond_share, beyond)
            .when(u < shape.beyond_share + shape.late_2d_share, 2)
            .when(u < shape.beyond_share + shape.late_share, 1)
            .otherwise(0))


def benchmark_events(spark: SparkSession, n: int, first_day: date, days: int, keys: int, *,
                     seed: int = 7, shape: EventShape | None = None, files_per_day: int = 4) -> DataFrame:
    """``n`` events (plus their re-sent duplicates) over ``days`` event days from ``first_day``,
    with the ``events`` table's columns and ``arrival_date``.

    Rows are spread over ``files_per_day`` tasks, each writing one file per arrival day, so a
    day is several files, as the ingest job leaves it, and its scan can use every core.
    """
    shape = replace(shape or EventShape(), keys=keys)
    start = F.unix_seconds(F.lit(first_day).cast("timestamp"))
    event_day = F.col("id") % F.lit(days)
    second = event_day * DAY_SECONDS + _second_of_day(shape, _uniform(seed, 1))
    low, high = shape.value_range
    value = F.when(_uniform(seed, 3) < shape.value_omitted_share + shape.value_one_share, F.lit(1)).otherwise(
        _draw(seed, 4, high - low + 1) + low).cast("long")
    delay = _delay_days(shape, _uniform(seed, 5), seed)
    arrived = F.when(delay == 0, F.least(second + _exponential(seed, 7, shape.on_time_delay_s),
                                         (event_day + 1) * DAY_SECONDS - 1)).otherwise(
        (event_day + delay) * DAY_SECONDS + _draw(seed, 8, DAY_SECONDS))
    events = spark.range(0, n, 1, files_per_day).select(
        "id",
        F.format_string(shape.key_format, _key_number(shape, _uniform(seed, 2))).alias("key"),
        F.timestamp_seconds(start + second).alias("event_time"),
        value.alias("value"),
        F.format_string("e%011d-%d", F.col("id"), F.lit(seed)).alias("event_id"),
        arrived.alias("arrived"),
        (_uniform(seed, 13) >= shape.missing_event_id_share).alias("has_id"),
    )
    # re-sends (of records with an id, as the demo's): most in the same folder, the rest the next day
    folder = F.col("arrived") - F.pmod("arrived", F.lit(DAY_SECONDS))
    again = F.when(_uniform(seed, 10) < shape.duplicate_same_folder_share,
                   F.least(F.col("arrived") + 1 + _exponential(seed, 11, shape.resend_delay_s),
                           folder + DAY_SECONDS - 1)).otherwise(folder + DAY_SECONDS + _draw(seed, 12, DAY_SECONDS))
    resent = events.where(F.col("has_id") & (_uniform(seed, 9) < shape.duplicate_share)).withColumn("arrived", again)
    rows = (  # a line number per copy: ids, then the re-sends' after them
        events.withColumn("resent", F.lit(False)).unionByName(resent.withColumn("resent", F.lit(True)))
        .withColumn("arrival_time", F.timestamp_seconds(start + F.col("arrived")))
        .withColumn("arrival_date", F.to_date("arrival_time"))
        .withColumn("arrival_part", arrival_day_end())  # no hour folders: the day's end
        .withColumn("source_file", F.format_string("bench/%s/events.json", F.col("arrival_date").cast("string")))
        .withColumn("line", (F.col("id") + 1 + F.when(F.col("resent"), n).otherwise(0)).cast("int"))
    )
    unknown = [c for c in EVENT_COLUMNS if c not in rows.columns]
    if unknown:
        raise ValueError(f"the events table now has columns {unknown} that bench.generate does not make")
    return rows.select(*EVENT_COLUMNS, "arrival_date", "has_id")


def accepted(events: DataFrame, config: PipelineConfig = PipelineConfig()) -> DataFrame:
    """The rows ingest accepts into the ``events`` table: those within the allowed lateness."""
    return events.where(~beyond_lateness(config)).drop("has_id")


def arrival_dates(first_day: date, days: int) -> list[date]:
    """Every arrival date the ``events`` table can hold: the event days, and the days after
    them within the allowed lateness."""
    return [first_day + timedelta(days=i) for i in range(days + PipelineConfig().allowed_lateness_days)]


def write_events(spark: SparkSession, lakehouse: str, n: int, first_day: date, days: int, keys: int,
                 *, seed: int = 7) -> dict:
    """Replace the ``events`` table's arrival partitions of the set with a freshly generated one."""
    events = accepted(benchmark_events(spark, n, first_day, days, keys, seed=seed))
    dates = [d.isoformat() for d in arrival_dates(first_day, days)]
    return delta_write.replace_partitions(events, EVENTS.path(lakehouse), partition_by=list(EVENTS.partition_by),
                                       partition_filters=[("arrival_date", "in", dates)])


LANDING_FILES = 4  # per arrival day: half plain, half gzipped
MALFORMED_SHARE = 0.001  # of the landing lines: broken lines of every kind, quarantined by ingest
MALFORMED_POOL = 10  # lines of each kind, drawn once by the demo's own maker


def landing_lines(events: DataFrame, key_field: str, seed: int = 7) -> DataFrame:
    """One JSON line per event, as a producer writes it (``event_id`` omitted where the set has
    none: ingest derives one), a share of them broken."""
    iso = "yyyy-MM-dd'T'HH:mm:ss'Z'"
    fields = [F.col("key").alias(key_field), F.date_format("event_time", iso).alias("timestamp"), F.col("value"),
              F.when(F.col("has_id"), F.col("event_id")).alias("event_id"),
              F.date_format("arrival_time", iso).alias("arrival_time")]
    record = F.to_json(F.struct(*fields))  # to_json leaves a null field out
    rng = random.Random(f"bench-malformed:{seed}")
    pool = [malformed_line(rng, kind, key_field, "u00042", "2025-01-30T12:45:10Z", f"m{i}")
            for i in range(MALFORMED_POOL) for kind in MALFORMED_KINDS]
    broken = F.element_at(F.array(*map(F.lit, pool)), (F.pmod(F.col("line"), F.lit(len(pool))) + 1).cast("int"))
    line = F.when(_uniform(seed, 14, "line") < MALFORMED_SHARE, broken).otherwise(record)
    return events.select(F.col("line").cast("long").alias("id"), line.alias("value"))


def write_landing(events: DataFrame, landing: str, day: date, key_field: str, seed: int = 7) -> int:
    """The events as landing files of arrival day ``day`` (``<landing>/YYYY-MM-DD/``): half
    the files plain, half gzipped, as the demo's producers send them. Returns the lines."""
    folder = Path(landing) / day.isoformat()
    shutil.rmtree(folder, ignore_errors=True)
    lines = landing_lines(events, key_field, seed).persist()
    try:
        half = LANDING_FILES // 2
        for name, part, options in (("plain", 0, {}), ("gzipped", 1, {"compression": "gzip"})):
            (lines.where(F.pmod("id", F.lit(2)) == part).select("value").repartition(half)
             .write.options(**options).text(str(folder / name)))
        count = lines.count()
    finally:
        lines.unpersist()
    for marker in [*folder.rglob("_*"), *folder.rglob(".*")]:  # Spark's _SUCCESS and .crc files
        marker.unlink()
    return count
