"""What a tile's running merge of sketches costs (``exact_values.running_merge``), against the
same merge without its query rows and against the floors of that work, in one run.

    python -m bench.running_merge --keys 1000      # a day of one-minute frames per key, ~2 min

It imports panes' jobs and ``bench.measure``. Each key has 1,440 frames of 7 values (the
``sketches`` configuration of ``bench.aggregation_cost`` at 10^7 events and 10^3 keys), in
tiles of 120, and two query rows a frame (a change point as a frame enters, one as it leaves).
The floors: shuffling and sorting the same rows, and merging each tile's frames once. The merge
without its query rows shows what they cost: each is evaluated at (a sketch serialised) and
carries its merged sketches. Into Spark's ``noop`` sink; best of ``--reps`` after a warm-up
round, alternating (``bench.measure.best_interleaved``).
"""

from __future__ import annotations

import argparse
import functools

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.measure import best_interleaved, print_run
from jobs.runtime.spark_session import get_spark
from jobs.windows.exact_values import merge_non_invertible, running_merge
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

CONFIG = PipelineConfig(aggregations=(aggregation("approx_percentile", "p", percentiles=[0.5, 0.9]),
                                      aggregation("approx_distinct", "d"), aggregation("max", "m")))
FRAMES, VALUES, TILE = 1440, 7, 120


def order() -> list[Column]:
    """The tail's order: a query at a frame's position sorts before it (frames before the end)."""
    return [F.col("pos").asc(), F.col("is_query").desc()]


def frame_and_query_rows(spark: SparkSession, keys: int) -> DataFrame:
    """Each key's frame partials and its query rows (null partials), as ``exact_values`` unions them."""
    fields = [c for a in CONFIG.aggregations for c in a.field_columns()]
    events = spark.range(keys * FRAMES * VALUES).select(
        (F.col("id") % keys).alias("key"), (F.col("id") / (keys * VALUES)).cast("long").alias("pos"),
        (F.rand(1) * 1000).cast("long").alias("value"))
    partials = events.groupBy("key", "pos").agg(*[c.alias(n) for a in CONFIG.aggregations for c, n in zip(
        a.spark_accumulate(F.col("value"), F.lit(None)), a.field_columns(), strict=True)])
    frames = partials.select(F.lit("w").alias("window"), "key", "pos", (F.col("pos") / TILE).cast("long").alias("tile"),
                             *fields, F.lit(False).alias("is_query"), F.lit(None).cast("long").alias("end"))
    at = (F.col("id") / (keys * 2)).cast("long")
    queries = spark.range(keys * FRAMES * 2).select(
        F.lit("w").alias("window"), (F.col("id") % keys).alias("key"), at.alias("pos"), (at / TILE).cast("long").alias("tile"),
        *[F.lit(None).cast(f.spark_type).alias(c) for a in CONFIG.aggregations for c, f in zip(a.field_columns(), a.fields)],
        F.lit(True).alias("is_query"), (at * 60).alias("end"))
    return frames.unionByName(queries).localCheckpoint()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=2, help="timed runs per variant; the best counts")
    args = parser.parse_args()
    spark = get_spark({"spark.ui.enabled": "false"})
    rows = frame_and_query_rows(spark, args.keys)
    variants = {
        "running merge (panes)": running_merge(rows, CONFIG, order(), 0),
        "without its query rows": running_merge(rows.where(~F.col("is_query")), CONFIG, order(), 0),
        "floor: shuffle and sort the rows": rows.repartition("window", "key", "tile")
        .sortWithinPartitions("window", "key", "tile", *order()),
        "floor: each tile's frames merged once": merge_non_invertible(rows, CONFIG, "window", "key", "tile"),
    }
    best = {name: t.seconds for name, t in best_interleaved(spark, {
        name: functools.partial(variant.write.format("noop").mode("overwrite").save)
        for name, variant in variants.items()}, args.reps, print_run).items()}
    floor = best["floor: shuffle and sort the rows"] + best["floor: each tile's frames merged once"]
    print(f"\na tile's running merge of sketches, {args.keys} keys x {FRAMES} frames (best of {args.reps}):")
    print("| variant | seconds | x panes | x both floors |\n|---|---:|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / best['running merge (panes)']:.2f} | {seconds / floor:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
