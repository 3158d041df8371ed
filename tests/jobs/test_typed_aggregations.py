"""Each aggregation's Spark side against its Python side, for every field type it applies to.

Random values (nulls, negatives, duplicates) of one field are grouped into frames with
``spark_accumulate``, the frames merged with ``spark_merge`` both ways the jobs merge them (a
``groupBy``, and a running window frame as the two stacks do), deducted where invertible, and
finished; the Python side folds the same values with ``accumulate``/``combine``/``finish``.
Doubles are drawn on a grid of quarters, whose sums no order of addition rounds, so every value
compares exactly (the drift of real doubles is measured in ``test_typed_fields``).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from windowing_core.aggregations import AGGREGATIONS, ApproxDistinct, aggregation

T0 = datetime(2025, 1, 30, tzinfo=timezone.utc)
TYPES = ["bigint", "decimal(12,2)", "double", "string", "boolean"]


def draw(value_type: str, rng: random.Random):
    if rng.random() < 0.2:
        return None
    if value_type == "bigint":
        return rng.choice([rng.randrange(-5, 9), 2**62 + rng.randrange(3), -(2**62)])
    if value_type.startswith("decimal"):
        return Decimal(rng.randrange(-10**5, 10**5)).scaleb(-2)
    if value_type == "double":
        return rng.randrange(-400, 400) / 4
    if value_type == "string":
        return rng.choice(["a", "b", "Zed", "é", ""])
    return rng.random() < 0.5


def cases():
    for kind in sorted(AGGREGATIONS):
        for value_type in TYPES:
            try:
                aggregation(kind, "x", "v", value_type)
            except ValueError:
                continue
            yield kind, value_type


def _same(got, want):
    if isinstance(want, float) and isinstance(got, float):
        return got == pytest.approx(want, rel=1e-12, abs=1e-12)
    return got == want


@pytest.mark.parametrize("kind, value_type", list(cases()))
def test_spark_partials_finish_as_the_python_fold(spark, kind, value_type):
    agg = aggregation(kind, "x", "v", value_type)
    rng = random.Random(f"{kind}{value_type}")
    rows = [(f % 3, T0 + timedelta(seconds=rng.randrange(4) + 10 * f), draw(value_type, rng))
            for f in range(6) for _ in range(rng.randrange(0, 5))]
    rows.append((5, T0 + timedelta(seconds=50), None))  # a frame of nulls only
    events = spark.createDataFrame(rows, f"frame int, at timestamp, v {value_type}")
    columns = agg.field_columns()
    frames = events.groupBy("frame").agg(*[c.alias(n) for c, n in zip(
        agg.spark_accumulate(F.col("v"), F.col("at")), columns, strict=True)])

    def python(frame_filter):
        partial = agg.empty()
        for frame, at, value in rows:
            if frame_filter(frame):
                partial = agg.accumulate(partial, value, at)
        return agg.finish(partial)

    def finish(df):
        return df.select(agg.spark_finish([F.col(c) for c in columns]).cast(agg.output_type).alias("x"))

    merged = frames.agg(*[c.alias(n) for c, n in zip(agg.spark_merge([F.col(c) for c in columns]), columns)])
    got = finish(merged).collect()[0]["x"]
    want = python(lambda f: True)
    if isinstance(agg, ApproxDistinct):
        assert abs(got - want) <= max(1, 3 * agg.relative_error * want)
        return
    assert _same(got, want), (got, want)

    running = Window.orderBy("frame").rowsBetween(Window.unboundedPreceding, 0)
    prefixes = frames.select("frame", *[c.alias(n) for c, n in zip(
        agg.spark_merge([F.col(c) for c in columns], running), columns)])
    by_frame = {r["frame"]: r["x"] for r in prefixes.select("frame", agg.spark_finish(
        [F.col(c) for c in columns]).cast(agg.output_type).alias("x")).collect()}
    for frame, value in by_frame.items():
        assert _same(value, python(lambda f, frame=frame: f <= frame)), (frame, value)

    if agg.invertible:  # all frames less frame 0 is the fold of the others
        rest = merged.crossJoin(frames.where("frame = 0").select(*[F.col(c).alias(f"z_{c}") for c in columns]))
        deducted = rest.select(*[(F.col(c) - F.col(f"z_{c}")).alias(c) for c in columns])
        assert _same(finish(deducted).collect()[0]["x"], python(lambda f: f != 0))


@pytest.mark.parametrize("kind, value_type, problem", [
    ("sum", "string", "aggregations.x: sum needs a numeric field, v is string"),
    ("mean", "boolean", "aggregations.x: mean needs a numeric field, v is boolean"),
    ("stddev_pop", "string", "aggregations.x: stddev_pop needs a numeric field, v is string"),
])
def test_a_kind_refuses_a_type_it_does_not_apply_to(kind, value_type, problem):
    with pytest.raises(ValueError) as refused:
        aggregation(kind, "x", "v", value_type)
    assert str(refused.value) == problem
