"""What the asset checks of one day cost, on a lakehouse of ``bench.run``.

    .venv/bin/python -m bench.checks                                  # bench/.work/n10000000, ~3 min
    .venv/bin/python -m bench.checks --lakehouse bench/.work/n1000000 --reps 5

Run ``python -m bench.run --sizes 1e7`` first: it leaves day D's (``bench.run.DAY``) minute
partials, change points and snapshot in the lakehouse. In one Spark session with panes'
defaults, one untimed warm-up round and ``--reps`` timed rounds, interleaved, best of each:
every check of a table for day D, as its Dagster multi-asset check evaluates them
(``expectations.asset_checks.EVALUATORS``: Great Expectations suites and reconciliations),
for minute_partials, window_changes and window_snapshot (events and quarantine need a landing
folder, which ``bench.run`` does not write). And one pair:

- key sample: ``changes_conserve_frames`` with ``reconciliation.sampled_keys`` (only keys whose
  hash falls below a threshold ranked and collected) against ranking every key of the day by
  hash, as it did before
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from datetime import date, timedelta
from unittest import mock

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from bench.measure import best_interleaved, print_run
from bench.run import DAY
from expectations import asset_checks, reconciliation
from expectations.catalog import checks_of
from jobs.spark_session import get_spark
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES
from windowing_core.config import PipelineConfig

TABLES = ("minute_partials", "window_changes", "window_snapshot")


def ranked_over_every_key(changes: DataFrame, partials: DataFrame, days: list[date], reach: int,
                          sample_keys: int) -> dict[date, list[str]]:
    """``reconciliation.sampled_keys`` as it was: every key of the day ranked by hash."""
    wanted = [d.isoformat() for d in days]
    changed = changes.where(F.col("date").isin(wanted)).select("date", "key").distinct()
    reached = F.explode(F.sequence("event_date", F.date_add("event_date", reach))).alias("date")
    active = (partials.select("key", "event_date").distinct().select("key", reached)
              .where(F.col("date").isin(wanted)).distinct())
    quiet = active.join(changed, ["date", "key"], "left_anti")
    by_hash = Window.partitionBy("date").orderBy(F.xxhash64("key", F.col("date").cast("string")), "key")
    sample = (changed.withColumn("n", F.row_number().over(by_hash)).where(F.col("n") <= sample_keys)
              .unionByName(quiet.withColumn("n", F.row_number().over(by_hash))
                           .where(F.col("n") <= max(1, sample_keys // 2)))
              .select("date", "key"))
    keys: dict[date, list[str]] = defaultdict(list)
    for r in sample.collect():
        keys[r["date"]].append(r["key"])
    return dict(keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lakehouse", default="bench/.work/n10000000", help="a lakehouse of bench.run")
    parser.add_argument("--reps", type=int, default=3, help="timed rounds (best of)")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")

    spark = get_spark()
    config = PipelineConfig()
    day = DAY

    def evaluate(table: str) -> dict:
        names = {c.name for c in checks_of(config, table)}
        inputs = asset_checks.Inputs(spark, "", args.lakehouse, config, [day], names)
        return asset_checks.EVALUATORS[table](inputs)

    def conserve(sample) -> None:
        reach = reconciliation.frames_reach_days(config)
        inputs = asset_checks.Inputs(spark, "", args.lakehouse, config, [day], set())
        with mock.patch.object(reconciliation, "sampled_keys", sample):
            outcome = reconciliation.changes_conserve_frames(
                inputs.read(WINDOW_CHANGES, "date", day, day),
                inputs.read(MINUTE_PARTIALS, "event_date", day - timedelta(days=reach), day), config, [day])
        if not outcome[day].passed:
            raise SystemExit(f"changes_conserve_frames failed on {day}: {outcome[day].metadata}")

    methods = {f"{table} checks": (lambda table=table: evaluate(table)) for table in TABLES}
    methods["conserve frames, keys sampled below a hash"] = lambda: conserve(reconciliation.sampled_keys)
    methods["conserve frames, every key ranked"] = lambda: conserve(ranked_over_every_key)
    print(f"{args.lakehouse}, day {day}, every check of each table (default configuration); "
          f"one warm-up round, best of {args.reps}", flush=True)

    def report(round_: int, name: str, seconds: float, result) -> None:
        if isinstance(result, dict):  # an evaluator's outcomes: a bench of failing checks is void
            failed = sorted(c for c, by_day in result.items() if not by_day[day].passed)
            if failed:
                raise SystemExit(f"{name}: {', '.join(failed)} failed on {day}")
        print_run(round_, name, seconds)

    best = {name: timing.seconds for name, timing in best_interleaved(spark, methods, args.reps, report).items()}

    print(f"\n{'':45s} {'seconds':>8s}")
    for name, seconds in best.items():
        print(f"{name:45s} {seconds:8.2f}")
    print(f"\nall checks of the day: {sum(best[f'{t} checks'] for t in TABLES):.2f} s; the key sample "
          f"below a hash against every key ranked: "
          f"{best['conserve frames, every key ranked'] / best['conserve frames, keys sampled below a hash']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
