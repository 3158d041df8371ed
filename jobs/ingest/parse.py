"""How a landing line becomes a typed event: its encoding checked, its position in its file, its
JSON parsed once (``from_json`` with the fields' types), its key and measures read exactly or
marked with the problem that will quarantine it."""

from __future__ import annotations

import json
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from windowing_core import field_types
from windowing_core.config import PipelineConfig


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
