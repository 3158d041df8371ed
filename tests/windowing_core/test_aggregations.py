import pytest

from windowing_core.aggregations import AGGREGATIONS, aggregation


@pytest.mark.parametrize("kind", sorted(AGGREGATIONS))
def test_combine_then_deduct_gives_back_the_partial(kind):
    agg = aggregation(kind)
    a, b = agg.empty(), agg.empty()
    for v in (3, -1, 7):
        a = agg.accumulate(a, v)
    for v in (2, 5):
        b = agg.accumulate(b, v)
    if agg.invertible:
        assert agg.deduct(agg.combine(a, b), b) == a


def test_count_and_sum_finish():
    count, total = aggregation("count"), aggregation("sum", "total")
    p, q = count.empty(), total.empty()
    for v in (1, 2, 3):
        p, q = count.accumulate(p, v), total.accumulate(q, v)
    assert count.finish(p) == 3
    assert total.finish(q) == 6
    assert total.field_columns() == ["total__s"]


def test_unknown_aggregation_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown aggregation 'median'.*count"):
        aggregation("median")
