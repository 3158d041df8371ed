"""A table of events (``source:``) as the ingest's input records: one JSON record per row.

Each row of an arrival day becomes the line a landing file would hold for it, and from there
on it is ingested as landing lines are: the same parsing of each declared field from its JSON
text, the same quarantine reasons, the same deduplication and reconciliation, one definition
of each. The round trip through JSON text costs a little at ingest and buys that a decimal
column is checked against its declared scale, a double column against a long field, and a null
key quarantined, exactly as a JSON record would be (whole-number keys and ids are taken as text).

A row's arrival day is the date of its ``arrival`` column, or without one of its event time;
a row without either belongs to no day and is not read: give ``arrival`` to have rows without
an event time quarantined (``missing_timestamp``) rather than left out. Below a day
(``partition: 1h``) its arrival part is the partition its arrival time falls in, so a run of
an hour reads the rows that arrived in it, as it reads an hour folder of landing files.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, IntegralType, TimestampNTZType, TimestampType

from jobs import named_tables
from jobs.errors import MissingInputError, MissingTableError, SourceError
from jobs.ingest.arrival_parts import arrival_day_end
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS

TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"
"""Microseconds and the offset: the instant exactly, as ingest reads ``timestamp``."""
_TIMES = (TimestampType, TimestampNTZType, DateType)


def read_records(spark: SparkSession, config: PipelineConfig, value_column: str, first: date,
                 last: date) -> DataFrame:
    """The rows of arrival days ``first .. last`` as input records: ``raw`` (the row as a JSON
    record), ``source_file`` (the table), ``file_time`` (its arrival), ``read_problem`` (null)
    and ``arrival_date``. ``value_column`` is the one value's column of a configuration without
    declared fields (it may be absent: the value is then 1, as for a record without it)."""
    source = config.source
    try:
        rows = named_tables.read(spark, source.path, source.table, source.format)
    except MissingTableError:
        raise MissingInputError(f"source: no table at {source.location}") from None
    types = {f.name.lower(): (f.name, f.dataType) for f in rows.schema.fields}
    declared = [name for name, _ in config.source_fields] if config.fields else []
    required = [*config.key_names, *source.columns(), *declared]
    missing = [c for c in required if c.lower() not in types]
    if missing:
        raise SourceError(f"source: {source.location} has no column {', '.join(missing)} "
                          f"(its columns: {', '.join(rows.columns)})")
    arrival = source.arrival or source.time
    label = "arrival" if source.arrival else "time"
    if not isinstance(types[arrival.lower()][1], _TIMES):
        raise SourceError(f"source.{label}: column {arrival!r} of {source.location} is "
                          f"{types[arrival.lower()][1].simpleString()}, not a timestamp or a date"
                          + ("" if source.arrival else " (name an arrival column to read it as text)"))
    measured = declared or ([value_column] if value_column.lower() in types else [])

    def column(name: str, text: bool = False) -> F.Column:
        """As JSON should carry it: times as instants (without a zone: UTC, the sessions' zone),
        a key's or id's whole numbers as text; the rest as Spark writes it."""
        original, kind = types[name.lower()]
        if isinstance(kind, _TIMES):
            return F.col(original).cast("timestamp")
        return F.col(original).cast("string") if text and isinstance(kind, IntegralType) else F.col(original)

    keys = [column(name, text=True).alias(name) for name in config.key_names]
    content = [*keys, column(source.time).alias("timestamp"), *[column(name).alias(name) for name in measured]]
    options = {"timestampFormat": TIMESTAMP_FORMAT}
    # A row without an id (no id column, or a null) gets one made from what it says, not from
    # when it arrived: the same row loaded again on a later day is a duplicate, as a landing
    # line sent again is.
    made = F.substring(F.sha2(F.to_json(F.struct(*content), options), 256), 1, 32)
    event_id = F.coalesce(column(source.id, text=True), made) if source.id else made
    record = F.struct(*content[:len(keys) + 1], event_id.alias("event_id"),
                      *([F.col(source.arrival).cast("timestamp").alias("arrival_time")] if source.arrival else []),
                      *content[len(keys) + 1:])
    original, kind = types[arrival.lower()]
    if isinstance(kind, DateType) and config.partition < DAY_SECONDS:
        raise SourceError(f"source.{label}: column {arrival!r} of {source.location} is a date: below a day "
                          "each row's arrival part is of its arrival time; name a timestamp column")
    arrived = F.col(original).cast("timestamp")
    # A date column is compared as it is, so that a table partitioned by it is read by partition.
    arrival_date = F.col(original) if isinstance(kind, DateType) else F.to_date(arrived)
    return (rows.where(arrival_date.between(F.lit(first), F.lit(last)))
            .select(F.to_json(record, options).alias("raw"),
                    F.lit(source.location).alias("source_file"),
                    arrived.alias("file_time"),
                    F.lit(None).cast("string").alias("read_problem"),
                    arrival_date.alias("arrival_date")))



def arrival_part(config: PipelineConfig) -> Column:
    """Each record's ``arrival_part`` from its arrival (``file_time``): below a day the start of the
    partition it falls in, in whole days the day's end (every row of the day in one part, as a
    landing file outside part folders). The same whether a run reads a part or the whole day, so
    both keep the same copy of a repeated id."""
    if config.partition == DAY_SECONDS:
        return arrival_day_end()
    arrived = F.unix_seconds("file_time")
    return F.timestamp_seconds(arrived - F.pmod(arrived, F.lit(config.partition)))
