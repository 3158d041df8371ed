"""Small hand-built tables for the check tests: rows as dicts, missing columns filled in."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from jobs.tables import EVENTS, LATE_EVENTS, MINUTE_PARTIALS, QUARANTINE, declared_columns
from windowing_core.aggregations import AGGREGATIONS, Custom, aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

DAY = date(2025, 1, 28)
NEXT = DAY + timedelta(days=1)
BEFORE = DAY - timedelta(days=1)

WINDOW = WindowSpec.of("1h", "1h", "30m")
CONFIG = PipelineConfig(windows=(WINDOW,), aggregations=(aggregation("count"), aggregation("sum")))
"""A 1h window sliding every 30 minutes, with a count and a sum: the window checks' tests."""

RICH = all(kind in AGGREGATIONS for kind in ("mean", "min", "max", "var_pop"))

AGGS = [("count", "count"), ("sum", "sum")] + (
    [("mean", "avg"), ("min", "low"), ("max", "high"), ("var_pop", "spread")] if RICH else [])

SUITE_CONFIG = PipelineConfig(
    windows=(WindowSpec.of("1h", "1h", "15m"), WindowSpec.of("6h", "6h", emit="final")),
    aggregations=(*(aggregation(kind, name) for kind, name in AGGS),  # and a user's own, checked as any other
                  Custom("ratio", {"s": "sum(value)", "n": "count(*)"}, "s / nullif(n, 0)")),
)
"""Two windows (one emitting final rows) and every numeric kind, with a user's own: the suites' tests."""

DAYS = [DAY, NEXT]

needs_rich = pytest.mark.skipif(not RICH, reason="mean, min, max and var_pop are not in the algebra yet")


def keys_in(outcome) -> set:
    return {row.get("key") for row in outcome.metadata.get("sample_rows", [])}


TYPED = PipelineConfig.from_dict({
    "fields": {"amount": "decimal(12,2)", "page": "string"},
    "windows": {"1h": {"length": "1h", "slide": "15m"}},
    "aggregations": {"pages": {"kind": "count", "field": "page"}, "revenue": {"kind": "sum", "field": "amount"}},
})
"""Declared fields (a decimal and a string) counted and summed."""

EVENT_COLUMNS = declared_columns(EVENTS.name, PipelineConfig())
QUARANTINE_COLUMNS = declared_columns(QUARANTINE.name, PipelineConfig())
LATE_COLUMNS = declared_columns(LATE_EVENTS.name, PipelineConfig())

_DEFAULTS = {"bigint": 1, "double": 1.0, "string": "x", "decimal(38,0)": 1, "binary": b"", "boolean": True}


def at(day: date, hh: int, mm: int = 0, ss: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hh, mm, ss, tzinfo=timezone.utc)


def table(spark, columns: list[tuple[str, str]], rows: list[dict]):
    """A DataFrame with exactly these typed columns; a row leaves out what does not matter to it."""
    from decimal import Decimal

    def value(name: str, ddl: str, row: dict):
        if name in row:
            v = row[name]
        else:
            v = _DEFAULTS.get(ddl)
        if ddl.startswith("decimal") and v is not None:
            return Decimal(v)
        return v

    schema = ", ".join(f"`{n}` {t}" for n, t in columns)
    return spark.createDataFrame([tuple(value(n, t, r) for n, t in columns) for r in rows], schema)


def partials(spark, rows):
    """``minute_partials`` rows of the default configuration."""
    return table(spark, declared_columns(MINUTE_PARTIALS.name, PipelineConfig()), rows)
