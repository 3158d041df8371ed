"""Ingest: newline-delimited JSON landing files (or a table's rows, ``jobs.sources.table_source``) into
``events``, ``quarantine`` and ``late_events``.

Reads ``<landing>/<arrival date YYYY-MM-DD>/`` (plain or compressed files) for the arrival days
asked for, with everything under them (subfolders, linked folders). An input record is a
non-blank line of a readable file, or a whole file that cannot be read (a truncated or corrupt
compressed file: its lines cannot be trusted, so none of them are read and the file is one
quarantined record with a null ``raw``; re-send it to have its events counted), or a whole
hidden file (``jobs.sources.landing_files``). Every
input record ends in exactly one place, so the counts reconcile:

    input records = accepted + quarantined + duplicates + late

- quarantined: the first failing check's reason (see ``REASONS``), with the raw line;
- duplicates: further copies of an ``event_id`` within one arrival day (the first by
  ``(source_file, raw)`` is kept, as ``windowing_core.reference`` defines);
- late: events that arrived more than the allowed lateness after their event day.

    python -m jobs.ingest_events --landing DIR --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from jobs.runtime import pipes
from jobs.sources import landing_files, table_source
from jobs.storage import commits, delta_io, delta_write
from jobs.tables import (
    EVENTS, LATE_EVENTS, QUARANTINE, TABLE_COLUMN, Table, day_filter, days, declared_columns,
    event_columns, written_together,
)
from windowing_core import field_types
from windowing_core.config import PipelineConfig

REASONS = (
    "truncated_gzip",          # a .gz file that ends before its end-of-stream marker (whole file)
    "hidden_file",             # a file named _* or .* (or in such a folder), which Spark never reads (whole file)
    "unreadable_file",         # a compressed file that is corrupt or cut, a ':' in its name, a dangling link, a FIFO, a loop (whole file: jobs.sources.landing_files)
    "bad_encoding",            # a line that is not UTF-8 (a Latin-1 byte, UTF-16's zero bytes)
    "malformed_json",          # not one JSON object (two objects on a line, trailing text: malformed)
    "missing_key",             # key field (any of a composite key's) absent, null, empty or only blanks (a tab ...)
    "key_not_string",          # a key given as a number, boolean, object or array: keys are strings as given
    "missing_timestamp",       # timestamp absent or null
    "unparseable_timestamp",   # not an ISO-8601 instant
    "timestamp_out_of_range",  # before 1970, or after the end of its arrival day
    "value_not_numeric",       # the default value field's reasons; a declared field's are
    "value_not_integer",       # <field>_<problem> (``measured_field``), value_not_integer among them:
    "value_out_of_range",      # values are integers, never rounded; beyond 64 bits (2^53 as a double)
)
LATE_REASON = "beyond_allowed_lateness"
FIELD_PROBLEMS = {
    field_types.INTEGER: ("not_numeric", "not_integer", "out_of_range"),
    field_types.DECIMAL: ("not_numeric", "beyond_scale", "out_of_range"),
    field_types.DOUBLE: ("not_numeric", "out_of_range"),
    field_types.STRING: ("not_string",),
    field_types.BOOLEAN: ("not_boolean",),
}
"""What can be wrong with a declared field's value, by its type (``measured_field``)."""


def quarantine_reasons(config: PipelineConfig) -> list[str]:
    """Every reason ingest can give under this configuration: the record's own (``REASONS``
    but the default value's) and ``<field>_<problem>`` for each measured field."""
    own = [r for r in REASONS if not r.startswith("value_")]
    return own + [f"{name}_{problem}" for name, ddl in config.source_fields
                  for problem in FIELD_PROBLEMS[field_types.family(ddl)]]


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

    @property
    def reconciles(self) -> bool:
        return self.input_records == self.accepted + self.quarantined + self.duplicates + self.late

    def to_report(self) -> dict:
        """JSON values, as a job launched through Dagster Pipes sends them (``jobs.runtime.pipes``)."""
        return {**{k: v for k, v in vars(self).items() if k != "by_day"},
                "by_day": {d.isoformat(): r.to_report() for d, r in self.by_day.items()}}

    @classmethod
    def from_report(cls, report: dict) -> IngestResult:
        by_day = {date.fromisoformat(d): cls.from_report(r) for d, r in report.get("by_day", {}).items()}
        return cls(**{**report, "by_day": by_day})


def landing_folders(landing: str, first: date, last: date) -> list[str]:
    return [f"{landing.rstrip('/')}/{d.isoformat()}" for d in days(first, last)]


def read_input(spark: SparkSession, landing: str | None, config: PipelineConfig, first: date,
               last: date) -> DataFrame:
    """The input records of arrival days ``first .. last``: the landing folders' lines, or the
    rows of the configuration's table source (``jobs.sources.table_source``), alike. ``landing`` is the
    default landing folder; a configuration's own (``source: {landing: ...}``) wins."""
    if config.source is not None and config.source.is_table:
        return table_source.read_records(spark, config, config.value_field, first, last)
    return read_landing(spark, config.source.landing if config.source is not None else landing, first, last)


def read_landing(spark: SparkSession, landing: str, first: date, last: date) -> DataFrame:
    """Every input record of the arrival days, with its file and arrival day.

    A record is a non-blank line of a readable file (``read_problem`` null), or one row per
    unreadable or hidden file (``read_problem`` its reason, ``raw`` null). Unreadable files are
    left out of the line read rather than skipped with Spark's ``ignoreCorruptFiles``, which
    would drop their records silently and would hide a transient read error of any other file too.

    An arrival day is its folder ``<landing>/YYYY-MM-DD/``, and everything under it belongs to
    that day: files in subfolders, and in folders it links to, are read as its own. Each day's
    folder is read on its own and tagged with its day, so no file's day depends on how its path
    is spelled (a subfolder's file has no date in its parent's name; a subfolder named after
    another day is still inside this one).
    """
    read = landing_files.read_folders(spark, landing_folders(landing, first, last))
    return reduce(DataFrame.unionByName, [_day_lines(spark, lines, unreadable, day)
                                          for day, (lines, unreadable) in zip(days(first, last), read)])


def _day_lines(spark: SparkSession, lines: DataFrame | None, unreadable: DataFrame, day: date) -> DataFrame:
    if lines is None:  # every file unreadable
        lines = spark.createDataFrame([], _UNREADABLE)
    else:
        lines = lines.select(
            F.col("value").alias("raw"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("file_time"),
        ).where(F.trim("raw") != "").transform(with_encoding_checked)
    return lines.unionByName(unreadable).withColumn("arrival_date", F.lit(day))


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


def with_file_positions(lines: DataFrame) -> DataFrame:
    """Put each record's place in what Spark read in ``line``, for ``with_line_numbers``: the task
    that read it and its row in that task (``monotonically_increasing_id``, evaluated once: the
    rows must be persisted before the numbering reads them twice)."""
    return lines.withColumn("line", F.struct(F.spark_partition_id().alias("task"),
                                             F.monotonically_increasing_id().alias("row")))


def with_line_numbers(lines: DataFrame) -> DataFrame:
    """Number each file's lines from 1 (``line`` holds ``with_file_positions``' place): the last
    part of the arrival order watermarks follow.

    Spark reads a file's splits in order into tasks of rising index, one split of a file per
    task, and the rows of a split follow each other in its task, so a line's number is the
    file's rows in earlier tasks plus its row's distance from the split's first. Those offsets
    come from a small aggregate per file and task, joined back by broadcast: no shuffle of the
    lines. A row number over a Window by file shuffled and sorted every line with its raw text.
    """
    split = lines.groupBy(F.col("source_file").alias("split_file"), F.col("line.task").alias("split_task")).agg(
        F.count(F.lit(1)).alias("split_rows"), F.min("line.row").alias("split_first_row"))
    earlier = Window.partitionBy("split_file").orderBy("split_task").rowsBetween(Window.unboundedPreceding, -1)
    offsets = split.select("split_file", "split_task", "split_first_row",
                           F.coalesce(F.sum("split_rows").over(earlier), F.lit(0)).alias("split_before"))
    number = (F.col("split_before") + F.col("line.row") - F.col("split_first_row") + 1).cast("int")
    joined = lines.join(F.broadcast(offsets), (F.col("source_file") == F.col("split_file"))
                        & (F.col("line.task") == F.col("split_task")))
    return joined.select(*[number.alias("line") if c == "line" else F.col(c) for c in lines.columns])


END_OF_LINE = "\u0000panes\u0000"
"""A sentinel JSON string appended after each line before it is parsed (see ``parsed_line``)."""


def parsed_line(raw: Column) -> Column:
    """The line as a variant ``[line, END_OF_LINE]``, or null where that is not JSON.

    A JSON parser reads one value and stops: Spark's ``from_json`` (and ``parse_json``) read
    ``{...} {...}`` as the first object and ``{...} trailing`` as ``{...}``, silently dropping the
    rest. Wrapped in an array with a sentinel after it, a line holding anything more than one
    value is either not JSON at all or not a two-element array ending in the sentinel, so it is
    ``malformed_json`` (``fields_of``). A variant also keeps each field's JSON type (string,
    integer, exact decimal, double, boolean, object, array), which the checks need: a string
    schema would turn ``42``, ``true`` and ``{"a": 1}`` into text, and ``1e-10`` into ``1.0E-10``.
    """
    return F.try_parse_json(F.concat(F.lit("["), raw, F.lit(f",{json.dumps(END_OF_LINE)}]")))


def with_parsed_fields(lines: DataFrame, config: PipelineConfig) -> DataFrame:
    """Parse each line once into a variant; typed conversion happens in ``with_reason``.

    The parse is a column of its own, cast once into a record of the fields ingest reads
    (``record_of``), which ``fields_of`` checks and types. Read straight off the
    parse, each field became a parse of its own (Spark's optimizer prunes a ``from_json`` to
    the one field read), so every line was parsed once per field read, and ingest took 1.3 to
    1.4 times as long (``bench/ingest.py``, since removed: git log).
    """
    parsed = lines.withColumn("parsed", parsed_line(F.col("raw")))
    records = parsed.select(*lines.columns, record_of(F.col("parsed"), config).alias("record"))
    return records.select(*lines.columns, *fields_of(F.col("record"), config))


def json_field(column: str, config: PipelineConfig) -> str:
    """The top-level JSON field a measured column is read from: ``value_field`` for the one
    ``value`` of a configuration without declared fields, else the field of the same name."""
    return config.value_field if not config.fields else column


def json_fields(config: PipelineConfig) -> list[str]:
    """The names of the top-level JSON fields ingest reads."""
    measured = [json_field(column, config) for column, _ in config.source_fields]
    return list(dict.fromkeys([*config.key_names, "timestamp", "event_id", "arrival_time", *measured]))


def record_of(parsed: Column, config: PipelineConfig) -> Column:
    """The line's fields that ingest reads, each a variant of its own in a struct; null where the
    parse (``parsed_line``) is not one JSON object and the sentinel.

    All fields come out in one cast, and the checks then read small variants. Read one path at a
    time from the parse, each field read looked its name up in the line's object again: 10^6
    lines took 10.5 to 11.6 s to extract that way and 7.7 to 8.2 s this way, against 1.5 to 2.0 s
    to parse (the same rows; docs/lessons.md).
    """
    whole_line = ((F.try_variant_get(parsed, "$[1]", "string") == END_OF_LINE)
                  & F.try_variant_get(parsed, "$[2]", "variant").isNull())
    struct = ", ".join(f"`{name}`: variant" for name in json_fields(config))
    return F.when(whole_line, F.try_variant_get(parsed, "$[0]", f"struct<{struct}>"))


_WHOLE_NUMBER_KINDS = r"^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL\(\d+,0\))$"
_NUMBER_KINDS = r"^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL\(\d+,\d+\)|FLOAT|DOUBLE)$"
EXACT_DOUBLE = 2**53
"""Beyond this a double no longer holds every integer: a value that Spark's JSON parser reads as
a double (one written with an exponent, or with more than 38 digits) is accepted only below it,
where the integer it names is exactly the one read."""


def fields_of(record: Column, config: PipelineConfig) -> list[Column]:
    """The columns ``with_reason`` checks, from a line's record (``record_of``): the record's
    shape, key and times, and per measured field (``measured_field``) its typed value and what
    is wrong with it, if anything.
    """
    key_kind, key = key_of(record, config)
    event_id = F.try_variant_get(record["event_id"], "$", "string")
    timestamp = F.try_variant_get(record["timestamp"], "$", "string")
    measured = []
    for i, (column, ddl) in enumerate(config.source_fields):
        typed, problem = measured_field(record, column, ddl, config)
        measured += [typed.alias(f"_typed_{i}"), problem.alias(f"_problem_{i}")]
    return [
        record.isNotNull().alias("is_object"),
        key_kind.alias("key_kind"),
        key.alias("key"),
        timestamp.alias("timestamp_text"),
        timestamp.try_cast("timestamp").alias("event_time"),
        *measured,
        F.when(F.trim(event_id) != "", event_id).alias("given_event_id"),  # "" is no id
        F.try_variant_get(record["arrival_time"], "$", "string").try_cast("timestamp").alias("given_arrival_time"),
    ]


def key_of(record: Column, config: PipelineConfig) -> tuple[Column, Column]:
    """The record's key and its JSON kind (``STRING`` where it is fine). A composite key
    (``key: [user_id, country]``) is its fields' values as a JSON array of strings, of kind
    ``STRING`` where each is a string and not blank, null where one is missing or blank (the
    record is ``missing_key``), and the first other kind where one is not a string."""
    if not config.key_fields:
        key = record[config.key_field]
        return F.schema_of_variant(key), F.try_variant_get(key, "$", "string")
    kinds = [F.schema_of_variant(record[name]) for name in config.key_fields]
    texts = [F.try_variant_get(record[name], "$", "string") for name in config.key_fields]
    missing = reduce(lambda a, b: a | b, [k.isNull() | (k == "VOID") | ((k == "STRING") & t.rlike(ONLY_BLANKS))
                                          for k, t in zip(kinds, texts)])
    other = F.coalesce(*[F.when(kind != "STRING", kind) for kind in kinds])
    kind = F.when(~missing, F.coalesce(other, F.lit("STRING")))
    return kind, F.when(kind == "STRING", F.to_json(F.array(*texts)))


_DECIMAL_SCALE = r"^DECIMAL\(\d+,(\d+)\)$"


def measured_field(record: Column, column: str, ddl: str, config: PipelineConfig) -> tuple[Column, Column]:
    """One measured field of a record: its value in its declared type, and the quarantine
    reason ``<field>_<problem>`` where it has one (null where it is fine or missing).

    The field is read as its JSON kind (``schema_of_variant``: ``BIGINT``, ``DECIMAL(11,10)``,
    ``DOUBLE`` ...), so nothing is rounded on the way: an integer is told from a fraction
    without rounding either (the variant strips trailing zeros, so ``4.0`` is ``DECIMAL(1,0)``,
    and a double is whole when it has no fractional part), and a JSON number written in digits
    (at most 38) is an exact decimal, converted to ``decimal(P,S)`` only where its scale is at
    most S and its value fits P digits. A number written with an exponent, or with more digits,
    is a double to JSON parsers: a long or decimal field takes it only where it is whole and
    within 2**53, where the double still holds that integer exactly. A number given as a JSON
    string (``"7"``, ``"12.50"``) is read as the number the string holds; a string field takes
    JSON strings only, a boolean field ``true`` and ``false`` only.

    Problems: ``not_numeric``, ``not_integer`` and ``out_of_range`` (a long: beyond 64 bits),
    ``beyond_scale`` and ``out_of_range`` (a decimal: more than S digits after the point, or
    more than P - S before it), ``out_of_range`` (a double: not finite), ``not_string``,
    ``not_boolean``. A missing or null field is null, which aggregations skip; the one
    ``value`` of a configuration without declared fields is 1 where missing, as always, and is
    read from ``value_field``.
    """
    default_value = not config.fields
    given = record[json_field(column, config)]
    given_kind = F.schema_of_variant(given)
    present = given_kind.isNotNull() & (given_kind != "VOID")
    kind_of = field_types.family(ddl)
    problems: list[tuple[Column, str]]
    if kind_of == field_types.STRING:
        typed = F.try_variant_get(given, "$", "string")
        problems = [(given_kind != "STRING", "not_string")]
    elif kind_of == field_types.BOOLEAN:
        typed = F.try_variant_get(given, "$", "boolean")
        problems = [(given_kind != "BOOLEAN", "not_boolean")]
    else:
        value = F.when(given_kind == "STRING",
                       F.try_parse_json(F.trim(F.try_variant_get(given, "$", "string")))).otherwise(given)
        kind = F.coalesce(F.schema_of_variant(value), F.lit(""))
        as_double = F.try_variant_get(value, "$", "double")
        is_double = kind.isin("FLOAT", "DOUBLE")
        numeric = kind.rlike(_NUMBER_KINDS)
        exact_whole = F.abs(as_double) <= F.lit(float(EXACT_DOUBLE))
        infinite = F.abs(as_double) == F.lit(float("inf"))  # 1e400: out of range, not a fraction
        if kind_of == field_types.DOUBLE:
            typed = as_double
            finite = ~F.isnan(as_double) & (F.abs(as_double) < F.lit(float("inf")))
            problems = [(~numeric, "not_numeric"), (~F.coalesce(finite, F.lit(False)), "out_of_range")]
        elif kind_of == field_types.INTEGER:
            number = F.try_variant_get(value, "$", "decimal(38,0)")
            whole = kind.rlike(_WHOLE_NUMBER_KINDS) | (is_double & ((as_double % 1 == 0) | infinite))
            in_range = F.when(is_double, exact_whole).otherwise(number.between(-(2**63), 2**63 - 1))
            # try_cast: a quarantined line's value may lie beyond a long (its reason says so), and a
            # plain cast of it would fail the whole day (CAST_OVERFLOW) instead.
            typed = number.try_cast("bigint")
            problems = [(~numeric, "not_numeric"), (~whole, "not_integer"),
                        (~F.coalesce(in_range, F.lit(False)), "out_of_range")]
        else:  # decimal(P,S)
            _, scale = field_types.precision_and_scale(ddl)
            given_scale = F.coalesce(F.regexp_extract(kind, _DECIMAL_SCALE, 1).try_cast("int"), F.lit(0))
            within_scale = F.when(is_double, (as_double % 1 == 0) | infinite).otherwise(given_scale <= scale)
            typed = F.when(~is_double | exact_whole, F.try_variant_get(value, "$", ddl))
            problems = [(~numeric, "not_numeric"), (~F.coalesce(within_scale, F.lit(False)), "beyond_scale"),
                        (typed.isNull(), "out_of_range")]
    problem = F.lit(None).cast("string")
    for condition, name in reversed(problems):
        problem = F.when(condition, F.lit(f"{column}_{name}")).otherwise(problem)
    typed = F.when(present, typed)
    if default_value:
        typed = F.coalesce(typed, F.lit(1).cast("bigint"))
    return typed.cast(ddl), F.when(present, problem)


# Empty or only blanks, any Unicode white space among them (a tab, a newline, a no-break space):
# Java's \s with UNICODE_CHARACTER_CLASS.
ONLY_BLANKS = r"(?U)^\s*$"


def _reason(config: PipelineConfig) -> Column:
    arrival_day_end = F.date_add("arrival_date", 1).cast("timestamp")
    checks = [
        (~F.col("is_object"), "malformed_json"),
        (F.col("key_kind").isNull() | (F.col("key_kind") == "VOID")
         | ((F.col("key_kind") == "STRING") & F.col("key").rlike(ONLY_BLANKS)), "missing_key"),
        (F.col("key_kind") != "STRING", "key_not_string"),
        (F.col("timestamp_text").isNull(), "missing_timestamp"),
        (F.col("event_time").isNull(), "unparseable_timestamp"),
        ((F.col("event_time") < F.lit("1970-01-01").cast("timestamp"))
         | (F.col("event_time") >= arrival_day_end), "timestamp_out_of_range"),
    ]
    reason = F.coalesce(*[F.col(f"_problem_{i}") for i in range(len(config.source_fields))],
                        F.lit(None).cast("string"))  # the first field with a problem
    for condition, name in reversed(checks):
        reason = F.when(condition, F.lit(name)).otherwise(reason)
    return F.coalesce(F.col("read_problem"), reason)  # a file or line that could not be read


def with_reason(parsed: DataFrame, config: PipelineConfig) -> DataFrame:
    """Add ``reason`` (null for a good record) and the typed event columns.

    The key is kept exactly as given: trimming it would merge ``"  good1  "`` into ``good1``.
    """
    return parsed.withColumn("reason", _reason(config)).select(
        "raw", "source_file", "line", "arrival_date", "reason",
        F.when(F.col("key_kind") == "STRING", F.col("key")).alias("key"),
        "event_time",
        *[F.col(f"_typed_{i}").alias(column) for i, column in enumerate(n for n, _ in config.source_fields)],
        F.coalesce("given_event_id", F.substring(F.sha2(F.trim("raw"), 256), 1, 32)).alias("event_id"),
        F.coalesce("given_arrival_time", "file_time").alias("arrival_time"),
    )


def deduplicate_per_arrival_day(good: DataFrame, config: PipelineConfig) -> DataFrame:
    """One row per (arrival day, event_id): the first by (source_file, raw), plus its copy count."""
    first = F.min(F.struct("source_file", "raw", "line", "key", "event_time", *(n for n, _ in config.source_fields),
                           "arrival_time"))
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
    positioned = (
        read_input(spark, landing, config, first, last)
        .transform(with_file_positions)
        .transform(with_parsed_fields, config)
        .transform(with_reason, config)
        .persist()  # read again: for the line numbers, the deduplication, the quarantine, the run's counts
    )
    classified = with_line_numbers(positioned)
    try:
        deduplicated = Observation()  # a name of its own: runs may share a session
        # one sum per arrival day, observed on the way as the total was: duplicates are stored nowhere
        unique = deduplicate_per_arrival_day(classified.where(F.col("reason").isNull()), config).observe(
            deduplicated, *[F.coalesce(F.sum(F.when(F.col("arrival_date") == F.lit(d), F.col("copies") - 1)),
                                       F.lit(0)).alias(d.isoformat()) for d in days(first, last)])
        event_date = F.to_date("event_time")
        is_late = F.col("arrival_date") > F.date_add(event_date, config.allowed_lateness_days)
        kept = unique.select(
            *event_columns(config), F.when(is_late, F.lit(LATE_REASON)).alias("reason"),
            event_date.alias("event_date"), "arrival_date",
            F.when(is_late, F.lit(LATE_EVENTS.name)).otherwise(F.lit(EVENTS.name)).alias(TABLE_COLUMN),
        )
        columns = {t.name: [c for c, _ in declared_columns(t.name, config)] for t in (EVENTS, QUARANTINE, LATE_EVENTS)}
        quarantined = classified.where(F.col("reason").isNotNull()).select(
            *columns[QUARANTINE.name], F.lit(QUARANTINE.name).alias(TABLE_COLUMN))

        arrival_days = day_filter("arrival_date", first, last)
        targets = {
            table.name: delta_write.Target(table.path(lakehouse), columns[table.name], list(table.partition_by), filters)
            for table, filters in [
                (EVENTS, arrival_days),
                (QUARANTINE, arrival_days),
                (LATE_EVENTS, [*arrival_days, ("reason", "=", LATE_REASON)]),
            ]
        }
        rows = kept.unionByName(quarantined, allowMissingColumns=True)
        commits.require_whole_writes([t.path(lakehouse) for t in written_together(EVENTS, config)], first, last)
        written = delta_write.replace_partitions_routed(rows, TABLE_COLUMN, targets, days=(first, last))
        return _result(positioned, lakehouse, {name: w["rows_written"] for name, w in written.items()},
                       {d: deduplicated.get[d.isoformat()] for d in days(first, last)})
    finally:
        positioned.unpersist()


def _result(classified: DataFrame, lakehouse: str, written: dict[str, int],
            duplicates: dict[date, int]) -> IngestResult:
    """The input records, from the persisted lines, against the rows written and the duplicates,
    for the range and for each arrival day. A day's rows written are its partition's rows after
    the replace, counted from the Delta log (no data read); they add up to the write's counts."""
    lines = {r["arrival_date"]: r for r in classified.groupBy("arrival_date").agg(
        F.count(F.lit(1)).alias("input_records"),
        F.count_distinct("source_file").alias("files"),  # a file lies in its arrival day's folder
    ).collect()}
    reasons: dict[date, dict[str, int]] = {}
    for r in (classified.where(F.col("reason").isNotNull()).groupBy("arrival_date", "reason")
              .agg(F.count(F.lit(1)).alias("n")).collect()):
        reasons.setdefault(r["arrival_date"], {})[r["reason"]] = r["n"]

    def rows(table: Table, day: date, *more: tuple[str, str, object]) -> int:
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
    )


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import run_job

    def job(spark, config, args, first, last):
        result = ingest(spark, args.landing, args.lakehouse, first, last, config)
        pipes.report("ingest_events", result.to_report())
        return (f"ingested {result.input_records} records from {result.files} files: "
                f"{result.accepted} accepted, {result.quarantined} quarantined, "
                f"{result.duplicates} duplicates, {result.late} late")

    return run_job(__doc__, job, argv, landing=True)


if __name__ == "__main__":
    raise SystemExit(main())
