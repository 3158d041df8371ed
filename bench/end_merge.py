"""What finishing a sliding window's non-invertible partials costs per end: the merge of its
head, middle and tail as a sorted collection folded (``exact_values.merge_non_invertible``, as
the tiles and spans are merged) against ``exact_values.merged_in_order``, in one run.

    python -m bench.end_merge --ends 1400000        # as many ends as 10^5 events a day x 7d/1m

Self-contained (it imports only panes' jobs). Three generated parts, one state of
``stddev_pop`` (Chan's) and one of ``max`` per end each, some empty, go through each merge into
Spark's ``noop`` sink with generated code, as the jobs run; best of ``--reps``, alternating.
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.runtime.spark_session import get_spark
from jobs.windows.exact_values import merge_non_invertible, merged_in_order
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

CONFIG = PipelineConfig(fields=(("x", "double"),),
                        aggregations=(aggregation("stddev_pop", "sd", "x", "double"), aggregation("max", "hi", "x", "double")))


def parts(spark: SparkSession, ends: int) -> list[DataFrame]:
    """A head, middle and tail state per end: one in five empty (n = 0)."""
    return [spark.range(ends).select(F.col("id").alias("end"), (F.col("id") % 5).alias("sd__n"),
                                     F.rand(p).alias("sd__mean"), F.rand(p + 3).alias("sd__m2"),
                                     F.rand(p + 6).alias("hi__m")).localCheckpoint()
            for p in range(3)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ends", type=int, default=1_400_000)
    parser.add_argument("--reps", type=int, default=3, help="timed runs per merge; the best counts")
    args = parser.parse_args()
    spark = get_spark({"spark.ui.enabled": "false"})
    head, middle, tail = parts(spark, args.ends)
    merges = {"sorted and folded": merge_non_invertible(head.unionByName(middle).unionByName(tail), CONFIG, "end"),
              "in order": merged_in_order([head, middle, tail], CONFIG, "end")}
    times: dict[str, list[float]] = {name: [] for name in merges}
    for _ in range(args.reps):
        for name, merged in merges.items():
            started = time.perf_counter()
            merged.write.format("noop").mode("overwrite").save()
            times[name].append(time.perf_counter() - started)
    best = {name: min(t) for name, t in times.items()}
    print(f"\na window end's head, middle and tail merged, {args.ends} ends (best of {args.reps}):")
    print("| merge | seconds | x in order |\n|---|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / best['in order']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
