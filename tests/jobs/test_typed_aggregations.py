"""Each aggregation's Spark side against its Python side, for every field type it applies to.

Random values of one field (nulls, negatives, repeats) are grouped into frames with
``spark_accumulate``, the frames merged with ``spark_merge`` both ways the jobs merge them (a
``groupBy``, and a running window frame as the two stacks do), deducted where invertible, and
finished; the Python side folds the same values with ``accumulate``/``combine``/``finish``.
Every kind that applies to the type runs in the same Spark queries. Doubles are drawn on a grid
of quarters, whose sums no order of addition rounds, so every value compares exactly but a
double's variance (Chan's merges in doubles against exact fractions); the drift of real doubles
is measured in ``test_typed_fields``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from windowing_core.aggregations import AGGREGATIONS, ApproxDistinct, Variance, aggregation

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


def applicable(value_type: str) -> list:
    aggregations = []
    for kind in sorted(AGGREGATIONS):
        try:
            aggregations.append(aggregation(kind, kind, "v", value_type))
        except ValueError:
            continue
    return aggregations


def same(agg, got, want) -> bool:
    if isinstance(agg, ApproxDistinct):
        return abs(got - want) <= max(1, 3 * agg.relative_error * want)
    if isinstance(agg, Variance) and agg.family == "double" and want is not None and got is not None:
        return got == pytest.approx(want, rel=1e-12, abs=1e-12)
    return got == want


@pytest.mark.parametrize("value_type", TYPES)
def test_spark_partials_finish_as_the_python_fold(generated_code, value_type):
    spark = generated_code  # as the jobs run (tests/conftest.py)
    aggregations = applicable(value_type)
    rng = random.Random(value_type)
    rows = [(f, T0 + timedelta(seconds=rng.randrange(4) + 10 * f), draw(value_type, rng))
            for f in range(6) for _ in range(rng.randrange(0, 5))]
    rows.append((6, T0 + timedelta(seconds=70), None))  # a frame of nulls only
    events = spark.createDataFrame(rows, f"frame int, at timestamp, v {value_type}")
    partials = [c.alias(n) for a in aggregations
                for c, n in zip(a.spark_accumulate(F.col("v"), F.col("at")), a.field_columns(), strict=True)]
    frames = events.groupBy("frame").agg(*partials).persist()

    def merges(over=None):
        return [c.alias(n) for a in aggregations
                for c, n in zip(a.spark_merge([F.col(c) for c in a.field_columns()], over), a.field_columns())]

    def finished(df, of=aggregations):
        return df.select("*", *[a.spark_finish([F.col(c) for c in a.field_columns()]).cast(a.output_type)
                                .alias(f"out_{a.name}") for a in of])

    def python(agg, frame_filter):
        partial = agg.empty()
        for frame, at, value in rows:
            if frame_filter(frame):
                partial = agg.accumulate(partial, value, at)
        return agg.finish(partial)

    try:
        merged = finished(frames.agg(*merges())).first()
        for a in aggregations:  # every frame merged in a groupBy
            assert same(a, merged[f"out_{a.name}"], python(a, lambda f: True)), a

        running = Window.orderBy("frame").rowsBetween(Window.unboundedPreceding, 0)
        for r in finished(frames.select("frame", *merges(running))).collect():  # as the two stacks merge
            for a in aggregations:
                want = python(a, lambda f, upto=r["frame"]: f <= upto)
                assert same(a, r[f"out_{a.name}"], want), (a, r["frame"])

        invertible = [a for a in aggregations if a.invertible]
        everything = frames.agg(*merges())
        gone = rows[0][0]  # a frame holding events
        first = frames.where(F.col("frame") == gone).select(*[F.col(c).alias(f"z_{c}") for a in invertible
                                                              for c in a.field_columns()])
        deducted = finished(everything.crossJoin(first).select(
            *[d.alias(c) for a in invertible for d, c in zip(
                a.spark_deduct([F.col(c) for c in a.field_columns()], [F.col(f"z_{c}") for c in a.field_columns()]),
                a.field_columns())]), invertible).first() if invertible else None
        for a in invertible:  # every frame less one is the fold of the others
            assert same(a, deducted[f"out_{a.name}"], python(a, lambda f: f != gone)), a
    finally:
        frames.unpersist()


@pytest.mark.parametrize("kind, value_type, problem", [
    ("sum", "string", "aggregations.x: sum needs a numeric field, v is string"),
    ("mean", "boolean", "aggregations.x: mean needs a numeric field, v is boolean"),
    ("stddev_pop", "string", "aggregations.x: stddev_pop needs a numeric field, v is string"),
])
def test_a_kind_refuses_a_type_it_does_not_apply_to(kind, value_type, problem):
    with pytest.raises(ValueError) as refused:
        aggregation(kind, "x", "v", value_type)
    assert str(refused.value) == problem


def test_every_kind_applies_where_it_makes_sense():
    """Arithmetic needs numbers; a histogram counts discrete values (longs and strings, as the
    issue asks: a double's or decimal's values rarely repeat); ordering, lists and sets apply to
    every type."""
    arithmetic = {"sum", "mean", "var_pop", "var_samp", "stddev_pop", "stddev_samp", "skew", "kurtosis",
                  "approx_percentile"}
    numeric = ("bigint", "decimal(12,2)", "double")
    assert {t: [a.kind for a in applicable(t)] for t in TYPES} == {
        t: sorted(k for k in AGGREGATIONS
                  if (t in numeric or k not in arithmetic) and (k != "histogram" or t in ("bigint", "string")))
        for t in TYPES}
