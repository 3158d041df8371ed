"""Bench-only prototypes of changes to the panes jobs, timed against the product in one run.

The product code (``jobs/``) is not changed here. Each change is a *patch*: a replacement for one
module-level function of ``jobs.minute_partials`` or ``jobs.sliding_windows``, applied only while
a prototype run executes (the jobs look those functions up at call time), so the prototype runs
the product's own ``run()`` with just the named functions swapped. Every change keeps the output
tables identical: ``python -m bench.prototype`` checks that on a generated set before timing.

Changes (names used by ``--changes``):

- ``late_empty``: under ``late_policy: include`` nothing is late, so the rows written to
  ``late_events`` are an empty frame instead of a second scan and deduplication of the events
  (the product's filter on a null watermark is not folded away by Spark).
- ``dedupe_once``: deduplicate by (event_date, event_id) after one explicit shuffle on those
  columns. Duplicates are rare, so the map-side half of Spark's sort-based aggregate (``min``
  of a struct holding strings cannot be hash-aggregated) sorts every event for nothing.
- ``values_once``: compute each window's values once and feed both writes (changes and
  snapshot) from that, instead of recomputing the shuffles and windows for each write; read
  the frames in one scan that emits each frame's entering and leaving delta together
  (``inline`` of two structs) instead of caching the frames and reading the cache four
  times; shuffle once on ``key`` (the per-end sum and the running sum share that
  partitioning) instead of twice; replace the per-key zero start rows (a ``distinct`` over the
  deltas) by ``lag``'s default, the finished value of an empty partial. Only for invertible
  aggregations and ``changes`` emission; anything else runs the product's path unchanged.

    python -m bench.prototype --size 1e6 [--changes late_empty,dedupe_once,values_once]
"""

from __future__ import annotations

import contextlib
from datetime import date, timedelta
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs import minute_partials as mp
from jobs import sliding_windows as sw
from windowing_core.config import PipelineConfig

CHANGES = ("late_empty", "dedupe_once", "values_once")

_product = {"minute_partials": mp.minute_partials, "deduplicate_across_arrivals": mp.deduplicate_across_arrivals,
            "sliding_windows": sw.sliding_windows, "filter_changes": sw.filter_changes}


# -- minute partials ----------------------------------------------------------------------------------


def deduplicate_across_arrivals(events: DataFrame) -> DataFrame:
    """The product's function (same rule: the earliest arrival wins) with one explicit shuffle on
    (event_date, event_id) before the aggregate, which then runs whole on the reduce side: one
    sort of the events instead of two."""
    carried = [c for c in events.columns if c not in ("arrival_date", "source_file", "event_id")]
    first = F.min(F.struct("arrival_date", "source_file", *carried))
    return (
        events.withColumn("event_date", F.to_date("event_time"))
        .repartition("event_date", "event_id")
        .groupBy("event_date", "event_id")
        .agg(first.alias("first"))
        .select("event_date", "event_id", "first.*")
    )


def minute_partials_late_empty(events: DataFrame, config: PipelineConfig, first: date, last: date):
    partials, late = _product["minute_partials"](events, config, first, last)
    if config.late_policy != "drop":  # nothing is behind a watermark that is not computed
        late = events.sparkSession.createDataFrame([], late.schema)
    return partials, late


# -- sliding windows ----------------------------------------------------------------------------------


def _empty_values(config: PipelineConfig) -> dict | None:
    """Each aggregation's finished value of an empty partial (what the product's zero start rows
    finish to), or None where that is not a plain literal."""
    try:
        values = {a.name: a.finish(a.empty()) for a in config.aggregations}
    except Exception:
        return None
    return values if all(v is None or isinstance(v, (int, float)) for v in values.values()) else None


def filter_changes(values: DataFrame, config: PipelineConfig, after: int) -> DataFrame:
    """The product's rule; a key's first row compares with the empty window's value."""
    empty = _empty_values(config)
    by_key = Window.partitionBy("key").orderBy("end")
    changed = reduce(lambda a, b: a | b, [~F.col(a.name).eqNullSafe(F.lag(a.name, 1, empty[a.name]).over(by_key))
                                          for a in config.aggregations])
    return values.withColumn("changed", changed).where((F.col("end") > after) & F.col("changed"))


def running_values(frames: DataFrame, baseline: DataFrame, spec, config: PipelineConfig, plan) -> DataFrame:
    """Deltas from one pass over the frames, one shuffle on key, a running sum: finished values."""
    state = sw.state_columns(config)
    f = sw._seconds()
    deltas = frames.where(sw._in_ranges(f, plan.delta_ranges)).select("key", F.inline(F.array(
        F.struct(sw._ceil_to_grid(f + spec.bucket, spec).alias("end"), *[F.col(c).alias(c) for c in state]),
        F.struct(sw._ceil_to_grid(f + spec.length + spec.bucket, spec).alias("end"),
                 *[(-F.col(c)).alias(c) for c in state]),
    ))).where((F.col("end") > plan.after) & (F.col("end") < plan.stop))
    per_end = (deltas.unionByName(baseline.select("key", "end", *state))
               .repartition("key")  # both the per-end sum and the running sum are per key: one shuffle
               .groupBy("key", "end").agg(*[F.sum(c).alias(c) for c in state]))
    running = Window.partitionBy("key").orderBy("end").rowsBetween(Window.unboundedPreceding, 0)
    values = per_end.select("key", "end", *[F.sum(c).over(running).alias(c) for c in state])
    return sw.with_finished_values(values, config)


class _Persisted(list):
    def unpersist(self) -> None:
        for df in self:
            df.unpersist()


def sliding_windows(spark: SparkSession, lakehouse: str, first: date, last: date,
                    config: PipelineConfig) -> tuple[DataFrame, DataFrame, dict]:
    simple = (all(a.invertible for a in config.aggregations) and all(s.emit == "changes" for s in config.windows)
              and _empty_values(config) is not None)
    if not simple:  # the product's path, as it is
        with _patched({(sw, "filter_changes"): _product["filter_changes"]}):
            return _product["sliding_windows"](spark, lakehouse, first, last, config)
    plans = {spec.name: sw._Plan(spec, config, first, last) for spec in config.windows}
    previous = sw._read_previous_snapshot(spark, lakehouse, first - timedelta(days=1))
    ranges = [r for p in plans.values() for r in p.delta_ranges]
    if previous is None:
        ranges += [p.bootstrap_range for p in plans.values()]
    frames = sw._read_frames(spark, lakehouse, ranges)
    persisted, changes, snapshots = _Persisted(), [], []
    for spec in config.windows:
        plan = plans[spec.name]
        baseline = (sw.baseline_from_snapshot(previous, spec, config, plan.after) if previous is not None
                    else sw.baseline_from_frames(frames, spec, config, plan.after))
        values = running_values(frames, baseline, spec, config, plan).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(values)
        changes.append(sw.window_rows(values, spec, config, plan.after))
        snapshots.append(sw.daily_snapshots(values, spec, config, first, last))
    info = {"baseline": "snapshot" if previous is not None else "bootstrap", "frames": persisted}
    return reduce(DataFrame.unionByName, changes), reduce(DataFrame.unionByName, snapshots), info


# -- applying them ------------------------------------------------------------------------------------

_PATCHES = {
    "late_empty": {(mp, "minute_partials"): minute_partials_late_empty},
    "dedupe_once": {(mp, "deduplicate_across_arrivals"): deduplicate_across_arrivals},
    "values_once": {(sw, "sliding_windows"): sliding_windows, (sw, "filter_changes"): filter_changes},
}


@contextlib.contextmanager
def _patched(patches: dict):
    saved = {target: getattr(*target) for target in patches}
    try:
        for (module, name), function in patches.items():
            setattr(module, name, function)
        yield
    finally:
        for (module, name), function in saved.items():
            setattr(module, name, function)


def patches_for(changes: list[str] | tuple[str, ...]) -> dict:
    unknown = set(changes) - set(CHANGES)
    if unknown:
        raise ValueError(f"unknown change(s) {sorted(unknown)}; known: {', '.join(CHANGES)}")
    return {k: v for c in changes for k, v in _PATCHES[c].items()}


def minute_partials_run(spark, lakehouse, first, last, config, changes=CHANGES) -> dict:
    with _patched(patches_for(changes)):
        return mp.run(spark, lakehouse, first, last, config)


def sliding_windows_run(spark, lakehouse, first, last, config, changes=CHANGES) -> dict:
    with _patched(patches_for(changes)):
        return sw.run(spark, lakehouse, first, last, config)


# -- checking and timing them on their own --------------------------------------------------------------


def _table_copy(spark: SparkSession, lakehouse: str, table: str, day: date, into: str) -> DataFrame:
    """The day's partition of a table as it is now, copied aside (a later run replaces it)."""
    from jobs import delta_io

    column = "event_date" if table in ("minute_partials", "daily_partials") else "date"
    df = delta_io.read_table(spark, f"{lakehouse}/{table}", partition_filters=[(column, "in", [day.isoformat()])])
    df.write.mode("overwrite").parquet(into)
    return spark.read.parquet(into)


def check_identical(spark: SparkSession, lakehouse: str, day: date, config: PipelineConfig, work: str,
                    changes=CHANGES) -> dict:
    """Run the product's day, copy its outputs, run the prototype's day: same rows in every table?"""
    from bench.methods import panes_day

    tables = ["minute_partials", "daily_partials", "window_changes", "window_snapshot"]
    panes_day(spark, lakehouse, day, config)
    expected = {t: _table_copy(spark, lakehouse, t, day, f"{work}/expected_{t}") for t in tables}
    panes_day(spark, lakehouse, day, config, lambda *a: minute_partials_run(*a, changes=changes),
              lambda *a: sliding_windows_run(*a, changes=changes))
    result = {}
    for t in tables:
        actual = _table_copy(spark, lakehouse, t, day, f"{work}/actual_{t}")
        columns = expected[t].columns
        missing, extra = expected[t].exceptAll(actual.select(*columns)).count(), actual.select(*columns).exceptAll(expected[t]).count()
        result[t] = {"rows": expected[t].count(), "missing": missing, "extra": extra}
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import time

    from bench import methods
    from bench.measure import measure
    from bench.run import DAY, DAYS, prepare
    from jobs.spark_session import get_spark

    parser = argparse.ArgumentParser(description="Check and time the prototype changes one by one.")
    parser.add_argument("--size", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--work", default="bench/.work")
    parser.add_argument("--changes", default=",".join(CHANGES))
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--reuse", action="store_true", help="reuse the lakehouse of an earlier run; skip the check")
    args = parser.parse_args(argv)
    changes = [c for c in args.changes.split(",") if c]
    spark = get_spark()
    config = PipelineConfig()
    lakehouse = f"{args.work}/proto{args.size}"
    if not args.reuse:
        print(prepare(spark, lakehouse, args.size, DAYS, config, 7), flush=True)
        print("identical:", json.dumps(check_identical(spark, lakehouse, DAY, config, f"{args.work}/proto-check",
                                                       changes)), flush=True)
    else:  # warm the JVM and the Python workers first
        methods.panes_day(spark, lakehouse, DAY, config)
    variants = {"product": ()} | {f"+{c}": (c,) for c in changes} | {"all": tuple(changes)}
    results = {name: [] for name in variants}
    floor = measure(spark, lambda: methods.scan_floor(spark, lakehouse, DAY, config), reps=args.reps).seconds
    for _ in range(args.reps):  # interleaved, so load from other processes falls on all alike
        for name, chosen in variants.items():
            start = time.perf_counter()
            result = methods.panes_day(spark, lakehouse, DAY, config,
                                       lambda *a, c=chosen: minute_partials_run(*a, changes=c),
                                       lambda *a, c=chosen: sliding_windows_run(*a, changes=c))
            results[name].append((time.perf_counter() - start, result["parts"]))
    print(f"scan floor {floor:.2f} s")
    for name, runs in results.items():
        best, parts = min(runs, key=lambda r: r[0])
        print(f"{name:<14} {best:6.2f} s  {best / floor:5.2f}x floor  (partials {parts['partials']:.2f}, "
              f"sliding {parts['sliding']:.2f}; runs {', '.join(f'{r[0]:.2f}' for r in runs)})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
