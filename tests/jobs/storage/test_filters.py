"""jobs.storage.filters: a partition filter means the same to Spark's SQL as to Python, whatever
the value holds, and a malformed one is refused in one line."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

import pytest

from jobs.storage.filters import check_filter_columns, conjunction, disjunction, sql_predicate

AWKWARD = ["plain", "it's", "back\\slash", "\\'", "''", "tab\there", "new\nline", "ümlaut €", "", " padded ",
           "%_wild", "semi;colon) OR (1=1"]


def test_spark_selects_exactly_the_rows_python_says_each_filter_matches(spark):
    """Every op, every awkward string, in a column whose name needs quoting too."""
    df = spark.createDataFrame([(v,) for v in AWKWARD], "`odd col` string")
    cases = [("=", v) for v in AWKWARD] + [("!=", "it's"), ("<", "m"), (">=", "m"),
                                           ("in", AWKWARD[1:4]), ("not in", AWKWARD[::2]), ("in", []),
                                           ("not in", [])]
    expect = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
              ">=": lambda a, b: a >= b, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}
    for op, value in cases:
        predicate = sql_predicate(disjunction([("odd col", op, value)]))
        got = sorted(r[0] for r in df.where(predicate).collect())
        assert got == sorted(v for v in AWKWARD if expect[op](v, value)), (op, value, predicate)


def test_an_or_of_ands_is_what_a_list_of_lists_means(spark):
    df = spark.createDataFrame([(d, k) for d in ("2025-01-01", "2025-01-02") for k in "ab"], "day string, k string")
    either = [[("day", "=", date(2025, 1, 1)), ("k", "=", "a")], [("day", "=", date(2025, 1, 2))]]
    got = sorted(tuple(r) for r in df.where(sql_predicate(disjunction(either))).collect())
    assert got == [("2025-01-01", "a"), ("2025-01-02", "a"), ("2025-01-02", "b")]
    assert disjunction(None) == disjunction([]) == []


def test_values_take_deltas_partition_spelling():
    instant = datetime(2025, 1, 27, 13, 0, tzinfo=timezone(timedelta(hours=2)))
    assert conjunction([("d", " IN ", [date(2025, 1, 27), instant, True, 7])]) == [
        ("d", "in", ["2025-01-27", "2025-01-27 11:00:00.000000", "true", "7"])]


@pytest.mark.parametrize("bad, says", [
    (["day"], "is not a (column, op, value) tuple"),
    ([("day", "~", "x")], "op must be one of"),
    ([("day", "in", "2025-01-27")], "'in' needs a list of values"),
    ([("day", "not in", 3)], "'not in' needs a list of values"),
])
def test_a_malformed_filter_is_refused_in_one_line(bad, says):
    with pytest.raises(ValueError, match=re.escape(says)) as refused:
        conjunction(bad)
    assert "\n" not in str(refused.value)


def test_a_filter_on_a_data_column_is_refused():
    with pytest.raises(ValueError, match=r"partition filters on \['key'\] for t, whose partition columns are"):
        check_filter_columns(conjunction([("key", "=", "a"), ("day", "=", "x")]), ["day"], "t")
