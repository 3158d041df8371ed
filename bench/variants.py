"""The jobs' choices against the alternatives they replaced, on one lakehouse of ``bench.run``.

    .venv/bin/python -m bench.variants                       # bench/.work/n10000000, ~5 min
    .venv/bin/python -m bench.variants --lakehouse bench/.work/n1000000 --reps 5
    .venv/bin/python -m bench.variants --pair "frames and daily tiles" --reps 7

Each pair computes the same rows both ways for day D (``bench.run.DAY``) into Spark's ``noop``
sink, so only the computation differs (the two partials pairs write Delta tables into a scratch
folder, because the writes are where they differ; the daily tiles pair's point is a table
fewer); the variants are interleaved in every round, and the best of ``--reps`` rounds is kept.
Run ``python -m bench.run --sizes 1e7`` first (it leaves the minute partials and D - 1's
snapshot in the lakehouse).

- running sum: ``sliding_windows.with_running_state`` (a RANGE frame over the deltas, the last
  row of each end kept) against a per-(key, end) ``sum`` first and a ROWS frame over it.
- presort: ``sliding_windows.presorted_by_key`` (a radix sort on one long, key hash and end,
  before the running sum's Window, whose own sort then finds its input in order) against the
  Window's sort alone, on the same partitioning.
- marks: ``sliding_windows.with_emission_marks`` (the previous state and the next end handed on
  by the running sum's Window) against ``lag`` and ``lead`` over a second Window.
- both window tables: ``sliding_windows.table_rows`` (each marked row tagged for both tables by
  two compiled generators, one pass) against the marks persisted and filtered once per table,
  and against arrays of structs built per row by higher-order functions (lambdas).
- deduplication: ``minute_partials.deduplicate_across_arrivals`` (the winner picked by its
  arrival day alone, only its key, event_time and value carried) against the order it replaced,
  arrival day, then file and line, which shuffled and sorted the file and line of every event.
- daily tiles: ``minute_partials.run`` writes ``daily_partials`` only where a non-invertible
  aggregation slides over a window of a day or more (``windowing_core.config.reads_day_tiles``; not under
  the default count and sum), against writing them always (Delta writes into a scratch folder).
- frames and daily tiles: where the tiles are kept, ``minute_partials.run``'s one query, where
  Spark reuses the shuffle both tables share, against the frames persisted and then folded into
  the tiles. Its gain is largest on small days (``--lakehouse bench/.work/n10000``): a persisted
  plan keeps all its shuffle partitions, where AQE would merge them.
- delta snapshot partitions: the daily run end to end (``bench.methods.panes_day``, both jobs
  with their Delta writes into the lakehouse's day D) with panes' ``snapshotPartitions`` against
  Delta's default of 50.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from datetime import timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from bench.measure import best_interleaved
from bench.run import DAY
from jobs.tables import TABLE_COLUMN

def _noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


# -- the alternatives, as the jobs had them ------------------------------------------------------


def per_end_then_rows(deltas: DataFrame, config) -> DataFrame:
    from jobs.sliding_windows import state_columns

    state = state_columns(config)
    per_end = deltas.repartition("key").groupBy("key", "end").agg(
        *[F.sum(c).alias(c) for c in state], F.sum("entering").alias("entering"))
    running = Window.partitionBy("key").orderBy("end").rowsBetween(Window.unboundedPreceding, 0)
    return per_end.select("key", "end", "entering", *[F.sum(c).over(running).alias(c) for c in state])


def persisted_then_filtered(marked: DataFrame, spec, config, after: int) -> None:
    """The marks persisted, then one filter (and one write) per table."""
    from jobs import sliding_windows as sw
    from jobs.tables import declared_columns

    kept = marked.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        changes = kept.where((F.col("end") > after) & F.col("changed")).select(
            "key", F.lit(spec.name).alias("window"), sw._timestamp(F.col("end") - spec.length).alias("window_start"),
            sw._timestamp("end").alias("window_end"), "event_count", *[a.name for a in config.aggregations],
            F.to_date(sw._timestamp("end")).alias("date"))
        as_of = sw._ceil_to_grid(F.unix_seconds(F.date_add("date", 1).cast("timestamp")), spec) - spec.slide
        snapshot = (kept.where(F.col("until").isNotNull() & (F.col("event_count") > 0))
                    .select("*", F.explode(F.sequence("date", "until")).alias("day")).drop("date")
                    .withColumnRenamed("day", "date").withColumn("window", F.lit(spec.name))
                    .withColumn("as_of", sw._timestamp(as_of))
                    .select(*[c for c, _ in declared_columns("window_snapshot", config)]))
        _noop(changes)
        _noop(snapshot)
    finally:
        kept.unpersist()


def lambda_rows(marked: DataFrame, spec, config, after: int) -> DataFrame:
    """Both tables' rows as an array of structs per marked row, built by higher-order functions."""
    from jobs import sliding_windows as sw
    from jobs.tables import partial_columns

    end, null_ts = F.col("end"), F.lit(None).cast("timestamp")

    def row(table, start, stop, as_of, day, with_state):
        return F.struct(F.col("key").alias("key"), F.lit(spec.name).alias("window"), start.alias("window_start"),
                        stop.alias("window_end"), as_of.alias("as_of"), F.col("event_count").alias("event_count"),
                        *[(F.col(c) if with_state else F.lit(None).cast("long")).alias(c)
                          for c in partial_columns(config, invertible=True)],
                        *[F.col(a.name).alias(a.name) for a in config.aggregations], day.alias("date"),
                        F.lit(table).alias(TABLE_COLUMN))

    change = row("window_changes", sw._timestamp(end - spec.length), sw._timestamp(end), null_ts,
                 F.to_date(sw._timestamp(end)), False)

    def as_of(day):
        return sw._timestamp(sw._ceil_to_grid(F.unix_seconds(F.date_add(day, 1).cast("timestamp")), spec) - spec.slide)

    held = F.col("until").isNotNull() & (F.col("event_count") > 0)
    snapshots = F.transform(F.sequence("date", F.coalesce("until", "date")),
                            lambda d: row("window_snapshot", null_ts, null_ts, as_of(d), d, True))
    rows = F.concat(F.filter(F.array(change), lambda _: (end > after) & F.col("changed")),
                    F.filter(snapshots, lambda _: held))
    return marked.select(F.inline(rows))


def window_marks(values: DataFrame, config, first, last) -> DataFrame:
    """The marks as the jobs had them: ``lag`` of every finished value and ``lead`` of the end
    over a second Window after the running sum."""
    from functools import reduce

    from jobs.sliding_windows import _timestamp

    by_key = Window.partitionBy("key").orderBy("end")
    changed = reduce(lambda a, b: a | b, [
        ~F.col(a.name).eqNullSafe(F.lag(a.name, 1, a.finish(a.empty())).over(by_key).cast(a.output_type))
        for a in config.aggregations])

    def day_of(end):
        return F.greatest(F.to_date(_timestamp(end)), F.lit(first))

    day, next_end = day_of(F.col("end")), F.lead("end").over(by_key)
    until = (F.when(next_end.isNull(), F.lit(last))
             .when(day_of(next_end) > day, F.date_sub(day_of(next_end), 1)))
    return values.select("*", changed.alias("changed"), day.alias("date"), until.alias("until"))


def frames_and_tiles(events: DataFrame, config, persisted: bool, scratch: str, tiles: bool = True) -> None:
    """The partials job's tables (with or without the daily tiles), written by its own
    ``write_tables`` into a scratch lakehouse."""
    from jobs import minute_partials as mp
    from jobs.tables import DAILY_PARTIALS, MINUTE_PARTIALS, day_filter

    frames, _ = mp.minute_partials(events, config, DAY, DAY)
    if persisted:
        frames = frames.persist()
    try:
        days = day_filter("event_date", DAY, DAY)
        tables = [(MINUTE_PARTIALS, frames, days)]
        if tiles:
            tables.append((DAILY_PARTIALS, mp.to_daily_partials(frames, config), days))
        mp.write_tables(scratch, tables, config)
    finally:
        if persisted:
            frames.unpersist()


# -- the run -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--lakehouse", default="bench/.work/n10000000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pair", action="append", default=[],
                        help="time only this pair (repeatable), e.g. --pair 'frames and daily tiles'")
    args = parser.parse_args(argv)

    from jobs import delta_io, minute_partials as mp, sliding_windows as sw
    from jobs.spark_session import get_spark
    from jobs.tables import EVENTS, day_filter
    from windowing_core.config import PipelineConfig, reads_day_tiles

    spark, config = get_spark(), PipelineConfig()
    scratch = tempfile.mkdtemp(prefix="panes-variants-")  # the partials pair writes its Delta tables here
    spec = config.windows[0]
    plan = sw._Plan(spec, config, DAY, DAY)
    before = DAY - timedelta(days=1)
    previous = sw.read_snapshot(spark, args.lakehouse, before,
                                sw.continued_windows(spark, args.lakehouse, before, config))
    if previous is None:
        parser.error(f"no snapshot of {DAY - timedelta(days=1)} in {args.lakehouse}: run bench.run for its size first")
    frames = sw._read_frames(spark, args.lakehouse, plan.frame_ranges)
    baseline = sw.baseline_from_snapshot(previous, spec, config, plan.after)
    deltas = sw.frame_deltas(frames, spec, config, plan.after, plan.stop).unionByName(baseline)

    def marked(running: DataFrame) -> DataFrame:
        return sw.with_emission_marks(sw.with_finished_values(running, config), config, DAY, DAY)

    running = sw.with_running_state(sw.presorted_by_key(deltas, plan.after), config)
    product_marks = marked(running)
    events = delta_io.read_table(spark, EVENTS.path(args.lakehouse),
                                 partition_filters=day_filter("arrival_date", *mp.arrival_days(DAY, DAY, config)))
    arrivals = events
    events = mp.filter_event_days(events, DAY, DAY)

    def partials(unique: DataFrame) -> DataFrame:
        return unique.transform(mp.with_frame_start, config.bucket).transform(mp.to_partials, config)

    pairs = {
        "running sum": {
            "RANGE frame (jobs)": lambda: _noop(product_marks),
            "per-(key, end) sum, then ROWS frame": lambda: _noop(marked(per_end_then_rows(deltas, config))),
        },
        "presort": {
            "radix presort, then the Window's sort (jobs)": lambda: _noop(product_marks),
            "the Window's sort alone": lambda: _noop(marked(sw.with_running_state(sw.with_key_hash(deltas), config))),
        },
        "marks": {
            "from the running sum's Window (jobs)": lambda: _noop(product_marks),
            "lag and lead over a second Window": lambda: _noop(window_marks(
                sw.with_finished_values(running, config), config, DAY, DAY)),
        },
        "both window tables": {
            "tagged by generators, one pass (jobs)":
                lambda: _noop(sw.table_rows(product_marks, spec, config, plan.after, plan.last_end)),
            "persisted, filtered per table": lambda: persisted_then_filtered(product_marks, spec, config, plan.after),
            "arrays of structs by lambdas": lambda: _noop(lambda_rows(product_marks, spec, config, plan.after)),
        },
        "deduplication": {
            "arrival day decides (jobs)": lambda: _noop(partials(
                mp.deduplicate_across_arrivals(events, ["key", "event_time", "value"]))),
            # the job's struct is (arrival_date, *columns): file and line first is the order it replaced
            "arrival day, file and line decide": lambda: _noop(partials(
                mp.deduplicate_across_arrivals(events, ["source_file", "line", "key", "event_time", "value"]))),
        },
        "daily tiles": {
            "kept only where a window slides over them (jobs)":
                lambda: frames_and_tiles(arrivals, config, persisted=False, scratch=scratch,
                                         tiles=reads_day_tiles(config)),
            "always written": lambda: frames_and_tiles(arrivals, config, persisted=False, scratch=scratch),
        },
        "frames and daily tiles": {
            "one query, shared shuffle reused (jobs)":
                lambda: frames_and_tiles(arrivals, config, persisted=False, scratch=scratch),
            "frames persisted, then folded":
                lambda: frames_and_tiles(arrivals, config, persisted=True, scratch=scratch),
        },
    }
    from bench.methods import panes_day
    from jobs.spark_session import SPARK_DEFAULTS

    def daily_run(snapshot_partitions: str):
        def run() -> None:
            key = "spark.databricks.delta.snapshotPartitions"
            saved = spark.conf.get(key)
            spark.conf.set(key, snapshot_partitions)
            try:
                panes_day(spark, args.lakehouse, DAY, config)
            finally:
                spark.conf.set(key, saved)
        return run

    pairs["delta snapshot partitions"] = {
        f"{SPARK_DEFAULTS['spark.databricks.delta.snapshotPartitions']} (jobs)":
            daily_run(SPARK_DEFAULTS["spark.databricks.delta.snapshotPartitions"]),
        "Delta's default, 50": daily_run("50"),
    }
    unknown = [p for p in args.pair if p not in pairs]
    if unknown:
        parser.error(f"no pair {unknown}: the pairs are {list(pairs)}")
    pairs = {name: fns for name, fns in pairs.items() if not args.pair or name in args.pair}
    runs = {(pair, name): fn for pair, fns in pairs.items() for name, fn in fns.items()}
    try:
        best = {key: timing.seconds for key, timing in best_interleaved(spark, runs, args.reps).items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.lakehouse}, day {DAY}, best of {args.reps} interleaved rounds, noop sink "
          "(the daily tiles, the frames and daily tiles and the Arrow batches: Delta writes):")
    width = max(len(name) for fns in pairs.values() for name in fns)
    for pair, fns in pairs.items():
        names = list(fns)
        print(f"\n{pair}")
        for name in names:
            ratio = best[pair, name] / best[pair, names[0]]
            print(f"  {name:<{width}} {best[pair, name]:6.2f} s  {ratio:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
