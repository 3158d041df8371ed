"""The point-in-time join against the floor of reading its spine and writing its output, in one run.

    .venv/bin/python -m bench.point_in_time_join --spine-rows 100000     # ~2 min on a quiet laptop
    .venv/bin/python -m bench.point_in_time_join --spine-rows 10000000   # the target's size: 10^7 rows

Self-contained: it writes its own lakehouse under ``--work`` (default ``bench/.work/pit``), a
month of the default pipeline's window tables (one ``7d`` window sliding every minute, count and
sum) made directly with Spark: per key and day ``--changes-per-key-day`` change points at random
minute ends, and a snapshot row per key and day whose window (``as_of`` the day's last end) is
the one the next day continues from, so every day is read as a daily run left it. The spine is
``--spine-rows`` rows of Parquet, keys drawn from the same keys, ts at random milliseconds of
the month (one in four exactly on a minute, a window end).

Measured in one Spark session, interleaved, best of ``--repeat`` after an untimed warm-up each:

- floor: read the spine, add its ``date`` and write it as Delta partitioned by date
  (``jobs.storage.delta_write``): what any job producing the output pays with nothing computed;
- join: ``jobs.point_in_time_join.run`` over the same spine, written the same way.

It prints both, their ratio, the rows in (spine rows, change points, snapshot rows) and the
join's physical plan operators: a sort-merge as-of join shows one Window over the union and no
join of spine rows to change points at all (no cross product, no per-row lookup).

With ``--precision event`` the lakehouse is made by the jobs themselves instead (``--events``
generated events, ``bench.generate``, through the partials and windows jobs), since an exact read
also reads the partials and the events, and the join is timed both ways on the same tables:
``precision: bucket`` and ``precision: event``, with their ratio.

    .venv/bin/python -m bench.point_in_time_join --spine-rows 100000 --precision event
"""

from __future__ import annotations

import argparse
import re
import shutil
import time
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench import generate
from jobs import minute_partials, point_in_time_join, sliding_windows
from jobs.as_of.join import with_values_as_of
from jobs.as_of.reading import AT, KEY, Reading
from jobs.storage import delta_io, delta_write
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter
from orchestration.event_set.shape import EventShape
from windowing_core.config import PipelineConfig
from windowing_core.spine import SpineSpec

FIRST = date(2025, 1, 1)
CONFIG = PipelineConfig()  # one 7d window sliding every minute, count and sum
DAY = 86400


def write_window_tables(spark: SparkSession, lake: str, keys: int, days: int, per_key_day: int) -> tuple[int, int]:
    """A month of window_changes and window_snapshot for the default window: rows in each."""
    spec = CONFIG.windows[0]
    start = int(datetime(FIRST.year, FIRST.month, FIRST.day, tzinfo=timezone.utc).timestamp())
    n = keys * days * per_key_day
    ids = spark.range(n)
    key = F.concat(F.lit("k"), (F.col("id") % keys).cast("string"))
    day = (F.col("id") / keys).cast("long") % days
    minute = F.pmod(F.xxhash64("id", F.lit(1)), F.lit(1440))
    value = F.pmod(F.xxhash64("id", F.lit(2)), F.lit(1000)) + 1
    end = F.lit(start) + day * DAY + minute * 60 + 60
    changes = (ids.select(key.alias("key"), end.alias("end"), value.alias("v"))
               .dropDuplicates(["key", "end"])
               .select("key", F.lit(spec.name).alias("window"), F.timestamp_seconds(F.col("end") - spec.length)
                       .alias("window_start"), F.timestamp_seconds("end").alias("window_end"),
                       F.col("v").alias("event_count"), F.col("v").alias("count"),
                       F.col("v").cast("decimal(38,0)").alias("sum"),
                       F.to_date(F.timestamp_seconds("end")).alias("date"))  # the day of window_end
               .where(F.col("date") < F.lit(FIRST + timedelta(days=days))))
    written = delta_write.replace_partitions(changes, WINDOW_CHANGES.path(lake), partition_by=["date"],
                                          partition_filters=[])["rows_written"]
    snap_ids = spark.range(keys * days)
    as_of = F.lit(start) + ((F.col("id") / keys).cast("long") + 1) * DAY - 60
    snapshot = snap_ids.select(
        F.concat(F.lit("k"), (F.col("id") % keys).cast("string")).alias("key"), F.lit(spec.name).alias("window"),
        F.timestamp_seconds(as_of - spec.length).alias("window_start"), F.timestamp_seconds(as_of).alias("as_of"),
        (F.pmod(F.xxhash64("id", F.lit(3)), F.lit(1000)) + 1).alias("event_count"))
    snapshot = snapshot.select("*", F.col("event_count").alias("count__n"),
                               F.col("event_count").cast("decimal(38,0)").alias("sum__s"),
                               F.col("event_count").alias("count"), F.col("event_count").cast("decimal(38,0)").alias("sum"),
                               F.to_date("as_of").alias("date"))
    snapshots = delta_write.replace_partitions(snapshot, WINDOW_SNAPSHOT.path(lake), partition_by=["date"],
                                            partition_filters=[])["rows_written"]
    return written, snapshots


def write_by_the_jobs(spark: SparkSession, lake: str, events: int, keys: int, days: int) -> tuple[int, int]:
    """The events, partials and window tables of ``days`` days, made by the jobs: rows of
    window_changes and window_snapshot."""
    last = FIRST + timedelta(days=days - 1)
    generate.write_events(spark, lake, events, FIRST, days, keys)
    minute_partials.run(spark, lake, FIRST, last, CONFIG)
    sliding_windows.run(spark, lake, FIRST, last, CONFIG)
    return (delta_io.row_count(WINDOW_CHANGES.path(lake)), delta_io.row_count(WINDOW_SNAPSHOT.path(lake)))


def write_spine(spark: SparkSession, path: str, rows: int, keys: int, days: int, key_format: str = "k%d",
                first_key: int = 0) -> None:
    start_ms = int(datetime(FIRST.year, FIRST.month, FIRST.day, tzinfo=timezone.utc).timestamp()) * 1000
    ms = F.pmod(F.xxhash64("id", F.lit(5)), F.lit(days * DAY * 1000))
    on_minute = F.pmod(F.xxhash64("id", F.lit(6)), F.lit(4)) == 0
    ms = F.when(on_minute, ms - F.pmod(ms, F.lit(60_000))).otherwise(ms)
    (spark.range(rows)
     .select(F.format_string(key_format, F.pmod(F.xxhash64("id", F.lit(4)), F.lit(keys)) + first_key).alias("user_id"),
             F.timestamp_millis(F.lit(start_ms) + ms).alias("ts"), (F.col("id") % 10 == 0).alias("label"))
     .write.mode("overwrite").parquet(path))


def floor(spark: SparkSession, spine: str, out: str) -> int:
    rows = spark.read.parquet(spine)
    first, last = rows.agg(F.min("ts"), F.max("ts")).first()
    written = delta_write.replace_partitions(rows.withColumn("date", F.to_date("ts")), out, partition_by=["date"],
                                          partition_filters=day_filter("date", first.date(), last.date()))
    return written["rows_written"]


def join(spark: SparkSession, lake: str, spine: str, out: str, precision: str = "bucket") -> int:
    spec = SpineSpec(path=spine, format="parquet", precision=precision)
    return point_in_time_join.run(spark, lake, out, spec, CONFIG)["rows_written"]


def plan_operators(spark: SparkSession, lake: str, spine: str) -> Counter:
    """The join's physical operators (before the write), by name."""
    rows = spark.read.parquet(spine)
    lookups = rows.withColumns({KEY: F.col("user_id"), AT: F.col("ts")})
    first, last = rows.agg(F.min("ts"), F.max("ts")).first()
    joined = with_values_as_of(spark, lake, lookups, CONFIG, Reading.of(CONFIG),
                               first.replace(tzinfo=timezone.utc), last.replace(tzinfo=timezone.utc))
    plan = joined._jdf.queryExecution().executedPlan().toString()
    names = re.findall(r"(?m)^[\s:|+\-]*(?:\*\(\d+\) )?([A-Z][A-Za-z]+)", plan)
    return Counter(n for n in names if n not in ("AdaptiveSparkPlan",))


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spine-rows", type=float, default=1e5)
    parser.add_argument("--keys", type=int, default=None, help="default: spine rows / 10, 10^3 .. 10^6")
    parser.add_argument("--days", type=int, default=30, help="days of change points (default 30: a month)")
    parser.add_argument("--changes-per-key-day", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default="bench/.work/pit")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--precision", choices=("bucket", "event"), default="bucket",
                        help="event: tables made by the jobs, and the join timed with precision bucket and event")
    parser.add_argument("--events", type=float, default=None, help="with --precision event: events generated "
                        "(default: 10 per spine row)")
    args = parser.parse_args(argv)
    spine_rows = int(args.spine_rows)
    keys = args.keys or min(max(spine_rows // 10, 1000), 1_000_000)
    from jobs.runtime.spark_session import get_spark

    spark = get_spark({"spark.master": args.master})
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    lake, spine = str(work / "lakehouse"), str(work / "spine")
    started = time.perf_counter()
    exact = args.precision == "event"
    if exact:
        changes, snapshots = write_by_the_jobs(spark, lake, int(args.events or 10 * spine_rows), keys, args.days)
        write_spine(spark, spine, spine_rows, keys, args.days, key_format=EventShape(keys=keys).key_format,
                    first_key=1)  # bench.generate's keys
    else:
        changes, snapshots = write_window_tables(spark, lake, keys, args.days, args.changes_per_key_day)
        write_spine(spark, spine, spine_rows, keys, args.days)
    print(f"generated in {time.perf_counter() - started:.1f}s: {spine_rows:,} spine rows, {keys:,} keys, "
          f"{changes:,} change points and {snapshots:,} snapshot rows over {args.days} days", flush=True)
    operators = plan_operators(spark, lake, spine)
    print("join plan operators:", ", ".join(f"{n} x{c}" for n, c in sorted(operators.items())), flush=True)
    runs = [("floor", lambda out: floor(spark, spine, out)), ("join", lambda out: join(spark, lake, spine, out))]
    if exact:
        runs.append(("join_event", lambda out: join(spark, lake, spine, out, "event")))
    results = {name: [] for name, _ in runs}
    for i in range(args.repeat + 1):  # the first round warms up, untimed
        for name, fn in runs:
            out = work / name
            shutil.rmtree(out, ignore_errors=True)
            seconds = timed(fn, str(out))
            if i:
                results[name].append(seconds)
    best = {name: min(times) for name, times in results.items()}
    rows_in = spine_rows + changes + snapshots
    print("\n| spine rows | rows in (spine + change points + snapshots) | floor (read spine, write output) | join | join / floor |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {spine_rows:,} | {rows_in:,} | {best['floor']:.2f} s | {best['join']:.2f} s | "
          f"{best['join'] / best['floor']:.2f}x |")
    print(f"(best of {args.repeat}; all rounds: floor {', '.join(f'{t:.2f}' for t in results['floor'])}; "
          f"join {', '.join(f'{t:.2f}' for t in results['join'])})")
    if exact:
        print(f"precision event: {best['join_event']:.2f} s, {best['join_event'] / best['join']:.2f}x the join with "
              f"precision bucket, {best['join_event'] / best['floor']:.2f}x the floor (all rounds: "
              f"{', '.join(f'{t:.2f}' for t in results['join_event'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
