"""Small hand-built tables for the check tests: rows as dicts, missing columns filled in."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

DAY = date(2025, 1, 28)
NEXT = DAY + timedelta(days=1)
BEFORE = DAY - timedelta(days=1)

WINDOW = WindowSpec.of("1h", "1h", "30m")
CONFIG = PipelineConfig(windows=(WINDOW,), aggregations=(aggregation("count"), aggregation("sum")))
"""A 1h window sliding every 30 minutes, with a count and a sum: the window checks' tests."""

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
