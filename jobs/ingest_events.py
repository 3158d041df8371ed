"""Ingest: newline-delimited JSON landing files (or a table's rows, ``jobs.ingest.table_source``) into
``events``, ``quarantine`` and ``late_events``.

Reads ``<landing>/<arrival date YYYY-MM-DD>/`` (plain or compressed files) for the arrival days
asked for, with everything under them (subfolders, linked folders). An input record is a
non-blank line of a readable file, or a whole file that cannot be read (a truncated or corrupt
compressed file: its lines cannot be trusted, so none of them are read and the file is one
quarantined record with a null ``raw``; re-send it to have its events counted), or a whole
hidden file (``jobs.ingest.landing_files``). Every
input record ends in exactly one place, so the counts reconcile:

    input records = accepted + quarantined + duplicates + late

- quarantined: the first failing check's reason (``jobs.ingest.quarantine.REASONS``), with the raw line;
- duplicates: further copies of an ``event_id`` within one arrival day (the first by
  ``(arrival_part, source_file, raw)`` is kept, as ``windowing_core.reference`` defines);
- late: events that arrived more than the allowed lateness after their event day.

A day may arrive in parts, ``<landing>/<YYYY-MM-DD>/<HH>/`` (``jobs.ingest.arrival_parts``), and
be ingested an hour at a time (``--from/--until``).

    python -m jobs.ingest_events --landing DIR --lakehouse DIR --date YYYY-MM-DD
    python -m jobs.ingest_events --landing DIR --lakehouse DIR --from 2025-01-28T13:00 --until 2025-01-28T14:00
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from jobs.ingest import arrival_parts, landing_files, table_source
from jobs.ingest.arrival_parts import Parts
from jobs.ingest.lateness import beyond_lateness
from jobs.ingest.parse import with_encoding_checked, with_file_positions, with_line_numbers, with_parsed_fields
from jobs.ingest.quarantine import LATE_REASON, with_reason
from jobs.runtime import compilers, pipes
from jobs.storage import commits, delta_io, delta_write
from jobs.tables import (
    EVENTS, LATE_EVENTS, QUARANTINE, TABLE_COLUMN, Table, day_filter, days, declared_columns,
    event_columns, written_together,
)
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import RunInterval, as_utc, midnight, refuse_below_a_day
from windowing_core.window_spec import DAY_SECONDS


COUNTS = ("input_records", "accepted", "quarantined", "duplicates", "late")
"""The counts a run reports, which add up: records = accepted + quarantined + duplicates + late."""
PART_COUNTS = "part_counts"
"""The metadata entry of an ``events`` materialisation below a day: each arrival part's
``COUNTS`` (``"<arrival day> <arrival_part>"``), for the reconciliation of its partitions."""


@dataclass
class IngestResult:
    input_records: int = 0
    accepted: int = 0
    quarantined: int = 0
    duplicates: int = 0
    late: int = 0
    quarantined_by_reason: dict[str, int] = field(default_factory=dict)
    files: int = 0
    by_day: dict[date, IngestResult] = field(default_factory=dict)
    """The same counts for each arrival day of a range (a day's own ``by_day`` is empty): a
    backfill's metadata then shows each day's counts, not the range's."""
    parts: str | None = None
    """A run below a day: the arrival parts it read and replaced (``arrival_parts.Parts``), the
    later parts of the day it redid included."""
    by_part: dict[tuple[date, datetime], IngestResult] = field(default_factory=dict)
    """With ``partition:`` below a day, the same counts for each arrival part the run read, by
    arrival day and ``arrival_part`` (a day's end and the next day's ``00`` folder share a time):
    the asset's partitions below a day reconcile from them."""

    @property
    def reconciles(self) -> bool:
        return self.input_records == self.accepted + self.quarantined + self.duplicates + self.late

    def to_report(self) -> dict:
        """JSON values, as a job launched through Dagster Pipes sends them (``jobs.runtime.pipes``)."""
        return {**{k: v for k, v in vars(self).items() if k not in ("by_day", "by_part")},
                "by_day": {d.isoformat(): r.to_report() for d, r in self.by_day.items()},
                "by_part": {f"{d.isoformat()} {p.isoformat()}": r.to_report() for (d, p), r in self.by_part.items()}}

    @classmethod
    def from_report(cls, report: dict) -> IngestResult:
        by_day = {date.fromisoformat(d): cls.from_report(r) for d, r in report.get("by_day", {}).items()}
        by_part = {(date.fromisoformat(k.split(" ")[0]), datetime.fromisoformat(k.split(" ")[1])): cls.from_report(r)
                   for k, r in report.get("by_part", {}).items()}
        return cls(**{**report, "by_day": by_day, "by_part": by_part})


def landing_folders(landing: str, first: date, last: date) -> list[str]:
    return [f"{landing.rstrip('/')}/{d.isoformat()}" for d in days(first, last)]


def read_input(spark: SparkSession, landing: str | None, config: PipelineConfig, first: date,
               last: date, parts: Parts | None = None) -> DataFrame:
    """The input records of arrival days ``first .. last`` (or of one day's ``parts``): the landing
    folders' lines, or the rows of the configuration's table source (``jobs.ingest.table_source``),
    alike, each with its ``arrival_part``. ``landing`` is the default landing folder; a
    configuration's own (``source: {landing: ...}``) wins."""
    if config.source is not None and config.source.is_table:
        rows = (table_source.read_records(spark, config, config.value_field, first, last)
                .withColumn("arrival_part", table_source.arrival_part(config)))
        return rows if parts is None else rows.where(parts.column())
    return read_landing(spark, config.source.landing if config.source is not None else landing, first, last, parts)


def read_landing(spark: SparkSession, landing: str, first: date, last: date, parts: Parts | None = None) -> DataFrame:
    """Every input record of the arrival days, with its file, arrival day and arrival part.

    A record is a non-blank line of a readable file (``read_problem`` null), or one row per
    unreadable or hidden file (``read_problem`` its reason, ``raw`` null). Unreadable files are
    left out of the line read rather than skipped with Spark's ``ignoreCorruptFiles``, which
    would drop their records silently and would hide a transient read error of any other file too.

    An arrival day is its folder ``<landing>/YYYY-MM-DD/``, and everything under it belongs to
    that day: files in subfolders, and in folders it links to, are read as its own. Each day's
    folder is read on its own and tagged with its day, so no file's day depends on how its path
    is spelled (a subfolder's file has no date in its parent's name; a subfolder named after
    another day is still inside this one). A run of ``parts`` of a day reads their part folders
    (``jobs.ingest.arrival_parts``), and the day's folder only where it closes the day and the
    folder holds files outside them.
    """
    if parts is None:
        read = landing_files.read_folders(spark, landing_folders(landing, first, last))
        return reduce(DataFrame.unionByName, [_day_lines(spark, lines, unreadable, day)
                                              for day, (lines, unreadable) in zip(days(first, last), read)])
    folder = landing_folders(landing, parts.day, parts.day)[0]
    listed = arrival_parts.part_folders(folder, landing_files.client_sees_disk(spark))
    if listed is None:  # not listed from here: the whole day, kept by part
        sources, whole = [folder], F.lit(True)
    else:
        found, other = listed
        sources = [p for p, time in sorted(found.items()) if parts.holds(time)]
        sources += [folder] if other and parts.closes_day else []
        whole = F.col("arrival_part") == F.lit(arrival_parts.day_end(parts.day))  # the day's own files only
    read = landing_files.read_folders(spark, sources) if sources else []
    tagged = [_day_lines(spark, lines, unreadable, parts.day).where(whole if source == folder else F.lit(True))
              for source, (lines, unreadable) in zip(sources, read)]
    records = reduce(DataFrame.unionByName, tagged) if tagged else _day_lines(
        spark, None, spark.createDataFrame([], _UNREADABLE), parts.day)
    return records.where(parts.column())


def _day_lines(spark: SparkSession, lines: DataFrame | None, unreadable: DataFrame, day: date) -> DataFrame:
    if lines is None:  # every file unreadable
        lines = spark.createDataFrame([], _UNREADABLE)
    else:
        lines = lines.select(
            F.col("value").alias("raw"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("file_time"),
        ).where(F.trim("raw") != "").transform(with_encoding_checked)
    return (lines.unionByName(unreadable).withColumn("arrival_date", F.lit(day))
            .withColumn("arrival_part", arrival_parts.part_of(day)))


_UNREADABLE = "raw string, source_file string, file_time timestamp, read_problem string"


def deduplicate_per_arrival_day(good: DataFrame, config: PipelineConfig) -> DataFrame:
    """One row per (arrival day, event_id): the first by (arrival_part, source_file, raw), plus its
    copy count."""
    first = F.min(F.struct("arrival_part", "source_file", "raw", "line", "key", "event_time",
                           *(n for n, _ in config.source_fields), "arrival_time"))
    return (
        good.groupBy("arrival_date", "event_id")
        .agg(first.alias("first"), F.count(F.lit(1)).alias("copies"))
        .select("arrival_date", "event_id", "copies", "first.*")
    )


def ingest(spark: SparkSession, landing: str, lakehouse: str, first: date, last: date,
           config: PipelineConfig, interval: RunInterval | None = None) -> IngestResult:
    """Ingest arrival days ``first .. last``: replace their partitions of events, quarantine and
    late_events, all three from one Spark write (an atomic commit per table).

    ``interval`` (within the one day ``first == last``) runs the arrival parts it holds
    (``jobs.ingest.arrival_parts``) and the later parts of the day already written, and replaces
    their rows only; a copy of an event the day's earlier parts hold is a duplicate.

    The deduplicated events are tagged for events or late_events as they are made, so they are
    computed once; the duplicates they absorbed are counted on the way (an ``Observation``), not
    in a pass of their own.
    """
    refuse_below_a_day(config, "ingest", interval, first, last)
    parts = _parts(spark, lakehouse, interval, config) if interval is not None else None
    positioned = (
        read_input(spark, landing, config, first, last, parts)
        .transform(with_file_positions)
        .transform(with_parsed_fields, config)
        .transform(with_reason, config)
        .persist()  # read again: for the line numbers, the deduplication, the quarantine, the run's counts
    )
    classified = with_line_numbers(positioned)
    try:
        deduplicated = Observation()  # a name of its own: runs may share a session
        unique = deduplicate_per_arrival_day(classified.where(F.col("reason").isNull()), config)
        absorbed = F.col("copies") - 1
        held = _held_before(spark, lakehouse, parts) if parts is not None else None
        if held is not None:  # a copy of an event an earlier part of the day holds is a duplicate
            unique = unique.join(held, "event_id", "left")
            absorbed = absorbed + F.when(F.col("held_before"), 1).otherwise(0)
        event_date = F.to_date("event_time")
        is_late = beyond_lateness(config)
        # one sum per arrival day, observed on the way as the total was: duplicates are stored
        # nowhere; with partitions below a day, also each part's rows kept (``_part_sums``)
        present = _parts_present(positioned) if config.partition < DAY_SECONDS else []
        unique = unique.observe(
            deduplicated, *[F.coalesce(F.sum(F.when(F.col("arrival_date") == F.lit(d), absorbed)),
                                       F.lit(0)).alias(d.isoformat()) for d in days(first, last)],
            *_part_sums(present, is_late, held is not None))
        if held is not None:
            unique = unique.where(F.col("held_before").isNull()).drop("held_before")
        kept = unique.select(
            *event_columns(config), F.when(is_late, F.lit(LATE_REASON)).alias("reason"),
            event_date.alias("event_date"), "arrival_date",
            F.when(is_late, F.lit(LATE_EVENTS.name)).otherwise(F.lit(EVENTS.name)).alias(TABLE_COLUMN),
        )
        columns = {t.name: [c for c, _ in declared_columns(t.name, config)] for t in (EVENTS, QUARANTINE, LATE_EVENTS)}
        quarantined = classified.where(F.col("reason").isNotNull()).select(
            *columns[QUARANTINE.name], F.lit(QUARANTINE.name).alias(TABLE_COLUMN))

        arrival_days = day_filter("arrival_date", first, last)
        later = [("arrival_part", ">=", parts.start)] if parts is not None else []
        targets = {
            table.name: delta_write.Target(table.path(lakehouse), columns[table.name], list(table.partition_by),
                                           filters, row_filters=rows)
            for table, filters, rows in [
                (EVENTS, arrival_days, later),
                (QUARANTINE, arrival_days, later),
                (LATE_EVENTS, [*arrival_days, ("reason", "=", LATE_REASON)], later),
            ]
        }
        rows = kept.unionByName(quarantined, allowMissingColumns=True)
        part = str(interval) if interval is not None else None
        commits.require_whole_writes([t.path(lakehouse) for t in written_together(EVENTS, config)], first, last, part)
        written = delta_write.replace_partitions_routed(rows, TABLE_COLUMN, targets, days=(first, last), interval=part)
        observed = deduplicated.get
        by_part = {part: {name: observed[f"{i} {name}"] for name in PART_SUMS} for i, part in enumerate(present)}
        return _result(positioned, lakehouse, {name: w["rows_written"] for name, w in written.items()},
                       {d: observed[d.isoformat()] for d in days(first, last)}, parts, by_part)
    finally:
        positioned.unpersist()




def _parts(spark: SparkSession, lakehouse: str, interval: RunInterval, config: PipelineConfig) -> Parts:
    """The parts the run of ``interval`` reads and replaces: its own, and every later part of
    its day already written (``Parts``). A table source's day written whole (``partition: 1d``,
    before a switch to parts) holds every row at the day's end: it is redone from midnight."""
    end = arrival_parts.day_end(interval.day)
    through = end if interval.until >= end else interval.until - timedelta(microseconds=1)
    table = config.source is not None and config.source.is_table
    if through == end and not table:
        return Parts(interval.day, interval.start, through)
    written = _last_part_written(spark, lakehouse, interval.day)
    start = midnight(interval.day) if table and written == end else interval.start
    return Parts(interval.day, start, max(through, written or through))


def _last_part_written(spark: SparkSession, lakehouse: str, day: date) -> datetime | None:
    """The latest ``arrival_part`` of ``day`` the tables ingest writes hold, from the Delta log's
    file statistics (no data read: 1.8 s of an hour's 5.8 s as a Spark aggregate, at 4,000 events
    a day), exact for a part's whole minutes; one aggregate where a file has no statistics."""
    tables = [t for t in (EVENTS, QUARANTINE, LATE_EVENTS) if delta_io.table_exists(t.path(lakehouse))]
    files = [f for t in tables for f in delta_io.file_ranges(t.path(lakehouse), ["arrival_part"],
                                                                 partition_filters=arrival_day_partitions(t, day))]
    if all(f is not None for f in files):
        latest = max((f["arrival_part"][1] for f in files), default=None)
        return None if latest is None else as_utc(latest)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)  # epoch microseconds: a collected timestamp would be in local time
    parts = [rows.select(F.unix_micros("arrival_part").alias("at")) for rows in _day_rows(spark, lakehouse, day, *tables)]
    latest = reduce(DataFrame.unionByName, parts).agg(F.max("at")).first()[0]
    return None if latest is None else epoch + latest * timedelta(microseconds=1)


def arrival_day_partitions(table: Table, day: date) -> list[tuple[str, str, object]]:
    """The partitions of ``table`` ingest owns of arrival day ``day``, as partition filters
    (late_events: its own reason's only, the partials job writes the table too)."""
    return [*day_filter("arrival_date", day, day), *([("reason", "=", LATE_REASON)] if table == LATE_EVENTS else [])]


def _day_rows(spark: SparkSession, lakehouse: str, day: date, *tables: Table) -> list[DataFrame]:
    """The rows ingest wrote for arrival day ``day`` into each of ``tables`` that exists."""
    return [delta_io.read_table(spark, t.path(lakehouse), partition_filters=arrival_day_partitions(t, day))
            for t in tables if delta_io.table_exists(t.path(lakehouse))]


def _held_before(spark: SparkSession, lakehouse: str, parts: Parts) -> DataFrame | None:
    """The event ids the day's parts before ``parts`` accepted or kept as late, flagged
    ``held_before`` (None where nothing of the day is written)."""
    held = [rows.where(F.col("arrival_part") < F.lit(parts.start)).select("event_id")
            for rows in _day_rows(spark, lakehouse, parts.day, EVENTS, LATE_EVENTS)]
    return reduce(DataFrame.unionByName, held).withColumn("held_before", F.lit(True)) if held else None


PART_SUMS = ("accepted", "late")
"""What a part's counts observe on the deduplicated rows: its rows kept. Its records and its
quarantine are counted from the lines, and its duplicates are its other lines, the copies
dropped from it (a day's observed duplicates count them at the copy kept instead)."""


def _parts_present(positioned: DataFrame) -> list[tuple[date, datetime]]:
    """Each arrival day's parts the run's lines hold, in order (one small job over the cached lines)."""
    return sorted((r[0], as_utc(r[1])) for r in positioned.select("arrival_date", "arrival_part").distinct().collect())


def _part_sums(present: list[tuple[date, datetime]], is_late: Column, held: bool) -> list[Column]:
    """Per part: its rows kept in events and in late_events (``PART_SUMS``), as observed
    aggregates named ``"<i> <sum>"``."""
    kept = F.col("held_before").isNull() if held else F.lit(True)
    sums = []
    for i, (day, part) in enumerate(present):
        here = (F.col("arrival_date") == F.lit(day)) & (F.col("arrival_part") == F.lit(part))
        for name, value in (("accepted", F.when(kept & ~is_late, 1)), ("late", F.when(kept & is_late, 1))):
            sums.append(F.coalesce(F.sum(F.when(here, value)), F.lit(0)).alias(f"{i} {name}"))
    return sums


def _result(classified: DataFrame, lakehouse: str, written: dict[str, int],
            duplicates: dict[date, int], parts: Parts | None = None,
            by_part: dict[tuple[date, datetime], dict[str, int]] | None = None) -> IngestResult:
    """The input records, from the persisted lines, against the rows written and the duplicates,
    for the range and for each arrival day. A day's rows written are its partition's rows after
    the replace, counted from the Delta log (no data read); they add up to the write's counts. A
    run of ``parts`` counts the rows it wrote: the day's other parts are not its own."""
    # One pass: records and files per (day, reason); a day's files are the union of its sets (a
    # file lies in its arrival day's folder, and may hold records of several reasons).
    lines: dict[date, dict] = {}
    reasons: dict[date, dict[str, int]] = {}
    part_lines: dict[tuple[date, datetime], dict] = {}
    for r in classified.groupBy("arrival_date", "arrival_part", "reason").agg(
            F.count(F.lit(1)).alias("n"), F.collect_set("source_file").alias("files")).collect():
        part = as_utc(r["arrival_part"])
        for counts, at in ((lines, r["arrival_date"]), (part_lines, (r["arrival_date"], part))):
            counted = counts.setdefault(at, {"input_records": 0, "files": set(), "reasons": {}})
            counted["input_records"] += r["n"]
            counted["files"].update(r["files"])
            if r["reason"] is not None:
                counted["reasons"][r["reason"]] = counted["reasons"].get(r["reason"], 0) + r["n"]
    for day, counted in lines.items():
        reasons[day] = counted["reasons"]
        counted["files"] = len(counted["files"])

    def rows(table: Table, day: date, *more: tuple[str, str, object]) -> int:
        if parts is not None:
            return written[table.name]
        return delta_io.row_count(table.path(lakehouse),
                                  partition_filters=[("arrival_date", "=", day.isoformat()), *more])

    by_day = {}
    for day in sorted(duplicates):
        by_reason = reasons.get(day, {})
        by_day[day] = IngestResult(
            input_records=lines[day]["input_records"] if day in lines else 0,
            accepted=rows(EVENTS, day), quarantined=sum(by_reason.values()), duplicates=duplicates[day],
            late=rows(LATE_EVENTS, day, ("reason", "=", LATE_REASON)),
            quarantined_by_reason=dict(sorted(by_reason.items())),
            files=lines[day]["files"] if day in lines else 0)
    total_by_reason: dict[str, int] = {}
    for by_reason in reasons.values():
        for reason, n in by_reason.items():
            total_by_reason[reason] = total_by_reason.get(reason, 0) + n
    return IngestResult(
        input_records=sum(r["input_records"] for r in lines.values()),
        accepted=written[EVENTS.name],
        quarantined=written[QUARANTINE.name],
        duplicates=sum(duplicates.values()),
        late=written[LATE_EVENTS.name],
        quarantined_by_reason=dict(sorted(total_by_reason.items())),
        files=sum(r["files"] for r in lines.values()),
        by_day=by_day,
        parts=None if parts is None else str(parts),
        by_part={part: _part_result(part_lines[part], sums) for part, sums in (by_part or {}).items()},
    )


def _part_result(lines: dict, kept: dict[str, int]) -> IngestResult:
    """A part's counts: its lines', and its rows kept; the rest of its valid lines are copies."""
    quarantined = sum(lines["reasons"].values())
    return IngestResult(
        input_records=lines["input_records"], accepted=kept["accepted"], quarantined=quarantined,
        duplicates=lines["input_records"] - quarantined - kept["accepted"] - kept["late"], late=kept["late"],
        quarantined_by_reason=dict(sorted(lines["reasons"].items())), files=len(lines["files"]))


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import run_job

    def job(spark, config, args, first, last):
        result = ingest(spark, args.landing, args.lakehouse, first, last, config, interval=args.interval)
        pipes.report("ingest_events", result.to_report())
        return (f"ingested {result.input_records} records from {result.files} files: "
                f"{result.accepted} accepted, {result.quarantined} quarantined, "
                f"{result.duplicates} duplicates, {result.late} late"
                + (f" for arrival parts {result.parts}" if result.parts else ""))

    return run_job(__doc__, job, argv, landing=True, below_a_day="ingest", input_size=landing_input)


def landing_input(args: argparse.Namespace, config: PipelineConfig, first: date, last: date) -> dict[str, int]:
    """A run's input as ingest weighs it for the JVM's compilers (``jobs.runtime.compilers``)."""
    return input_size(args.landing, config, first, last)


def input_size(landing: str | None, config: PipelineConfig, first: date, last: date) -> dict[str, int]:
    """The bytes of the landing folders a run of ``first .. last`` reads (``landing``, or the
    configuration's own); a table source is not weighed."""
    if config.source is not None and config.source.is_table:
        return {}
    landing = config.source.landing if config.source is not None else landing
    return compilers.landing_input(landing_folders(landing, first, last)) if landing else {}


if __name__ == "__main__":
    raise SystemExit(main())
