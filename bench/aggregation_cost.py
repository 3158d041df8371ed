"""What the aggregations cost the windows job, against the scan + write floor, in one run.

    python -m bench.aggregation_cost --events 100000          # N events a day, 10^3 keys, 7d window

Self-contained (it imports only panes' jobs, not the rest of ``bench``), so the one instrument
``python -m bench`` can run it as a part. Per configuration it holds, in a lakehouse of its own,
the same generated events (N a day over the 8 event days a 7-day window and the day before
reach; Zipf-like keys; fields ``amount decimal(12,2)``, ``latency double``, ``clicks long``,
``page string``, each missing from a few records; generated once, copied to the others),
materialises the minute partials and the windows of day D - 1 (so that day D continues from a
snapshot, as a daily run does), and then times the windows job for day D (best of ``--reps``,
after a warm-up run):

- ``count+sum``: today's default, ``count`` and ``sum`` of ``clicks``;
- ``numeric``: five numeric aggregations over three fields (sum and mean of ``amount``, max and
  stddev of ``latency``, mean of ``clicks``);
- ``sketches``: ``approx_percentile`` of ``latency`` and ``approx_distinct`` of ``page``;
- ``collections``: ``top_k`` and ``last_k`` of ``clicks``, ``unique_count`` and ``histogram`` of
  ``page``: the list, set and map partials whose running merges copy a growing buffer.

The floor, from the ``count+sum`` lakehouse: the scan floor reads the frames the daily job
reads (those entering on D and leaving from D - 7) and the day before's snapshot, grouped per
key into the noop sink; the write floor writes the rows the job wrote for D (cached) again with
Spark's own Parquet writer. Ratios are against their sum, all measured in this one run.
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import minute_partials, sliding_windows
from jobs.ingest.arrival_parts import arrival_day_end
from jobs.runtime.spark_session import get_spark
from jobs.storage import delta_io, delta_write
from jobs.tables import EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter, declared_columns
from windowing_core.config import PipelineConfig

DAY = date(2025, 3, 10)
WINDOW_DAYS = 7
FIELDS = {"amount": "decimal(12,2)", "latency": "double", "clicks": "long", "page": "string"}
CONFIGS = {
    "count+sum": {"n": {"kind": "count", "field": "clicks"}, "total": {"kind": "sum", "field": "clicks"}},
    "numeric": {"spent": {"kind": "sum", "field": "amount"}, "avg_spent": {"kind": "mean", "field": "amount"},
                "slowest": {"kind": "max", "field": "latency"},
                "latency_sd": {"kind": "stddev_pop", "field": "latency"},
                "avg_clicks": {"kind": "mean", "field": "clicks"}},
    "sketches": {"latency_p": {"kind": "approx_percentile", "field": "latency", "percentiles": [0.5, 0.95, 0.99]},
                 "pages_approx": {"kind": "approx_distinct", "field": "page"}},
    "collections": {"top_clicks": {"kind": "top_k", "field": "clicks", "k": 5},
                    "recent_clicks": {"kind": "last_k", "field": "clicks", "k": 5},
                    "pages": {"kind": "unique_count", "field": "page"},
                    "page_views": {"kind": "histogram", "field": "page"}},
}


def config_of(name: str) -> PipelineConfig:
    return PipelineConfig.from_dict({"fields": FIELDS, "aggregations": CONFIGS[name],
                                     "windows": {"7d": {"length": f"{WINDOW_DAYS}d", "slide": "1m"}}})


def _uniform(salt: int) -> F.Column:
    return (F.pmod(F.xxhash64(F.lit(salt), F.col("id")), F.lit(1 << 30)) / float(1 << 30))


def events(spark: SparkSession, per_day: int, keys: int, config: PipelineConfig) -> DataFrame:
    """``per_day`` events on each of the days D - 7 .. D, arriving within minutes."""
    days = WINDOW_DAYS + 1
    first = DAY - timedelta(days=WINDOW_DAYS)
    second = (F.col("id") % days) * 86_400 + (_uniform(1) * 86_400).cast("long")
    at = F.timestamp_seconds(F.unix_seconds(F.lit(first).cast("timestamp")) + second)
    rank = (F.exp(_uniform(2) * math.log(keys + 1)) - 1).cast("long")  # log-uniform: a Zipf of exponent 1

    def missing(salt: int, value: F.Column) -> F.Column:
        return F.when(_uniform(salt) >= 0.02, value)

    columns = {
        "key": F.format_string("u%05d", F.least(rank, F.lit(keys - 1))),
        "event_time": at,
        "event_id": F.format_string("e%d", F.col("id")),
        "arrival_time": at + F.expr("INTERVAL 3 MINUTES"),
        "source_file": F.lit("bench/aggregation_cost.json"),
        "line": (F.col("id") + 1).cast("int"),
        "amount": missing(3, (F.floor(_uniform(4) * 20_000) / 100).cast("decimal(12,2)")),
        "latency": missing(5, F.round(-F.log(1 - _uniform(6)) * 120, 3)),
        "clicks": missing(7, F.floor(_uniform(8) * 12).cast("long")),
        "page": missing(9, F.element_at(F.array(*[F.lit(f"p{i}") for i in range(40)]),
                                        (F.floor(_uniform(10) ** 2 * 40) + 1).cast("int"))),
    }
    rows = spark.range(0, per_day * days, 1, 4).select(*[c.alias(n) for n, c in columns.items()])
    rows = rows.withColumn("arrival_date", F.to_date("arrival_time")).withColumn("arrival_part", arrival_day_end())
    declared = declared_columns(EVENTS.name, config)
    return rows.select(*[F.col(n).cast(t) for n, t in declared])


def prepare(spark: SparkSession, lakehouse: str, per_day: int, keys: int, config: PipelineConfig,
            events_of: str | None = None) -> None:
    """Events, minute partials and day D - 1's windows. Every configuration reads the same
    events (the fields do not change): those of the lakehouse ``events_of`` are copied as files,
    not generated again (at 10^7 events a day generating them takes minutes)."""
    first = DAY - timedelta(days=WINDOW_DAYS)
    if events_of is not None:
        shutil.copytree(EVENTS.path(events_of), EVENTS.path(lakehouse))
    else:
        rows = events(spark, per_day, keys, config)
        delta_write.replace_partitions(rows, EVENTS.path(lakehouse), partition_by=list(EVENTS.partition_by),
                                    partition_filters=day_filter("arrival_date", first, DAY + timedelta(days=1)))
    minute_partials.run(spark, lakehouse, first, DAY, config)
    sliding_windows.run(spark, lakehouse, DAY - timedelta(days=1), DAY - timedelta(days=1), config)


def timed(spark: SparkSession, fn, reps: int) -> float:
    fn()  # warm-up: code generation, the JIT, the Delta log
    best = math.inf
    for _ in range(reps):
        spark.sparkContext._jvm.System.gc()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def windows_day(spark: SparkSession, lakehouse: str, config: PipelineConfig) -> dict:
    result = sliding_windows.run(spark, lakehouse, DAY, DAY, config)
    if set(result["baseline"].values()) != {"snapshot"}:
        raise RuntimeError(f"day {DAY} did not continue from a snapshot: {result['baseline']}")
    return result


def scan_floor(spark: SparkSession, lakehouse: str) -> None:
    """The frames a daily run reads (entering on D, leaving from D - 7) and D - 1's snapshot."""
    days = [DAY.isoformat(), (DAY - timedelta(days=WINDOW_DAYS)).isoformat()]
    frames = delta_io.read_table(spark, MINUTE_PARTIALS.path(lakehouse), partition_filters=[("event_date", "in", days)])
    snapshot = delta_io.read_table(spark, WINDOW_SNAPSHOT.path(lakehouse),
                                   partition_filters=day_filter("date", DAY - timedelta(days=1), DAY - timedelta(days=1)))
    both = frames.select("key", "event_count").unionByName(snapshot.select("key", "event_count"))
    both.groupBy("key").agg(F.sum("event_count")).write.format("noop").mode("overwrite").save()


def written_rows(spark: SparkSession, lakehouse: str) -> list[DataFrame]:
    rows = []
    for table in (WINDOW_CHANGES, WINDOW_SNAPSHOT):
        df = delta_io.read_table(spark, table.path(lakehouse), partition_filters=day_filter("date", DAY, DAY))
        df = df.drop("date").persist()
        df.count()
        rows.append(df)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per event day (default 10^5)")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=2, help="timed runs per measurement; the best counts")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"among {', '.join(CONFIGS)}")
    parser.add_argument("--work", help="folder for the lakehouses (default: a temporary one)")
    args = parser.parse_args(argv)
    names = args.configs.split(",")
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    spark = get_spark()
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        seconds: dict[str, float] = {}
        changes: dict[str, int] = {}
        for name in names:
            config, lakehouse = config_of(name), str(Path(work) / name)
            prepare(spark, lakehouse, args.events, args.keys, config,
                    None if name == names[0] else str(Path(work) / names[0]))
            seconds[name] = timed(spark, lambda: windows_day(spark, lakehouse, config), args.reps)
            changes[name] = delta_io.row_count(WINDOW_CHANGES.path(lakehouse),
                                               partition_filters=day_filter("date", DAY, DAY))
            print(f"{name}: {seconds[name]:.2f} s ({changes[name]} change points)", flush=True)
        floor_lakehouse = str(Path(work) / names[0])
        scan = timed(spark, lambda: scan_floor(spark, floor_lakehouse), args.reps)
        rows = written_rows(spark, floor_lakehouse)
        try:
            write = timed(spark, lambda: [df.write.mode("overwrite").parquet(f"{work}/floor/{i}")
                                          for i, df in enumerate(rows)], args.reps)
        finally:
            for df in rows:
                df.unpersist()
    floor = scan + write
    print(f"\nwindows job for one day, {args.events} events a day, {args.keys} keys, a {WINDOW_DAYS}d window "
          f"sliding every minute (best of {args.reps}):")
    print(f"| measurement | seconds | x floor | x {names[0]} |")
    print("|---|---:|---:|---:|")
    print(f"| scan + write floor ({names[0]}'s tables) | {floor:.2f} | 1.00 | |")
    for name in names:
        print(f"| {name} ({', '.join(CONFIGS[name])}) | {seconds[name]:.2f} | {seconds[name] / floor:.2f} | "
              f"{seconds[name] / seconds[names[0]]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
