"""``python -m bench hourly``: a day run as hourly parts against the same day run whole.

    python -m bench hourly                          # 10^6 events, 24 parts, ~15 min
    python -m bench hourly --events 10000 --parts 4

Both figures come from one Spark session and one lakehouse: the days before D are set up once
(``bench.pipeline.prepare``), and D's landing lines written again into hour folders (``<D>/<HH>/``
by each line's arrival time; a line without one in a folder of the day's end). D's ingest runs per
part in order, on a day none of them wrote, then whole (best of ``--reps``), and the events,
quarantine and late events of D are compared after both. Then D's partials and windows run per part
in order, each part's windows continuing from the state the part before left (``interval_state``),
on a day none of them wrote before (D's partitions are deleted first, as a scheduled hourly run
meets its day: a part written over a whole day's files would rewrite them every hour); then D's
partials and windows run whole, best of ``--reps``. The tables of D are compared after both, row
for row (a hash of every row), so the ratio is of the same result. The partials and windows runs
evaluate Spark's expressions as a Dagster step would (``compilers.expressions_for``; a part weighs
its share of the day's events). Two floors are printed beside it: ``parts`` times the cheapest part
(the parts' fixed cost), and the commits the parts made (counted in the Delta logs, as appends and
replaces) each times the least a small commit of its kind costs in this session (one row read from
a small Delta table and written back to another day, or over its own: best of 5): the floor of the
work as written, below which no part can go without writing fewer tables.
The target is the hourly day within 2x the whole day at 10^6 events.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.pipeline import DAY, keys_for, prepare

TARGET = 2.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench hourly", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events of the day (default 10^6)")
    parser.add_argument("--keys", type=int, default=None, help="distinct keys (default: as bench.pipeline)")
    parser.add_argument("--parts", type=int, default=24, help="parts of the day, dividing 24 hours (default 24)")
    parser.add_argument("--reps", type=int, default=2, help="whole-day rounds, best of (default 2)")
    parser.add_argument("--work", default="bench/.work", help="scratch folder for the landing files and lakehouses")
    args = parser.parse_args(argv)
    if args.events < 1 or args.reps < 1 or args.parts < 1 or 86400 % args.parts or (86400 // args.parts) % 60:
        parser.error("--events and --reps must be positive, and --parts divide a day into whole minutes")
    return args


def fingerprint(spark, lakehouse: str, tables=None, column: str = "date") -> dict[str, tuple[int, int]]:
    """Each of D's tables (window_changes and window_snapshot unless ``tables``; D by ``column``)
    as (rows, sum of a hash of every row): equal for equal tables."""
    from pyspark.sql import functions as F

    from jobs.storage import delta_io
    from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT

    prints = {}
    for table in tables or (WINDOW_CHANGES, WINDOW_SNAPSHOT):
        rows = delta_io.read_table(spark, table.path(lakehouse)).where(F.col(column) == F.lit(DAY))
        row = rows.select(F.count(F.lit(1)), F.sum(F.xxhash64(*rows.columns).cast("decimal(38,0)"))).first()
        prints[table.name] = (row[0], int(row[1] or 0))
    return prints


def forget_day(spark, lakehouse: str) -> None:
    """D's partitions of every table the partials and windows jobs write, deleted (a partition
    predicate: no file rewritten)."""
    from delta.tables import DeltaTable

    from jobs.storage import delta_io
    from jobs.storage.locations import spark_path
    from jobs.tables import (
        DAILY_PARTIALS, INTERVAL_STATE, LATE_EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT,
    )

    for table, where in ((MINUTE_PARTIALS, f"event_date = '{DAY}'"), (DAILY_PARTIALS, f"event_date = '{DAY}'"),
                         (LATE_EVENTS, f"event_date = '{DAY}' AND reason = 'behind_watermark'"),
                         *((t, f"date = '{DAY}'") for t in (WINDOW_CHANGES, WINDOW_SNAPSHOT, INTERVAL_STATE))):
        if delta_io.table_exists(table.path(lakehouse)):
            DeltaTable.forPath(spark, spark_path(table.path(lakehouse))).delete(where)


def hourly_landing(spark, landing: str, work: Path) -> str:
    """D's landing lines again, each in the ``<D>/<HH>/`` folder of its arrival hour; the lines
    without an arrival time (the malformed ones) in ``<D>/unplaced/``, of the day's end."""
    import shutil

    from pyspark.sql import functions as F

    root = (work / "hourly-landing").resolve()
    folder = root / DAY.isoformat()
    shutil.rmtree(folder, ignore_errors=True)
    lines = spark.read.option("recursiveFileLookup", "true").text(f"{landing}/{DAY}").persist()
    try:
        hour = F.hour(F.get_json_object("value", "$.arrival_time").try_cast("timestamp"))
        for name, where in [*((f"{h:02d}", hour == h) for h in range(24)), ("unplaced", hour.isNull())]:
            lines.where(where).coalesce(2).write.text(str(folder / name))
    finally:
        lines.unpersist()
    for marker in [*folder.rglob("_*"), *folder.rglob(".*")]:  # Spark's _SUCCESS and .crc files
        marker.unlink()
    return str(root)


def forget_arrival_day(spark, lakehouse: str) -> None:
    """D's rows of the tables ingest writes, deleted, as an hourly ingest meets its day."""
    from delta.tables import DeltaTable

    from jobs.ingest_events import arrival_day_partitions
    from jobs.storage import delta_io
    from jobs.storage.filters import conjunction, sql_predicate
    from jobs.storage.locations import spark_path
    from jobs.tables import EVENTS, LATE_EVENTS, QUARANTINE

    for table in (EVENTS, QUARANTINE, LATE_EVENTS):
        if delta_io.table_exists(table.path(lakehouse)):
            where = sql_predicate([conjunction(arrival_day_partitions(table, DAY))])
            DeltaTable.forPath(spark, spark_path(table.path(lakehouse))).delete(where)


def table_versions(lakehouse: str) -> dict[str, int]:
    """Each table of the lakehouse and its newest version, from its Delta log."""
    from jobs.storage import delta_io
    from jobs.tables import ALL_TABLES

    paths = [t.path(lakehouse) for t in ALL_TABLES]
    return {p: delta_io.table_version(p) for p in paths if delta_io.table_exists(p)}


def commits_since(lakehouse: str, before: dict[str, int]) -> Counter:
    """The commits made since ``before`` (``table_versions``), by kind: ``append`` (a write that
    only adds files, as a part's first write of its interval) or ``replace`` (an overwrite of a
    predicate, which makes Delta rebuild the table's state to find the files it removes)."""
    from jobs.storage import delta_io

    kinds = Counter()
    for path in table_versions(lakehouse):
        since = before.get(path, -1)
        for entry in delta_io.open_table(path).history():
            if entry.get("version", -1) > since:
                mode = (entry.get("operationParameters") or {}).get("mode")
                kinds["append" if mode == "Append" else "replace"] += 1
    return kinds


def small_commit_seconds(spark, work: Path, reps: int = 5) -> dict[str, float]:
    """The least a small commit of each kind costs here, best of ``reps``: one row of a day read
    from a Delta table and written back as an append to another day, or as a replace of its day."""
    from pyspark.sql import functions as F

    path = str((work / "small-commit").resolve())
    spark.createDataFrame([(1, DAY)], "n long, date date").write.format("delta").mode("overwrite") \
        .partitionBy("date").save(path)
    times: dict[str, list[float]] = {"append": [], "replace": []}
    for rep in range(reps):
        started = time.perf_counter()
        row = spark.read.format("delta").load(path).where(f"date = '{DAY}'").localCheckpoint()
        row.withColumn("date", F.date_add("date", rep + 1)).write.format("delta").mode("append").save(path)
        times["append"].append(time.perf_counter() - started)
        started = time.perf_counter()
        row = spark.read.format("delta").load(path).where(f"date = '{DAY}'").localCheckpoint()
        row.write.format("delta").mode("overwrite").option("replaceWhere", f"date = '{DAY}'").save(path)
        times["replace"].append(time.perf_counter() - started)
    return {kind: min(seconds) for kind, seconds in times.items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from jobs import ingest_events, minute_partials, sliding_windows
    from jobs.runtime.compilers import events_of_the_days, expressions_for
    from jobs.runtime.spark_session import get_spark
    from jobs.tables import EVENTS, LATE_EVENTS, QUARANTINE
    from windowing_core.config import PipelineConfig
    from windowing_core.run_interval import RunInterval

    keys = args.keys or keys_for(args.events)
    spark = get_spark()
    config = PipelineConfig()
    ds = prepare(spark, Path(args.work) / "hourly", args.events, keys, 7, True, config)
    landing = hourly_landing(spark, ds.landing, Path(args.work) / "hourly")
    print(f"set up {args.events:,} events a day, {keys:,} keys in {ds.setup_s:.1f} s")

    midnight = datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC)
    step = timedelta(days=1) / args.parts
    intervals = [RunInterval(midnight + i * step, midnight + (i + 1) * step) for i in range(args.parts)]
    forget_arrival_day(spark, ds.lakehouse)
    ingest_parts = []
    for interval in intervals:
        started = time.perf_counter()
        ingested = ingest_events.ingest(spark, landing, ds.lakehouse, DAY, DAY, config, interval=interval)
        ingest_parts.append(time.perf_counter() - started)
        print(f"  ingest {interval}: {ingest_parts[-1]:.1f} s ({ingested.input_records:,} records)", flush=True)
    ingest_tables = (EVENTS, QUARANTINE, LATE_EVENTS)
    ingested_parts = fingerprint(spark, ds.lakehouse, ingest_tables, "arrival_date")
    ingest_whole = []
    for _ in range(args.reps):
        started = time.perf_counter()
        ingest_events.ingest(spark, landing, ds.lakehouse, DAY, DAY, config)
        ingest_whole.append(time.perf_counter() - started)
    ingested_whole = fingerprint(spark, ds.lakehouse, ingest_tables, "arrival_date")

    forget_day(spark, ds.lakehouse)
    parts, baselines, before = [], set(), table_versions(ds.lakehouse)
    for i, interval in enumerate(intervals):
        started = time.perf_counter()
        with expressions_for(spark, **events_of_the_days(ds.lakehouse, config, DAY, DAY, interval)):
            minute_partials.run(spark, ds.lakehouse, DAY, DAY, config, interval=interval)
            result = sliding_windows.run(spark, ds.lakehouse, DAY, DAY, config, interval=interval)
        parts.append(time.perf_counter() - started)
        baselines |= {(i > 0, b) for b in result["baseline"].values()}
        print(f"  part {interval}: {parts[-1]:.1f} s ({', '.join(result['baseline'].values())})", flush=True)
    got = fingerprint(spark, ds.lakehouse)
    made = commits_since(ds.lakehouse, before)

    whole = []
    for _ in range(args.reps):
        started = time.perf_counter()
        with expressions_for(spark, **events_of_the_days(ds.lakehouse, config, DAY, DAY)):
            minute_partials.run(spark, ds.lakehouse, DAY, DAY, config)
            sliding_windows.run(spark, ds.lakehouse, DAY, DAY, config)
        whole.append(time.perf_counter() - started)
    expected = fingerprint(spark, ds.lakehouse)
    commit = small_commit_seconds(spark, Path(args.work) / "hourly")
    spark.stop()

    if got != expected:
        print(f"the parts wrote other rows than the whole day: {got} against {expected}")
        return 1
    if ingested_parts != ingested_whole:
        print(f"the ingest parts wrote other rows than the whole day's: {ingested_parts} against {ingested_whole}")
        return 1
    if baselines != {(False, "snapshot"), (True, "carried")}:
        print(f"the parts did not continue one from another: {sorted(baselines)}")
        return 1
    day, hourly = min(whole), sum(parts)
    floor = args.parts * min(parts)
    print(f"\nthe whole day {day:.1f} s (best of {args.reps}); {args.parts} parts {hourly:.1f} s "
          f"(mean {hourly / args.parts:.1f} s, cheapest {min(parts):.1f} s); same rows in window_changes and "
          f"window_snapshot")
    print(f"parts / whole day: {hourly / day:.2f}x (target <= {TARGET:.0f}x); "
          f"{args.parts} x the cheapest part / whole day: {floor / day:.2f}x (the parts' fixed cost)")
    commits_floor = sum(made[kind] * commit[kind] for kind in made)
    print(f"the parts' commits: {made['append']} appends x {commit['append']:.2f} s + {made['replace']} replaces x "
          f"{commit['replace']:.2f} s (small commits here) = {commits_floor:.1f} s, {commits_floor / day:.2f}x the "
          "whole day: the floor of the parts as written")
    ingest_day, ingest_hourly = min(ingest_whole), sum(ingest_parts)
    print(f"ingest: the whole day {ingest_day:.1f} s (best of {args.reps}); {args.parts} parts {ingest_hourly:.1f} s "
          f"(cheapest {min(ingest_parts):.1f} s): {ingest_hourly / ingest_day:.2f}x, "
          f"{args.parts * min(ingest_parts) / ingest_day:.2f}x for {args.parts} x the cheapest; same rows in events, "
          "quarantine and late_events")
    print(f"the day's three jobs: {args.parts} parts / whole day: "
          f"{(ingest_hourly + hourly) / (ingest_day + day):.2f}x (target <= {TARGET:.0f}x)")
    return 0
