"""The algebra's Spark expressions against their definitions: the sketches held to their stated
error, the moments to Spark's own ``skewness`` and ``kurtosis``, each kind's Spark partial to
the Python one (the pipeline's property tests compare whole tables with the oracle).

Each aggregation's Spark side against its Python side, for every field type it applies to
(``test_spark_partials_finish_as_the_python_fold``): random values of one field (nulls,
negatives, repeats) are grouped into frames with ``spark_accumulate``, the frames merged with
``spark_merge`` both ways the jobs merge them (a ``groupBy``, and a running window frame as the
two stacks do), deducted where invertible, and finished; the Python side folds the same values
with ``accumulate``/``combine``/``finish``. Every kind that applies to the type runs in the same
Spark queries. Doubles are drawn on a grid of quarters, whose sums no order of addition rounds,
so every value compares exactly but a double's variance (Chan's merges in doubles against exact
fractions); the drift of real doubles is measured in ``tests/jobs/test_typed_fields.py``."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from tests.windowing_core.test_aggregations import TYPES, applicable
from windowing_core.aggregations import KLL_RANK_ERROR, ApproxDistinct, Variance, aggregation
from windowing_core.aggregations.sums import _spark_floor_div

T0 = datetime(2025, 1, 30, tzinfo=timezone.utc)

pytestmark = pytest.mark.usefixtures("generated_code")  # as the jobs run them (tests/conftest.py)


def _merged(spark, agg, rows, frames):
    """Per frame ``spark_accumulate``, then one ``spark_merge`` of all frames, finished."""
    df = spark.createDataFrame(rows, "frame int, at timestamp, value bigint")
    partials = df.groupBy("frame").agg(*[c.alias(n) for c, n in zip(
        agg.spark_accumulate(F.col("value"), F.col("at")), agg.field_columns())])
    columns = [F.col(c) for c in agg.field_columns()]
    merged = partials.agg(*[c.alias(n) for c, n in zip(agg.spark_merge(columns), agg.field_columns())])
    return merged.select(agg.spark_finish([F.col(c) for c in agg.field_columns()]).alias("v")).first()["v"]


def test_percentiles_of_merged_sketches_are_within_the_stated_rank_error(spark):
    rng = random.Random(3)
    values = [int(rng.gauss(0, 1000)) for _ in range(30_000)] + [7] * 3000  # negatives, many duplicates
    rows = [(i % 300, T0, v) for i, v in enumerate(values)]
    percentiles = [0.01, 0.1, 0.25, 0.5, 0.9, 0.99]
    agg = aggregation("approx_percentile", "p", percentiles=percentiles)
    answer = _merged(spark, agg, rows, 300)
    ordered = sorted(values)
    n = len(ordered)
    assert KLL_RANK_ERROR < 0.01
    for p, q in zip(percentiles, answer):
        below, at_or_below = sum(v < q for v in ordered) / n, sum(v <= q for v in ordered) / n
        assert below - KLL_RANK_ERROR <= p <= at_or_below + KLL_RANK_ERROR, (p, q, below, at_or_below)
    assert answer == sorted(answer)


def test_percentiles_of_few_values_are_exact(spark):
    rng = random.Random(5)
    values = [rng.randrange(-5, 20) for _ in range(150)]
    agg = aggregation("approx_percentile", "p", percentiles=[0, 0.1, 0.33, 0.5, 0.95, 1])
    partial = agg.empty()
    for v in values:
        partial = agg.accumulate(partial, v)
    assert _merged(spark, agg, [(i % 7, T0, v) for i, v in enumerate(values)], 7) == agg.finish(partial)


@pytest.mark.parametrize("kind, spark_function", [("skew", F.skewness), ("kurtosis", F.kurtosis)])
def test_moments_are_sparks_skewness_and_kurtosis(spark, kind, spark_function):
    rng = random.Random(11)
    groups = {g: [rng.randrange(-50, 200) for _ in range(rng.randrange(2, 60))] for g in range(20)}
    groups[20] = [5, 5, 5]  # no spread: null, as Spark's
    groups[21] = [9]
    groups[22] = [10**8 + d for d in (0, 1, 2, 30, 30)]  # large values, small spread
    rows = [(g, i, v) for g, vs in groups.items() for i, v in enumerate(vs)] + [(23, 0, None)]
    df = spark.createDataFrame(rows, "g int, i int, value bigint")
    agg = aggregation(kind)
    mine = df.groupBy("g").agg(*[c.alias(n) for c, n in zip(
        agg.spark_accumulate(F.col("value"), F.lit(None)), agg.field_columns())])
    theirs = df.groupBy("g").agg(spark_function(F.col("value").cast("double")).alias("spark"))
    got = {r["g"]: (r["v"], r["spark"]) for r in mine.join(theirs, "g").select(
        "g", agg.spark_finish([F.col(c) for c in agg.field_columns()]).alias("v"), "spark").collect()}
    for g, (v, want) in got.items():
        if want is None:
            assert v is None, g
        else:
            assert v == pytest.approx(want, rel=1e-9, abs=1e-12), g
        if g in groups:  # and bit for bit the oracle's
            partial = agg.empty()
            for x in groups[g]:
                partial = agg.accumulate(partial, x)
            assert v == agg.finish(partial), g


def test_moments_beyond_exact_decimals_are_rounded_from_shifted_sums(spark):
    # 10**7.5 cubed times n overflows no sum, but n**3 * t4 of spread 10**4 leaves 38 digits
    values = [31_622_776 + d for d in range(-9000, 9000, 7)] + [31_622_776 + 9000] * 40
    agg = aggregation("kurtosis")
    partial = agg.empty()
    for v in values:
        partial = agg.accumulate(partial, v)
    got = _merged(spark, agg, [(i % 13, T0, v) for i, v in enumerate(values)], 13)
    assert got == pytest.approx(agg.finish(partial), rel=1e-9)


def test_exact_divmod_of_decimals_is_pythons(spark):
    """The exact moments' and decimal means' divmod (``_spark_floor_div``) is Python's, for
    numerators of either sign up to decimal(38,0)'s limits whose quotient Spark's decimal
    division holds (32 digits), over the variance's 2**64 and a mean's counts (a decimal(20,0)),
    also where Spark's rounded quotient lands on the next integer (``k * d - 1`` over a large
    ``d``); and a null quotient, not a wrong one, where ``numerator - remainder`` leaves
    decimal(38,0)."""
    top = 10**38 - 1
    rng = random.Random(38)
    cases = [(k * d - 1, d) for d in (2**64, 10**7 + 3, 10**19) for k in (1, -1, 12345, -(10**12))]
    cases += [(rng.choice([1, -1]) * rng.randrange(min(10 ** rng.randrange(1, 39), d * 10**32)), d)
              for d in (2**64, 1, 7, 10**6, 10**19 + 7) for _ in range(40)]
    cases += [(top, 2**64), (-top, 2**64), (-top, 10**19 + 7), (0, 2**64), (-1, 1), (-1, 2**64)]
    rows = spark.createDataFrame([(Decimal(n), Decimal(d)) for n, d in cases], "n decimal(38,0), d decimal(38,0)")
    wide = _spark_floor_div(F.col("n"), F.col("d"))
    narrow = _spark_floor_div(F.col("n"), F.col("d").cast("decimal(20,0)"))
    got = rows.select("n", "d", *[c.alias(name) for c, name in zip((*wide, *narrow), ("q", "r", "q20", "r20"))])
    exact = overflowing = 0
    for row in got.collect():
        n, d = int(row["n"]), int(row["d"])
        q, r = divmod(n, d)
        assert (int(row["r"]), int(row["r20"])) == (r, r), (n, d)
        if n - r < -top:  # n - r = q * d: below decimal(38,0)
            assert (row["q"], row["q20"]) == (None, None), (n, d)
            overflowing += 1
        else:
            assert (int(row["q"]), int(row["q20"])) == (q, q), (n, d)
            exact += 1
    assert exact > 200 and overflowing, "the case must hold quotients in range and one beyond"


@pytest.mark.parametrize("kind, params", [("first_k", {"k": 3}), ("last_k", {"k": 4}), ("top_k", {"k": 3}),
                                          ("bottom_k", {"k": 2}), ("unique_count", {}), ("histogram", {})])
def test_collections_merge_as_the_oracle_over_frames_and_window_frames(spark, kind, params):
    rng = random.Random(7)
    rows = [(rng.randrange(6), T0 + timedelta(seconds=rng.randrange(40)), rng.choice([None, -2, 0, 3, 3, 8]))
            for _ in range(120)]
    agg = aggregation(kind, **params)
    partial = agg.empty()
    for _, at, v in rows:
        if v is not None:
            partial = agg.accumulate(partial, v, at)
    assert _merged(spark, agg, rows, 6) == agg.finish(partial)
    # over a running window frame, as the two stacks merge a tile's frames
    df = spark.createDataFrame(rows, "frame int, at timestamp, value bigint")
    partials = df.groupBy("frame").agg(*[c.alias(n) for c, n in zip(
        agg.spark_accumulate(F.col("value"), F.col("at")), agg.field_columns())])
    upto = Window.orderBy("frame").rowsBetween(Window.unboundedPreceding, 0)
    running = partials.select("frame", *agg.spark_merged(upto))
    finished = running.select("frame", agg.spark_finish([F.col(c) for c in agg.field_columns()]).alias("v"))
    assert finished.orderBy(F.col("frame").desc()).first()["v"] == agg.finish(partial)


def _finished_running_merges(spark, config, partials, ends: dict, most_frames: int) -> dict:
    """The two stacks' running merge (``exact_values.running_merge``) of one key's frame
    ``partials`` (by ``pos``) in one tile, queried after frame f for each ``ends[f]``: the
    finished values by end."""
    from jobs.windows.exact_values import running_merge

    queries = spark.createDataFrame(list(ends.items()), "pos int, end long")
    union = (partials.select("*", F.lit(False).alias("is_query"), F.lit(None).cast("long").alias("end"))
             .unionByName(queries.select("pos", "end", F.lit(True).alias("is_query")), allowMissingColumns=True)
             .withColumn("window", F.lit("w")).withColumn("key", F.lit("k")).withColumn("tile", F.lit(0)))
    merged = running_merge(union, config, [F.col("pos").asc(), F.col("is_query").asc()], most_frames)
    return {r["end"]: r for r in merged.select("end", *[a.spark_finish([F.col(c) for c in a.field_columns()]).alias(a.name)
                                                         for a in config.aggregations]).collect()}


def test_running_merges_of_lists_take_them_element_by_element(spark):
    """The two stacks' running merge (``exact_values.running_merge``) explodes list and set
    partials and merges their elements; beside them a scalar partial (max) and a sketch still
    merge each frame once. Frames 0..5 of one tile, a query after frame 2 and after frame 5."""
    from windowing_core.config import PipelineConfig

    config = PipelineConfig(aggregations=(aggregation("top_k", "top", k=2), aggregation("first_k", "early", k=2),
                                          aggregation("unique_count", "distinct"), aggregation("max", "high"),
                                          aggregation("approx_percentile", "p", percentiles=[0.5])))
    rng = random.Random(2)
    frames = {f: [(T0 + timedelta(seconds=rng.randrange(9)), rng.choice([None, 1, 4, 4, 9])) for _ in range(rng.randrange(0, 4))]
              for f in range(6)}
    rows = [(f, at, v) for f, vs in frames.items() for at, v in vs] + [(5, T0, None)]
    df = spark.createDataFrame(rows, "pos int, at timestamp, value bigint")
    partials = df.groupBy("pos").agg(*[c.alias(n) for a in config.aggregations for c, n in zip(
        a.spark_accumulate(F.col("value"), F.col("at")), a.field_columns())])
    got = _finished_running_merges(spark, config, partials, {2: 100, 5: 200}, 6)
    for end, upto in ((100, 2), (200, 5)):
        partial = [a.empty() for a in config.aggregations]
        for f in range(upto + 1):
            for at, v in frames[f]:
                partial = [a.accumulate(p, v, at) for a, p in zip(config.aggregations, partial)]
        assert [got[end][a.name] for a in config.aggregations] == [a.finish(p) for a, p in zip(config.aggregations, partial)]


def test_running_merges_of_moments_of_doubles_take_log_passes(spark):
    """Chan's and Pebay's updates have no window aggregate: the running merge scans the frames
    (``prefix_merged``, pass p merging the row 2**p before) and each query takes the prefix of
    the frames before it. 13 frames (not a power of two), some holding only nulls or nothing,
    values of mixed magnitude; a query before every frame, between frames and after the last."""
    from windowing_core.config import PipelineConfig

    config = PipelineConfig(fields=(("x", "double"),), aggregations=tuple(aggregation(kind, kind, "x", "double")
                                               for kind in ("stddev_samp", "skew", "kurtosis", "max")))
    rng = random.Random(5)
    frames = {f: [rng.choice([None, rng.uniform(-3, 3), rng.uniform(0, 1e6), 0.25]) for _ in range(rng.randrange(0, 5))]
              for f in range(13)}
    rows = [(f, v) for f, vs in frames.items() for v in vs] + [(0, 1.5)]
    frames[0].append(1.5)
    partials = spark.createDataFrame(rows, "pos int, x double").groupBy("pos").agg(*[
        c.alias(n) for a in config.aggregations for c, n in zip(a.spark_accumulate(F.col("x"), F.lit(None)),
                                                                a.field_columns())])
    ends = {-1: 100, 4: 200, 9: 300, 12: 400}  # the query after frame f (its end)
    got = _finished_running_merges(spark, config, partials, ends, 13)
    assert sorted(got) == sorted(ends.values())
    for upto, end in ends.items():
        partial = [a.empty() for a in config.aggregations]
        for f in range(upto + 1):
            for v in frames[f]:
                partial = [a.accumulate(p, v) for a, p in zip(config.aggregations, partial)]
        want = [a.finish(p) for a, p in zip(config.aggregations, partial)]
        for a, w in zip(config.aggregations, want):
            g = got[end][a.name]
            assert (g is None and w is None) or g == pytest.approx(w, rel=1e-9, abs=1e-12), (end, a.name, g, w)


def test_an_ends_head_middle_and_tail_merge_in_order(spark):
    """``exact_values.merged_in_order`` combines Chan's and Pebay's states of a window end's head,
    middle and tail in projections, and the other partials (max) in its ``groupBy``: each end's
    finished values are the Python fold of its parts' values, whichever parts it has (one, two or
    three, some of only nulls); an end with no value holds the empty state the fold starts from."""
    from jobs.windows.exact_values import merged_in_order
    from windowing_core.config import PipelineConfig

    config = PipelineConfig(fields=(("x", "double"),), aggregations=tuple(aggregation(kind, kind, "x", "double")
                                               for kind in ("stddev_samp", "var_pop", "skew", "kurtosis", "max")))
    rng = random.Random(11)
    values = {(end, part): [rng.choice([None, rng.uniform(-3, 3), rng.uniform(0, 1e6), 0.25])
                            for _ in range(rng.randrange(0, 4))]
              for end in range(40) for part in range(3) if rng.random() < 0.8}
    parts = []
    for part in range(3):
        rows = [(end, v) for (end, p), vs in values.items() if p == part for v in [*vs, None]]
        parts.append(spark.createDataFrame(rows, "end long, x double").groupBy("end").agg(*[
            c.alias(n) for a in config.aggregations for c, n in zip(a.spark_accumulate(F.col("x"), F.lit(None)),
                                                                    a.field_columns())]))
    ends = {end for end, _ in values}
    merged = merged_in_order(parts, config, "end")
    got = {r["end"]: r for r in merged.select("end", "stddev_samp__n", *[
        a.spark_finish([F.col(c) for c in a.field_columns()]).alias(a.name) for a in config.aggregations]).collect()}
    assert sorted(got) == sorted(ends)
    for end in ends:
        partial = [a.empty() for a in config.aggregations]
        for part in range(3):
            for v in values.get((end, part), []):
                partial = [a.accumulate(p, v) for a, p in zip(config.aggregations, partial)]
        for a, w in zip(config.aggregations, [a.finish(p) for a, p in zip(config.aggregations, partial)]):
            g = got[end][a.name]
            assert (g is None and w is None) or g == pytest.approx(w, rel=1e-9, abs=1e-12), (end, a.name, g, w)
        if not any(v is not None for part in range(3) for v in values.get((end, part), [])):
            assert got[end]["stddev_samp__n"] == 0, end


@pytest.mark.parametrize("value_type", ["bigint", "double", "decimal(12,2)"])
def test_merges_in_passes_says_which_kinds_have_a_spark_combine(spark, value_type):
    """The jobs ask ``merges_in_passes`` rather than build ``spark_combine`` to see if it is None."""
    from windowing_core.aggregations import AGGREGATIONS

    for kind in AGGREGATIONS:
        try:
            agg = aggregation(kind, kind, "x", value_type)
        except ValueError:  # a kind that takes no such field
            continue
        columns = [F.col(c) for c in agg.field_columns()]
        assert agg.merges_in_passes == (agg.spark_combine(columns, columns) is not None), (kind, value_type)
    assert aggregation("skew", "s", "x", "double").merges_in_passes  # the test must see both answers




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


def same(agg, got, want) -> bool:
    if isinstance(agg, ApproxDistinct):
        return abs(got - want) <= max(1, 3 * agg.relative_error * want)
    if isinstance(agg, Variance) and agg.family == "double" and want is not None and got is not None:
        return got == pytest.approx(want, rel=1e-12, abs=1e-12)
    return got == want


@pytest.mark.parametrize("value_type", TYPES)
def test_spark_partials_finish_as_the_python_fold(spark, value_type):
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
        return [c for a in aggregations for c in a.spark_merged(over)]

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


ROW_FIELDS = {"price": "decimal(12,2)", "quantity": "bigint", "latency": "double", "page": "string", "ok": "boolean",
              "tiny": "decimal(3,3)"}
ROW_EXPRESSIONS = [
    "price * quantity", "price + quantity", "price - 0.5", "quantity * 2", "quantity / 2", "price / quantity",
    "price / 3", "price % 7", "quantity % 3", "1", "1.5", "0.05", "price * 1.5", "latency * price", "-price",
    "abs(price - quantity)", "CASE WHEN ok THEN price ELSE 0 END", "CASE WHEN ok THEN 0.5 ELSE 1 END",
    "coalesce(price, quantity)", "coalesce(price, tiny)", "if(ok, price, tiny * quantity)", "nullif(price, 0)",
    "greatest(price, quantity)", "least(tiny, 1.25)", "cast(page AS double)", "cast(price AS decimal(18,4))",
    "cast(latency AS bigint)", "page", "ok", "quantity > 2", "price * price * price", "tiny * tiny / quantity",
    "1e3", "price * quantity * quantity",
]


def test_row_types_are_the_types_spark_gives(spark):
    """A custom aggregation's partial is typed before Spark runs (``expressions.row_type``): the
    type must be Spark's own, or the cast to it would round (an int is widened to a long)."""
    from windowing_core.expressions import row_type

    frame = spark.createDataFrame([], ", ".join(f"{n} {t}" for n, t in ROW_FIELDS.items()))
    actual = frame.selectExpr(*[f"{sql} AS e{i}" for i, sql in enumerate(ROW_EXPRESSIONS)]).schema
    for sql, field in zip(ROW_EXPRESSIONS, actual.fields):
        spark_type = {"int": "bigint"}.get(field.dataType.simpleString(), field.dataType.simpleString())
        assert row_type(sql, "t", ROW_FIELDS) == spark_type, sql


CUSTOM_FIELDS = (("n", "bigint"), ("amount", "decimal(12,2)"), ("latency", "double"), ("page", "string"))
CUSTOM_VALUES = [
    ("clicks / nullif(views, 0)", {"clicks": "sum(n)", "views": "count(*)"}),
    ("s / w - 1.5 * w + abs(-s)", {"w": "sum(n)", "s": "sum(amount * n)"}),
    ("CASE WHEN hi > 2 THEN hi WHEN lo IS NULL THEN -1 ELSE greatest(lo, hi / 3, 0.25) END",
     {"hi": "max(latency)", "lo": "min(amount)"}),
    ("top = 'b' OR c >= 3 AND NOT (c = 4) OR coalesce(top, 'a') < 'a'", {"top": "max(page)", "c": "count(page)"}),
    ("if(least(t, 0) <> 0, t * t, nullif(c, 2))", {"t": "sum(latency)", "c": "count(latency)"}),
    ("t * 1e10 - c", {"t": "sum(latency)", "c": "count(latency)"}, "long"),  # past a long's range: null
]


@pytest.mark.parametrize("value, partials, type_", [(*case, None)[:3] for case in CUSTOM_VALUES])
def test_custom_values_finish_in_spark_as_in_python(spark, value, partials, type_):
    """A custom aggregation's value is defined twice on one tree (``aggregations.custom``):
    random partials (nulls, zeros, negatives) finish to the same value, bit for bit, both ways."""
    from windowing_core.aggregations import Custom

    agg = Custom("v", partials, value, type_, fields=CUSTOM_FIELDS)
    rng = random.Random(hash(value) % 1000)
    # a count or an exact sum is never null; a min, a max and a double's sum are when empty
    pools = {"bigint": [0, 1, 2, 3, 4, 10**12], "double": [None, 0.0, -0.25, 2.5, 3.75, 1e300],
             "string": [None, "", "a", "b", "ü"], "decimal(38,0)": [Decimal(v) for v in (0, 1, 2, -3, 40)],
             "decimal(38,2)": [Decimal("0.00"), Decimal("1.25"), Decimal("-3.10"), Decimal("1000000.01")],
             "decimal(12,2)": [None, Decimal("0.05"), Decimal("-2.00"), Decimal("3.33")]}
    rows = [tuple(rng.choice(pools[f.spark_type]) for f in agg.fields) for _ in range(300)]
    schema = ", ".join(f"{c} {f.spark_type}" for c, f in zip(agg.field_columns(), agg.fields))
    frame = spark.createDataFrame(rows, schema)
    got = [r["v"] for r in frame.select(agg.spark_finish([F.col(c) for c in agg.field_columns()]).alias("v")).collect()]
    assert got == [agg.finish(r) for r in rows]
    assert len(set(map(repr, got))) > 2, "the values must differ"
