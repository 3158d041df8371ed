"""The lakehouse's tables: where each lives, how it is partitioned, and its columns.

Every job names tables through here, so a table's layout is stated once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig


@dataclass(frozen=True)
class Table:
    name: str
    partition_by: tuple[str, ...]

    def path(self, lakehouse: str) -> str:
        return f"{lakehouse.rstrip('/')}/{self.name}"


EVENTS = Table("events", ("arrival_date",))
QUARANTINE = Table("quarantine", ("arrival_date",))
# Two writers share late_events: ingest (reason beyond_allowed_lateness, a slice of arrival
# days) and the minute-partials job (reason behind_watermark, a slice of event days).
# Partitioning by the reason and both dates lets each replace exactly its own slice atomically.
LATE_EVENTS = Table("late_events", ("event_date", "arrival_date", "reason"))
MINUTE_PARTIALS = Table("minute_partials", ("event_date",))
DAILY_PARTIALS = Table("daily_partials", ("event_date",))  # per key and day: the coarser tiles
WINDOW_CHANGES = Table("window_changes", ("date",))
WINDOW_SNAPSHOT = Table("window_snapshot", ("date",))

ALL_TABLES = (EVENTS, QUARANTINE, LATE_EVENTS, MINUTE_PARTIALS, DAILY_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)

EVENT_COLUMNS = ["key", "event_time", "value", "event_id", "arrival_time", "source_file", "line"]
TABLE_COLUMN = "table"  # in a job's one write to several tables: which table a row goes to


def partial_columns(config: PipelineConfig, *, invertible: bool | None = None) -> list[str]:
    """The partial fields of every aggregation (or only the (non-)invertible ones), in order."""
    return [c for a in config.aggregations if invertible in (None, a.invertible) for c in a.field_columns()]


def days(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included."""
    if last < first:
        raise ValueError(f"empty date range: {first} .. {last}")
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def day_filter(column: str, first: date, last: date) -> list[tuple[str, str, object]]:
    """A partition filter selecting ``first .. last`` (both included) of a date column."""
    return [(column, "in", [d.isoformat() for d in days(first, last)])]


def _fields(aggregations: Iterable[Aggregation]) -> list[tuple[str, str]]:
    return [(c, f.spark_type) for a in aggregations for c, f in zip(a.field_columns(), a.fields)]


def _outputs(config: PipelineConfig) -> list[tuple[str, str]]:
    return [(a.name, a.output_type) for a in config.aggregations]


def declared_columns(table: str, config: PipelineConfig) -> list[tuple[str, str]]:
    """The columns the README's Tables section promises, with Spark DDL types, in stored order
    (partition column last): what the jobs write and the schema checks hold the tables to."""
    if table == MINUTE_PARTIALS.name:
        return [("key", "string"), ("frame_start", "timestamp"), ("event_count", "bigint"),
                *_fields(config.aggregations), ("event_date", "date")]
    if table == DAILY_PARTIALS.name:
        return [("key", "string"), ("event_count", "bigint"), *_fields(config.aggregations),
                ("event_date", "date")]
    if table == WINDOW_CHANGES.name:
        return [("key", "string"), ("window", "string"), ("window_start", "timestamp"),
                ("window_end", "timestamp"), ("event_count", "bigint"), *_outputs(config), ("date", "date")]
    if table == WINDOW_SNAPSHOT.name:
        # The carried state: event_count and the partials a running sum can carry (invertible),
        # over [window_start, as_of): which window it is the state of, whatever its name.
        return [("key", "string"), ("window", "string"), ("window_start", "timestamp"), ("as_of", "timestamp"),
                ("event_count", "bigint"),
                *_fields(a for a in config.aggregations if a.invertible), *_outputs(config), ("date", "date")]
    raise ValueError(f"no declared schema for table {table!r}")
