from datetime import datetime, timedelta, timezone

import pytest

from windowing_core.aggregations import AGGREGATIONS, aggregation

T0 = datetime(2025, 1, 30, tzinfo=timezone.utc)


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
    assert invertible == {"count", "sum", "mean", "var_pop", "var_samp", "stddev_pop", "stddev_samp"}


def test_unknown_aggregation_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown aggregation 'median'.*count"):
        aggregation("median")
