"""What a histogram or lists cost a session's running merge, against the same merge with
``count`` alone, in one run.

    python -m bench.session_merge --keys 50 --pieces 720     # 50 keys, one 720-minute session each

Self-contained (it imports only panes' jobs). Generated session pieces (one a minute, each with a
histogram of two values out of 90, and those values as lists) go through
``session_windows.with_sessions_so_far``, the running merge of each session's pieces, into
Spark's ``noop`` sink: with ``count``; with ``count`` and ``histogram``; with ``count``,
``top_k`` and ``unique_count``; best of ``--reps``. Merged whole over the growing frame, maps
and lists are quadratic in a session's pieces; entry by entry (``partial_merges.running_counts``)
and element by element their cost is the size of what they write.
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.runtime.spark_session import get_spark
from jobs.windows.session_windows import with_sessions_so_far
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

MINUTE = 60_000_000  # microseconds, as pieces hold their times

CONFIGS = {
    "count": PipelineConfig(aggregations=(aggregation("count", "n"),)),
    "count+histogram": PipelineConfig(aggregations=(aggregation("count", "n"), aggregation("histogram", "h"))),
    "count+lists": PipelineConfig(aggregations=(aggregation("count", "n"), aggregation("top_k", "top", k=5),
                                                aggregation("unique_count", "distinct"))),
}


def pieces(spark: SparkSession, keys: int, per_session: int) -> DataFrame:
    """One session a key of ``per_session`` one-minute pieces, three events each."""
    p = (F.col("id") / keys).cast("long")
    counts = F.map_from_arrays(F.array(p % 37, 100 + (p * 7) % 53), F.array(F.lit(1).cast("long"), F.lit(2).cast("long")))
    return spark.range(keys * per_session).select(
        F.lit("s").alias("window"), (F.col("id") % keys).cast("string").alias("key"), F.lit(1).cast("long").alias("session"),
        (p * MINUTE).alias("first"), (p * MINUTE + 1).alias("last"), F.lit(None).cast("long").alias("next_first"),
        F.lit(3).cast("long").alias("event_count"), F.lit(3).cast("long").alias("n__n"), counts.alias("h__counts"),
        F.map_keys(counts).alias("top__list"), F.array_sort(F.map_keys(counts)).alias("distinct__values"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--pieces", type=int, default=720, help="pieces of each key's session (default 720)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per configuration; the best counts")
    args = parser.parse_args()
    spark = get_spark({"spark.ui.enabled": "false"})
    rows = pieces(spark, args.keys, args.pieces).localCheckpoint()
    best = {}
    for name, config in CONFIGS.items():
        columns = ["window", "key", "session", "first", "last", "next_first", "event_count",
                   *[c for a in config.aggregations for c in a.field_columns()]]
        times = []
        for _ in range(args.reps):
            started = time.perf_counter()
            with_sessions_so_far(rows.select(*columns), config).write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - started)
        best[name] = min(times)
    print(f"\nsessions' running merge, {args.keys} keys, one session of {args.pieces} pieces each "
          f"(best of {args.reps}):")
    print("| configuration | seconds | x count |\n|---|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / best['count']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
