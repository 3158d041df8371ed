"""Why a record is quarantined: the reasons, in the order they are checked (the first failing
one is a record's reason), and the column that names it."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.ingest.arrival_parts import arrival_day_end
from jobs.ingest.parse import ONLY_BLANKS
from windowing_core import field_types
from windowing_core.config import PipelineConfig

REASONS = (
    "truncated_gzip",          # a .gz file that ends before its end-of-stream marker (whole file)
    "hidden_file",             # a file named _* or .* (or in such a folder), which Spark never reads (whole file)
    "unreadable_file",         # a compressed file that is corrupt or cut, a ':' in its name, a dangling link, a FIFO, a loop (whole file: jobs.ingest.landing_files)
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


def _reason(config: PipelineConfig) -> Column:
    day_end = arrival_day_end()
    checks = [
        (~F.col("is_object"), "malformed_json"),
        (F.col("key_kind").isNull() | (F.col("key_kind") == "VOID")
         | ((F.col("key_kind") == "STRING") & F.col("key").rlike(ONLY_BLANKS)), "missing_key"),
        (F.col("key_kind") != "STRING", "key_not_string"),
        (F.col("timestamp_text").isNull(), "missing_timestamp"),
        (F.col("event_time").isNull(), "unparseable_timestamp"),
        ((F.col("event_time") < F.lit("1970-01-01").cast("timestamp"))
         | (F.col("event_time") >= day_end), "timestamp_out_of_range"),
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
        "raw", "source_file", "line", "arrival_date", "arrival_part", "reason",
        F.when(F.col("key_kind") == "STRING", F.col("key")).alias("key"),
        "event_time",
        *[F.col(f"_typed_{i}").alias(column) for i, column in enumerate(n for n, _ in config.source_fields)],
        F.coalesce("given_event_id", F.substring(F.sha2(F.trim("raw"), 256), 1, 32)).alias("event_id"),
        F.coalesce("given_arrival_time", "file_time").alias("arrival_time"),
    )
