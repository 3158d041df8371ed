"""What finishing a sliding window's non-invertible partials costs per end: the merge of its
head, middle and tail as a sorted collection folded (``exact_values.merge_non_invertible``, as
the tiles and spans are merged) against ``exact_values.merged_in_order``, in one run.

    python -m bench.end_merge --ends 1400000        # as many ends as 10^5 events a day x 7d/1m
    python -m bench.end_merge --sketches --ends 200000   # a KLL and an HLL sketch per part instead

Three generated parts, one state of ``stddev_pop`` (Chan's) and one of ``max`` per end each,
some empty, go through each merge into Spark's ``noop`` sink with generated code, as the jobs
run; best of ``--reps`` after a warm-up round, alternating (``bench.measure.best_interleaved``).
With ``--sketches`` each part holds an ``approx_percentile`` and an ``approx_distinct`` sketch
of 300 values (drawn from a pool of 1,000 such sketches: their size, not their values, is the
cost) and a ``max``.
"""

from __future__ import annotations

import argparse
import functools

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.measure import best_interleaved, print_run
from jobs.runtime.spark_session import get_spark
from jobs.windows.exact_values import merge_non_invertible, merged_in_order
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

CONFIG = PipelineConfig(fields=(("x", "double"),),
                        aggregations=(aggregation("stddev_pop", "sd", "x", "double"), aggregation("max", "hi", "x", "double")))
SKETCHES = PipelineConfig(aggregations=(aggregation("approx_percentile", "p", percentiles=[0.5, 0.9]),
                                        aggregation("approx_distinct", "d"), aggregation("max", "hi")))
POOL, VALUES = 1000, 300


def parts(spark: SparkSession, ends: int) -> list[DataFrame]:
    """A head, middle and tail state per end: one in five empty (n = 0)."""
    return [spark.range(ends).select(F.col("id").alias("end"), (F.col("id") % 5).alias("sd__n"),
                                     F.rand(p).alias("sd__mean"), F.rand(p + 3).alias("sd__m2"),
                                     F.rand(p + 6).alias("hi__m")).localCheckpoint()
            for p in range(3)]


def sketch_parts(spark: SparkSession, ends: int) -> list[DataFrame]:
    """A head, middle and tail per end, each a sketch of the pool's: its partial columns."""
    values = spark.range(POOL * VALUES).select((F.col("id") % POOL).alias("sketch"),
                                               (F.rand(1) * 10**6).cast("long").alias("value"))
    pool = values.groupBy("sketch").agg(*[c.alias(n) for a in SKETCHES.aggregations for c, n in zip(
        a.spark_accumulate(F.col("value"), F.lit(None)), a.field_columns(), strict=True)])
    return [spark.range(ends).select(F.col("id").alias("end"), (F.abs(F.xxhash64("id", F.lit(p))) % POOL).alias("sketch"))
            .join(F.broadcast(pool), "sketch").drop("sketch").localCheckpoint() for p in range(3)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ends", type=int, default=1_400_000)
    parser.add_argument("--reps", type=int, default=3, help="timed runs per merge; the best counts")
    parser.add_argument("--sketches", action="store_true", help="sketches in each part, not Chan's states")
    args = parser.parse_args()
    spark = get_spark({"spark.ui.enabled": "false"})
    config = SKETCHES if args.sketches else CONFIG
    head, middle, tail = (sketch_parts if args.sketches else parts)(spark, args.ends)
    alone = "one aggregate, a partial one before the shuffle" if args.sketches else "sorted and folded"
    merges = {alone: merge_non_invertible(head.unionByName(middle).unionByName(tail), config, "end"),
              "in order": merged_in_order([head, middle, tail], config, "end")}
    best = {name: t.seconds for name, t in best_interleaved(spark, {
        name: functools.partial(merged.write.format("noop").mode("overwrite").save)
        for name, merged in merges.items()}, args.reps, print_run).items()}
    states = "sketches" if args.sketches else "Chan's states"
    print(f"\na window end's head, middle and tail merged, {args.ends} ends of {states} (best of {args.reps}):")
    print("| merge | seconds | x in order |\n|---|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / best['in order']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
