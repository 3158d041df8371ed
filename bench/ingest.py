"""Ingest against the least it must do: reading its landing files and parsing each line once.

    .venv/bin/python -m bench.ingest                        # 2 x 10^6 events, ~5 min
    .venv/bin/python -m bench.ingest --events 1e5 --reps 5

The landing set is ``jobs.demo_events``' (half its files gzipped; late, re-sent and malformed
records among them), ``--events`` over 8 event days, made once in ``bench/.work/ingest-N``
(ignored) and kept for the next run. Then, in one Spark session with panes' defaults
(``jobs.spark_session``), one untimed warm-up round and ``--reps`` timed rounds, the methods
interleaved in each, best of each:

- read floor         every file of the arrival days read as text, each line parsed once into the
                     five fields ingest reads (``from_json``), Spark's ``noop`` sink
- ingest             ``jobs.ingest_events.ingest`` over the same arrival days, writing events,
                     quarantine and late_events into a scratch lakehouse
- fields parsed apart  the same, with ``with_parsed_fields`` as it was before it parsed each
                     line once: every field read straight off ``from_json``, which Spark's
                     optimizer split into one parse per field read
- a write per table  the same, with ``ingest`` as it was before its one routed write: the
                     deduplicated events persisted, each table written by a Spark write of its
                     own, and the accepted, late and duplicate counts read from the persisted rows
"""

from __future__ import annotations

import argparse
import shutil
from datetime import date
from pathlib import Path
from typing import Callable
from unittest import mock

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.measure import best_interleaved, print_run
from jobs import delta_io, ingest_events
from jobs.demo_events import generate_demo_events
from jobs.spark_session import get_spark
from jobs.tables import EVENT_COLUMNS, EVENTS, LATE_EVENTS, QUARANTINE, day_filter, declared_columns
from windowing_core.config import PipelineConfig

WORK = Path(__file__).resolve().parent / ".work"
DAYS = 8


def fields_parsed_apart(lines: DataFrame, config: PipelineConfig) -> DataFrame:
    """``ingest_events.with_parsed_fields`` without its parse column: each field read straight
    off the parse."""
    return lines.select("*", *ingest_events.fields_of(ingest_events.parsed_line(F.col("raw")), config))


def ingest_a_write_per_table(spark, landing: str, lakehouse: str, first, last, config: PipelineConfig) -> None:
    """``ingest_events.ingest`` as it was before its one routed write."""
    ie = ingest_events
    classified = (ie.read_landing(spark, landing, first, last).transform(ie.with_line_numbers)
                  .transform(ie.with_parsed_fields, config).transform(ie.with_reason, config).persist())
    try:
        unique = ie.deduplicate_per_arrival_day(classified.where(F.col("reason").isNull()), config).withColumn(
            "event_date", F.to_date("event_time"))
        is_late = F.col("arrival_date") > F.date_add("event_date", config.allowed_lateness_days)
        unique = unique.withColumn("is_late", is_late).persist()
        accepted = unique.where(~F.col("is_late")).select(*EVENT_COLUMNS, "arrival_date")
        late = unique.where(F.col("is_late")).select(
            *EVENT_COLUMNS, F.lit(ie.LATE_REASON).alias("reason"), "event_date", "arrival_date")
        quarantined = classified.where(F.col("reason").isNotNull()).select(*[c for c, _ in declared_columns(QUARANTINE.name, config)])
        days = day_filter("arrival_date", first, last)
        for table, rows, filters in [(EVENTS, accepted, days), (QUARANTINE, quarantined, days),
                                     (LATE_EVENTS, late, [*days, ("reason", "=", ie.LATE_REASON)])]:
            delta_io.replace_partitions(rows, table.path(lakehouse), partition_by=list(table.partition_by),
                                        partition_filters=filters)
        classified.agg(F.count(F.lit(1)), F.count_distinct("source_file")).first()
        classified.where(F.col("reason").isNotNull()).groupBy("reason").count().collect()
        unique.agg(F.sum(F.when(~F.col("is_late"), 1)), F.sum(F.when(F.col("is_late"), 1)),
                   F.sum(F.col("copies") - 1)).first()
        unique.unpersist()
    finally:
        classified.unpersist()


def read_floor(spark, landing: Path, first, last, config: PipelineConfig) -> None:
    folders = ingest_events.landing_folders(str(landing), first, last)
    lines = spark.read.option("recursiveFileLookup", "true").text(folders)
    (lines.select(ingest_events.parsed_line(F.col("value")).alias("parsed"))
     .write.format("noop").mode("overwrite").save())


def _events(text: str) -> int:
    try:
        n = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count of events: {text!r}") from None
    if n < DAYS:
        raise argparse.ArgumentTypeError(f"at least {DAYS} events (one a day), got {text!r}")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=_events, default=2_000_000, help="valid events in the landing set")
    parser.add_argument("--reps", type=int, default=3, help="timed rounds (best of)")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")

    work = WORK / f"ingest-{args.events}"
    landing, lakehouse = work / "landing", work / "lakehouse"
    marker = work / "landing.done"
    if not marker.exists():
        print(f"writing the landing set: {args.events:,} events over {DAYS} days ...", flush=True)
        shutil.rmtree(work, ignore_errors=True)
        summary = generate_demo_events(landing, days=DAYS, events_per_day=args.events // DAYS,
                                       keys=max(1_000, args.events // 10))
        marker.write_text(f"{summary.first_arrival_date} {summary.last_arrival_date} {summary.records_written}\n")
    first_text, last_text, records = marker.read_text().split()
    first, last = (date.fromisoformat(d) for d in (first_text, last_text))

    spark = get_spark()
    config = PipelineConfig()

    def into_scratch(ingest) -> Callable[[], None]:
        def run() -> None:
            shutil.rmtree(lakehouse, ignore_errors=True)
            ingest(spark, str(landing), str(lakehouse), first, last, config)
        return run

    def parsed_apart(*args) -> None:
        with mock.patch.object(ingest_events, "with_parsed_fields", fields_parsed_apart):
            ingest_events.ingest(*args)

    methods = {
        "read floor": lambda: read_floor(spark, landing, first, last, config),
        "ingest": into_scratch(ingest_events.ingest),
        "fields parsed apart": into_scratch(parsed_apart),
        "a write per table": into_scratch(ingest_a_write_per_table),
    }
    print(f"{landing}: {int(records):,} landing records, arrival days {first} .. {last}; "
          f"one warm-up round, best of {args.reps}", flush=True)
    best = best_interleaved(spark, methods, args.reps, report=print_run)

    floor = best["read floor"].seconds
    print(f"\n{'method':22s} {'seconds':>8s} {'vs floor':>9s} {'CPU s':>7s}")
    for name, (seconds, cpu) in best.items():
        print(f"{name:22s} {seconds:8.2f} {seconds / floor:8.2f}x {cpu:7.1f}")
    job = best["ingest"].seconds
    print(f"\nthe job against its fields parsed apart: {best['fields parsed apart'].seconds / job:.2f}x, "
          f"against a write per table: {best['a write per table'].seconds / job:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
