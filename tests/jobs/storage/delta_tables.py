"""Small Delta tables for the tests of ``jobs.storage``'s reads and writes: a schema of every type
panes writes, rows of it, and a partition replace of them."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.storage.delta_write import replace_partitions

SCHEMA = T.StructType([
    T.StructField("key", T.StringType()),
    T.StructField("n", T.LongType()),
    T.StructField("i", T.IntegerType()),
    T.StructField("x", T.DoubleType()),
    T.StructField("amount", T.DecimalType(12, 3)),
    T.StructField("flag", T.BooleanType()),
    T.StructField("event_time", T.TimestampType()),
    T.StructField("event_date", T.DateType()),
])
D1, D2, D3 = date(2025, 1, 30), date(2025, 1, 31), date(2025, 2, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def ts(day: date, hour: int, micros: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, 0, 0, micros, tzinfo=timezone.utc)


def row(key: str, day: date, n: int = 1):
    return (key, n, n * 2, n / 4, Decimal(n) / 8, n % 2 == 0, ts(day, n % 24, 123456), day)


def frame(spark, rows):
    return spark.createDataFrame(rows, SCHEMA)


def contents(df) -> list[tuple]:
    """Rows as comparable tuples; timestamps as epoch microseconds, free of any local zone."""
    cols = [F.unix_micros(c).alias(c) if c == "event_time" else F.col(c) for c in df.columns]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def expected(rows) -> list[tuple]:
    out = []
    for r in rows:
        out.append((*r[:6], (r[6] - EPOCH) // timedelta(microseconds=1), r[7]))
    return sorted(out)


def write(df, path, days):
    return replace_partitions(df, str(path), partition_by=["event_date"],
                              partition_filters=[("event_date", "in", list(days))])
