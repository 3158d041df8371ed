import math
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest

from windowing_core.aggregations import AGGREGATIONS, aggregation

T0 = datetime(2025, 1, 30, tzinfo=timezone.utc)
TYPES = ["bigint", "decimal(12,2)", "double", "string", "boolean"]


def applicable(value_type: str) -> list:
    """Every kind, over a field `v` of the type, where the kind applies to it."""
    aggregations = []
    for kind in sorted(AGGREGATIONS):
        try:
            aggregations.append(aggregation(kind, kind, "v", value_type))
        except ValueError:
            continue
    return aggregations


def fold(agg, values, start=0):
    partial = agg.empty()
    for i, v in enumerate(values):
        partial = agg.accumulate(partial, v, T0 + timedelta(seconds=start + i))
    return partial


@pytest.mark.parametrize("kind", sorted(AGGREGATIONS))
def test_combine_is_folding_both_and_deduct_undoes_it(kind):
    agg = aggregation(kind)
    a, b = fold(agg, [3, -1, 7]), fold(agg, [2, 5, 3], start=10)
    assert agg.finish(agg.combine(a, b)) == agg.finish(fold(agg, [3, -1, 7, 2, 5, 3]))
    assert agg.combine(a, agg.empty()) == a
    if agg.invertible:
        assert agg.deduct(agg.combine(a, b), b) == a
    else:
        with pytest.raises(TypeError, match="not invertible"):
            agg.deduct(a, b)


@pytest.mark.parametrize("kind, expected", [
    ("count", 4), ("sum", 10), ("mean", 2.5), ("min", 1), ("max", 4), ("first", 4), ("last", 2),
    ("var_pop", 1.25), ("var_samp", 5 / 3), ("stddev_pop", 1.25 ** 0.5), ("stddev_samp", (5 / 3) ** 0.5),
    ("approx_distinct", 4),
])
def test_finish_over_four_events(kind, expected):
    agg = aggregation(kind)
    assert agg.finish(fold(agg, [4, 1, 3, 2])) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("kind", ["mean", "min", "max", "first", "last", "var_pop", "stddev_pop"])
def test_empty_windows_finish_as_null(kind):
    agg = aggregation(kind)
    assert agg.finish(agg.empty()) is None


def test_sample_variance_needs_two_events():
    assert aggregation("var_samp").finish(fold(aggregation("var_samp"), [5])) is None


def test_variance_of_large_values_has_no_cancellation():
    # values around 10**9 with spread 1: the float formula E[x^2] - E[x]^2 loses every digit
    values = [10**9 + d for d in (0, 1, 2, 3)]
    agg = aggregation("var_pop")
    assert agg.finish(fold(agg, values)) == 1.25
    naive = sum(v * v for v in map(float, values)) / 4 - (sum(map(float, values)) / 4) ** 2
    assert naive != 1.25


def test_first_and_last_break_time_ties_by_value():
    first, last = aggregation("first"), aggregation("last")
    p, q = first.empty(), last.empty()
    for v in (5, 2, 9):
        p, q = first.accumulate(p, v, T0), last.accumulate(q, v, T0)
    assert (first.finish(p), last.finish(q)) == (2, 9)


def test_invertible_flags_choose_the_sliding_method():
    invertible = {k for k in AGGREGATIONS if aggregation(k).invertible}
    assert invertible == {"count", "sum", "mean", "var_pop", "var_samp", "stddev_pop", "stddev_samp",
                          "skew", "kurtosis", "histogram"}


def test_unknown_aggregation_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown aggregation 'median'.*count"):
        aggregation("median")


# -- Chronon's list: the oracle's exact semantics -----------------------------------------------


def finish(kind, values, start=0, **params):
    agg = aggregation(kind, **params)
    return agg.finish(fold(agg, values, start))


def test_skew_and_kurtosis_are_spark_population_moments():
    # [1, 1, 2]: Spark's skewness gives 0.7071067811865469 and kurtosis -1.499999999999999 (its
    # floating moments); exact moments rounded once give the true values
    assert finish("skew", [1, 1, 2]) == pytest.approx(2 ** -0.5, rel=1e-15)
    assert finish("kurtosis", [1, 1, 2]) == -1.5
    for values in ([1, 2, 3, 10], [-3, 0, 0, 7, 7, 7, 100]):
        mean = Fraction(sum(values), len(values))
        m2, m3, m4 = (sum((x - mean) ** k for x in values) for k in (2, 3, 4))
        n = len(values)
        assert finish("skew", values) == pytest.approx(math.sqrt(n) * float(m3) / float(m2) ** 1.5, rel=1e-14)
        assert finish("kurtosis", values) == pytest.approx(float(n * m4 / (m2 * m2)) - 3, rel=1e-14)


@pytest.mark.parametrize("kind", ["skew", "kurtosis"])
@pytest.mark.parametrize("values", [[], [7], [4, 4, 4]])
def test_moments_are_null_where_sparks_are(kind, values):
    assert finish(kind, values) is None


def test_moments_of_large_values_lose_nothing():
    # around 10**9 the floating power sums cancel every digit; the exact integers do not
    values = [10**9 + d for d in (0, 1, 2, 10)]
    shifted = [d for d in (0, 1, 2, 10)]
    assert finish("skew", values) == finish("skew", shifted)
    assert finish("kurtosis", values) == finish("kurtosis", shifted)


def test_percentiles_are_the_smallest_values_whose_inclusive_rank_reaches_them():
    values = [9, 1, 8, 1, 7, 3, 3, 6, 3, 4]  # sorted: 1 1 3 3 3 4 6 7 8 9
    assert finish("approx_percentile", values, percentiles=[0, 0.1, 0.25, 0.5, 0.95, 1]) == [1, 1, 3, 3, 9, 9]
    assert finish("approx_percentile", [5]) == [5, 5, 5]
    assert finish("approx_percentile", []) is None


def test_first_k_and_last_k_go_by_time_then_value():
    agg = aggregation("first_k", k=3)
    at = [T0 + timedelta(seconds=s) for s in (5, 1, 1, 9, 1)]
    partial = agg.empty()
    for value, t in zip([50, 12, 11, 90, 13], at):
        partial = agg.accumulate(partial, value, t)
    assert agg.finish(partial) == [11, 12, 13]
    last = aggregation("last_k", k=3)
    partial = last.empty()
    for value, t in zip([50, 12, 11, 90, 13], at):
        partial = last.accumulate(partial, value, t)
    assert last.finish(partial) == [90, 50, 13]


def test_top_k_and_bottom_k_keep_duplicates_in_order():
    assert finish("top_k", [3, 9, -1, 9, 4], k=3) == [9, 9, 4]
    assert finish("bottom_k", [3, 9, -1, 9, 4], k=2) == [-1, 3]
    assert finish("top_k", [], k=2) == []


def test_unique_count_and_histogram_count_values():
    values = [3, -1, 3, 3, 0, -1]
    assert finish("unique_count", values) == 3
    assert finish("histogram", values) == {3: 3, -1: 2, 0: 1}
    agg = aggregation("histogram")
    both = agg.combine(fold(agg, values), fold(agg, [0, 5]))
    assert agg.finish(agg.deduct(both, fold(agg, values))) == {0: 1, 5: 1}
    assert agg.finish(agg.deduct(both, both)) == {}  # no zero counts left behind


@pytest.mark.parametrize("kind, params, message", [
    ("top_k", {"k": 0}, r"aggregations.top_k.k: a whole number from 1 to 1000, got 0"),
    ("first_k", {"k": "3"}, r"aggregations.first_k.k: a whole number"),
    ("last_k", {"k": True}, r"aggregations.last_k.k: a whole number"),
    ("approx_percentile", {"percentiles": []}, r"aggregations.approx_percentile.percentiles: a non-empty list"),
    ("approx_percentile", {"percentiles": [0.5, 1.5]}, r"percentiles: each a fraction from 0 to 1, got 1.5"),
    ("approx_percentile", {"percentiles": [0.9, 0.5]}, r"percentiles: list them in increasing order"),
    ("histogram", {"k": 3}, r"aggregations.histogram.k: histogram takes no parameter 'k'"),
    ("top_k", {"percentiles": [0.5]}, r"aggregations.top_k.percentiles: top_k takes no parameter .*its parameters: k"),
    ("histogram", {"value_type": "double", "field": "latency"}, r"aggregations.histogram: histogram needs an integer or "
                                                                 r"string field, latency is double"),
])
def test_parameters_are_validated_naming_them(kind, params, message):
    with pytest.raises(ValueError, match=message):
        aggregation(kind, **params)


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
