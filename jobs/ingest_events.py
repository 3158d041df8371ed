"""Ingest: newline-delimited JSON landing files into ``events``, ``quarantine`` and ``late_events``.

Reads ``<landing>/<arrival date YYYY-MM-DD>/`` (plain or .gz files) for the arrival days asked
for. An input record is a non-blank line of a readable file, or a whole file that cannot be read
(a truncated or corrupt gzip: its lines cannot be trusted, so none of them are read and the file
is one quarantined record with a null ``raw``; re-send it to have its events counted). Every
input record ends in exactly one place, so the counts reconcile:

    input records = accepted + quarantined + duplicates + late

- quarantined: the first failing check's reason (see ``REASONS``), with the raw line;
- duplicates: further copies of an ``event_id`` within one arrival day (the first by
  ``(source_file, raw)`` is kept, as ``windowing_core.reference`` defines);
- late: events that arrived more than the allowed lateness after their event day.

    python -m jobs.ingest_events --landing DIR --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import date

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from jobs import delta_io
from jobs.cli import MissingInputError, run_job
from jobs.tables import (
    EVENT_COLUMNS, EVENTS, LATE_EVENTS, QUARANTINE, TABLE_COLUMN, day_filter, days, declared_columns,
)
from windowing_core.config import PipelineConfig

REASONS = (
    "truncated_gzip",          # a .gz file that ends before its end-of-stream marker (whole file)
    "unreadable_file",         # a .gz file that is not gzip at all, or corrupt (whole file)
    "bad_encoding",            # a line that is not UTF-8 (a Latin-1 byte, UTF-16's zero bytes)
    "malformed_json",          # not a JSON object
    "missing_key",             # key field absent, null or empty
    "missing_timestamp",       # timestamp absent or null
    "unparseable_timestamp",   # not an ISO-8601 instant
    "timestamp_out_of_range",  # before 1970, or after the end of its arrival day
    "value_not_numeric",
    "value_not_integer",       # values are integers (counts, bytes, cents): sums stay exact
    "value_out_of_range",      # beyond a 64-bit integer
)
LATE_REASON = "beyond_allowed_lateness"


@dataclass
class IngestResult:
    input_records: int = 0
    accepted: int = 0
    quarantined: int = 0
    duplicates: int = 0
    late: int = 0
    quarantined_by_reason: dict[str, int] = field(default_factory=dict)
    files: int = 0

    @property
    def reconciles(self) -> bool:
        return self.input_records == self.accepted + self.quarantined + self.duplicates + self.late


def landing_folders(landing: str, first: date, last: date) -> list[str]:
    return [f"{landing.rstrip('/')}/{d.isoformat()}" for d in days(first, last)]


def read_landing(spark: SparkSession, landing: str, first: date, last: date) -> DataFrame:
    """Every input record of the arrival days, with its file and arrival day.

    A record is a non-blank line of a readable file (``read_problem`` null), or one row per
    unreadable file (``read_problem`` its reason, ``raw`` null). Unreadable files are left out
    of the line read rather than skipped with Spark's ``ignoreCorruptFiles``, which would drop
    their records silently and would hide a transient read error of any other file too.
    """
    folders = landing_folders(landing, first, last)
    try:  # Spark's own listing: any file system Spark reads, and under Spark Connect too
        _files(spark, folders).columns
    except AnalysisException as err:
        if err.getCondition() != "PATH_NOT_FOUND":
            raise
        raise MissingInputError(f"no landing folder {err.getMessageParameters().get('path')} "
                                "(expected <landing>/YYYY-MM-DD/)") from None
    problems = gzip_problems(spark, folders).collect()  # one small row per bad file, if any
    bad = {r["path"] for r in problems}
    unreadable = spark.createDataFrame([r[1:] for r in problems], _UNREADABLE)
    if not bad:  # the usual case: read the folders as they are
        lines = spark.read.option("recursiveFileLookup", "true").text(folders)
    else:
        readable = [_glob_escaped(r["path"]) for r in _files(spark, folders).select("path").collect()
                    if r["path"] not in bad]
        lines = spark.read.text(readable) if readable else None
    if lines is None:  # every file unreadable
        lines = spark.createDataFrame([], _UNREADABLE)
    else:
        lines = lines.select(
            F.col("value").alias("raw"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("file_time"),
        ).where(F.trim("raw") != "").transform(with_encoding_checked)
    return (
        lines.unionByName(unreadable)
        .withColumn("arrival_date",
                    F.to_date(F.regexp_extract("source_file", r"/(\d{4}-\d{2}-\d{2})/[^/]*$", 1)))
    )


_UNREADABLE = "raw string, source_file string, file_time timestamp, read_problem string"


def with_encoding_checked(lines: DataFrame) -> DataFrame:
    """Flag lines that are not UTF-8 text (``read_problem`` = ``bad_encoding``) and make them
    storable.

    Spark's text reader keeps a line's bytes as they are: a Latin-1 byte stays an invalid UTF-8
    sequence, and a UTF-16 file splits into lines full of zero bytes. Neither is a JSON record,
    and which 8-bit code page was meant (Latin-1, cp1252, ...) cannot be told from the bytes, so
    such lines are quarantined rather than guessed at; their ``raw`` keeps every valid character
    and U+FFFD for the bytes that were not, because Parquet strings must be valid UTF-8.
    """
    bad = ~F.is_valid_utf8("raw") | F.col("raw").contains("\u0000")
    return lines.select(
        F.make_valid_utf8("raw").alias("raw"), "source_file", "file_time",
        F.when(bad, F.lit("bad_encoding")).alias("read_problem"),
    )


def _files(spark: SparkSession, folders: list[str], glob: str | None = None) -> DataFrame:
    """The files Spark's text reader would read in the folders (the same listing rules).

    ``binaryFile`` reads a file's bytes only when ``content`` is selected: a listing is cheap.
    """
    reader = spark.read.format("binaryFile").option("recursiveFileLookup", "true")
    if glob:
        reader = reader.option("pathGlobFilter", glob)
    return reader.load(folders)


def _glob_escaped(path: str) -> str:
    """A file path Spark will not expand as a glob (``[``, ``*`` ... are legal in file names)."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def gzip_problem(content: bytes | None) -> str | None:
    """Why these bytes are not a complete gzip stream, or None when they are (or are empty).

    Decompresses in chunks and throws the output away, so memory stays small; several
    concatenated members are one stream, as Hadoop's codec reads them.
    """
    if not content:
        return None
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(content)) as stream:
            while stream.read(1 << 20):
                pass
    except EOFError:
        return "truncated_gzip"
    except (OSError, zlib.error):  # gzip.BadGzipFile is an OSError
        return "unreadable_file"
    return None


def gzip_problems(spark: SparkSession, folders: list[str]) -> DataFrame:
    """One record per .gz file that cannot be decompressed to its end: checked in Spark tasks
    (Spark's text reader would fail the whole job on it)."""
    problem = F.udf(lambda content: gzip_problem(content), "string")  # no hints: a plain UDF
    return (
        _files(spark, folders, "*.gz")
        .select("path", F.lit(None).cast("string").alias("raw"),
                F.col("_metadata.file_path").alias("source_file"),  # spelled as the text reader does
                F.col("modificationTime").alias("file_time"), problem("content").alias("read_problem"))
        .where(F.col("read_problem").isNotNull())
    )


def with_line_numbers(lines: DataFrame) -> DataFrame:
    """Number each file's lines from 1: the last part of the arrival order watermarks follow.

    Spark reads a file's splits in order into tasks of rising index, so
    ``monotonically_increasing_id`` rises along a file; the row number turns it into a line
    number that does not depend on how files were packed into tasks.
    """
    in_file = Window.partitionBy("source_file").orderBy(F.monotonically_increasing_id())
    return lines.withColumn("line", F.row_number().over(in_file))


def line_schema(config: PipelineConfig) -> str:
    """The fields ingest reads from a line, all as strings: typed conversion is a check."""
    return (f"`{config.key_field}` string, timestamp string, `{config.value_field}` string, "
            "event_id string, arrival_time string")


def with_parsed_fields(lines: DataFrame, config: PipelineConfig) -> DataFrame:
    """Parse each line once into string fields; typed conversion happens in ``with_reason``.

    The parse is a column of its own, read field by field from there. Read straight off
    ``from_json``, each field became a parse of its own (Spark's optimizer prunes a
    ``from_json`` to the one field read, ``spark.sql.optimizer.enableJsonExpressionOptimization``),
    so every line was parsed once per field read, and ingest took 1.3 to 1.4 times as long
    (``python -m bench.ingest``).
    """
    parsed = lines.withColumn("parsed", F.from_json("raw", line_schema(config)))
    return parsed.select(*lines.columns, *fields_of(F.col("parsed"), config))


def fields_of(parsed: Column, config: PipelineConfig) -> list[Column]:
    """The columns ``with_reason`` checks, from a parsed line (and the raw one)."""
    return [
        F.json_object_keys("raw").isNotNull().alias("is_object"),
        parsed[config.key_field].alias("key"),
        parsed["timestamp"].alias("timestamp_text"),
        parsed["timestamp"].try_cast("timestamp").alias("event_time"),
        parsed[config.value_field].alias("value_text"),
        F.trim(parsed[config.value_field]).try_cast("double").alias("value_double"),
        F.trim(parsed[config.value_field]).try_cast("decimal(38,9)").alias("value_number"),
        parsed["event_id"].alias("given_event_id"),
        parsed["arrival_time"].try_cast("timestamp").alias("given_arrival_time"),
    ]


def _reason(config: PipelineConfig) -> Column:
    arrival_day_end = F.date_add("arrival_date", 1).cast("timestamp")
    checks = [
        (~F.col("is_object"), "malformed_json"),
        (F.col("key").isNull() | (F.trim("key") == ""), "missing_key"),
        (F.col("timestamp_text").isNull(), "missing_timestamp"),
        (F.col("event_time").isNull(), "unparseable_timestamp"),
        ((F.col("event_time") < F.lit("1970-01-01").cast("timestamp"))
         | (F.col("event_time") >= arrival_day_end), "timestamp_out_of_range"),
        (F.col("value_text").isNotNull() & F.col("value_double").isNull(), "value_not_numeric"),
        (F.col("value_text").isNotNull()
         & (F.col("value_number").isNull() | (F.abs("value_number") > F.lit(2**63 - 1))), "value_out_of_range"),
        (F.col("value_number") != F.floor("value_number"), "value_not_integer"),
    ]
    reason = F.lit(None).cast("string")
    for condition, name in reversed(checks):
        reason = F.when(condition, F.lit(name)).otherwise(reason)
    return F.coalesce(F.col("read_problem"), reason)  # a file or line that could not be read


def with_reason(parsed: DataFrame, config: PipelineConfig) -> DataFrame:
    """Add ``reason`` (null for a good record) and the typed event columns."""
    return parsed.withColumn("reason", _reason(config)).select(
        "raw", "source_file", "line", "arrival_date", "reason",
        F.trim("key").alias("key"),
        "event_time",
        F.coalesce(F.col("value_number").cast("bigint"), F.lit(1).cast("bigint")).alias("value"),
        F.coalesce("given_event_id", F.substring(F.sha2(F.trim("raw"), 256), 1, 32)).alias("event_id"),
        F.coalesce("given_arrival_time", "file_time").alias("arrival_time"),
    )


def deduplicate_per_arrival_day(good: DataFrame) -> DataFrame:
    """One row per (arrival day, event_id): the first by (source_file, raw), plus its copy count."""
    first = F.min(F.struct("source_file", "raw", "line", "key", "event_time", "value", "arrival_time"))
    return (
        good.groupBy("arrival_date", "event_id")
        .agg(first.alias("first"), F.count(F.lit(1)).alias("copies"))
        .select("arrival_date", "event_id", "copies", "first.*")
    )


def ingest(spark: SparkSession, landing: str, lakehouse: str, first: date, last: date,
           config: PipelineConfig) -> IngestResult:
    """Ingest arrival days ``first .. last``: replace their partitions of events, quarantine and
    late_events, all three from one Spark write (an atomic commit per table).

    The deduplicated events are tagged for events or late_events as they are made, so they are
    computed once; the duplicates they absorbed are counted on the way (an ``Observation``), not
    in a pass of their own.
    """
    classified = (
        read_landing(spark, landing, first, last)
        .transform(with_line_numbers)
        .transform(with_parsed_fields, config)
        .transform(with_reason, config)
        .persist()  # read again for the run's counts
    )
    try:
        deduplicated = Observation()  # a name of its own: runs may share a session
        unique = deduplicate_per_arrival_day(classified.where(F.col("reason").isNull())).observe(
            deduplicated, F.coalesce(F.sum(F.col("copies") - 1), F.lit(0)).alias("duplicates"))
        event_date = F.to_date("event_time")
        is_late = F.col("arrival_date") > F.date_add(event_date, config.allowed_lateness_days)
        kept = unique.select(
            *EVENT_COLUMNS, F.when(is_late, F.lit(LATE_REASON)).alias("reason"),
            event_date.alias("event_date"), "arrival_date",
            F.when(is_late, F.lit(LATE_EVENTS.name)).otherwise(F.lit(EVENTS.name)).alias(TABLE_COLUMN),
        )
        columns = {t.name: [c for c, _ in declared_columns(t.name, config)] for t in (EVENTS, QUARANTINE, LATE_EVENTS)}
        quarantined = classified.where(F.col("reason").isNotNull()).select(
            *columns[QUARANTINE.name], F.lit(QUARANTINE.name).alias(TABLE_COLUMN))

        arrival_days = day_filter("arrival_date", first, last)
        targets = {
            table.name: delta_io.Target(table.path(lakehouse), columns[table.name], list(table.partition_by), filters)
            for table, filters in [
                (EVENTS, arrival_days),
                (QUARANTINE, arrival_days),
                (LATE_EVENTS, [*arrival_days, ("reason", "=", LATE_REASON)]),
            ]
        }
        rows = kept.unionByName(quarantined, allowMissingColumns=True)
        written = delta_io.replace_partitions_routed(rows, TABLE_COLUMN, targets)
        return _result(classified, {name: w["rows_written"] for name, w in written.items()},
                       deduplicated.get["duplicates"])
    finally:
        classified.unpersist()


def _result(classified: DataFrame, written: dict[str, int], duplicates: int) -> IngestResult:
    """The input records, from the persisted lines, against the rows written and the duplicates."""
    totals = classified.agg(
        F.count(F.lit(1)).alias("input_records"),
        F.count_distinct("source_file").alias("files"),
    ).first()
    by_reason = {r["reason"]: r["n"] for r in
                 classified.where(F.col("reason").isNotNull()).groupBy("reason")
                 .agg(F.count(F.lit(1)).alias("n")).collect()}
    return IngestResult(
        input_records=totals["input_records"],
        accepted=written[EVENTS.name],
        quarantined=written[QUARANTINE.name],
        duplicates=duplicates,
        late=written[LATE_EVENTS.name],
        quarantined_by_reason=dict(sorted(by_reason.items())),
        files=totals["files"],
    )


def main(argv: list[str] | None = None) -> int:
    def job(spark, config, args, first, last):
        result = ingest(spark, args.landing, args.lakehouse, first, last, config)
        return (f"ingested {result.input_records} records from {result.files} files: "
                f"{result.accepted} accepted, {result.quarantined} quarantined, "
                f"{result.duplicates} duplicates, {result.late} late")

    return run_job(__doc__, job, argv, landing=True)

if __name__ == "__main__":
    raise SystemExit(main())
