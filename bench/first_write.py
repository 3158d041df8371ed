"""``python -m bench.first_write``: a day's first write against a replace of a day that holds rows.

A routed write (``jobs.storage.delta_write.replace_partitions_routed``) appends where the partitions it
replaces hold no file (``_appends``), and replaces with ``replaceWhere`` where they do, which
makes Delta rebuild the table's state to find the files to remove. Both are timed here on two
tables of the same shape, in alternating rounds in one warm session, through the jobs' own
write; the medians and their ratio are printed.

    python -m bench.first_write [--days 10] [--rows 200] [--rounds 12]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import date, timedelta

from pyspark.sql import functions as F

from jobs.runtime.spark_session import get_spark
from jobs.storage import delta_write

FIRST = date(2025, 1, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_write", description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=10, help="days each table holds before the rounds")
    parser.add_argument("--rows", type=int, default=200, help="rows a day")
    parser.add_argument("--rounds", type=int, default=12, help="timed writes of each kind")
    args = parser.parse_args(argv)
    spark = get_spark({"spark.master": "local[2]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})

    def day_rows(day: date):
        return spark.range(args.rows).select(
            (F.col("id") % 50).cast("string").alias("key"), F.col("id").alias("n"), (F.col("id") / 4).alias("x"),
            F.lit(day).alias("date"), F.lit("t").alias("route"))

    def write(path: str, day: date) -> float:
        rows = day_rows(day).persist()
        rows.count()  # the rows themselves are not what is timed
        target = {"t": delta_write.Target(path, ["key", "n", "x", "date"], ["date"], [("date", "=", day.isoformat())])}
        started = time.perf_counter()
        delta_write.replace_partitions_routed(rows, "route", target)
        seconds = time.perf_counter() - started
        rows.unpersist()
        return seconds

    with tempfile.TemporaryDirectory() as scratch:
        replaced, appended = f"{scratch}/replaced", f"{scratch}/appended"
        for path in (replaced, appended):
            for i in range(args.days):
                write(path, FIRST + timedelta(days=i))
        times: dict[str, list[float]] = {"replace": [], "first write": []}
        for i in range(args.rounds):
            times["replace"].append(write(replaced, FIRST + timedelta(days=i % args.days)))
            times["first write"].append(write(appended, FIRST + timedelta(days=args.days + i)))
    spark.stop()
    medians = {kind: statistics.median(runs) for kind, runs in times.items()}
    for kind, runs in times.items():
        print(f"{kind:12} median {medians[kind]:.3f} s  ({', '.join(f'{s:.2f}' for s in runs)})")
    print(f"first write / replace: {medians['first write'] / medians['replace']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
