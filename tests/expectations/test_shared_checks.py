"""The checks tables share: Chronon's lists and maps, and counts of a field within the event count."""

import pytest

from expectations import validation
from expectations import window_changes as changes_checks
from expectations import window_snapshot as snapshot_checks
from expectations.catalog import checks_of
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns
from tests.expectations.frames import DAY, DAYS, NEXT, SUITE_CONFIG, TYPED, at, keys_in, table
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

KINDS_CONFIG = PipelineConfig(
    windows=(WindowSpec.of("1h", "1h", "15m"),),
    aggregations=(aggregation("count"), aggregation("approx_percentile", "p", percentiles=[0.5, 0.9]),
                  aggregation("top_k", "top", k=2), aggregation("histogram", "hist"),
                  aggregation("unique_count", "distinct")))


GOOD_KINDS = {"event_count": 3, "count": 3, "p": [1, 5], "top": [5, 4], "hist": {1: 2, 5: 1}, "distinct": 2}


KIND_CORRUPTIONS = {
    "percentiles_ordered": [{"key": "unordered", "p": [5, 1]}],
    "k_lists_at_most_k": [{"key": "long", "top": [5, 4, 3]}],
    "histogram_counts_match_events": [{"key": "overcounted", "hist": {1: 3, 5: 1}},
                                      {"key": "zero", "hist": {1: 3, 5: 0}}],
    "counts_non_negative": [{"key": "negative", "distinct": -1}],
}


@pytest.fixture(scope="module", params=[WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name])
def kind_results(spark, request):
    if request.param == WINDOW_CHANGES.name:
        base = {"window": "1h", "window_start": at(DAY, 11), "window_end": at(DAY, 12), "date": DAY, **GOOD_KINDS}
        tomorrow = {**base, "window_start": at(NEXT, 0), "window_end": at(NEXT, 1), "date": NEXT}
    else:
        base = {"window": "1h", "window_start": at(DAY, 22, 45), "as_of": at(DAY, 23, 45), "date": DAY,
                **GOOD_KINDS, "hist__counts": GOOD_KINDS["hist"]}
        tomorrow = {**base, "window_start": at(NEXT, 22, 45), "as_of": at(NEXT, 23, 45), "date": NEXT}
    rows = [{**base, "key": "good"}, *[{**base, **c} for cs in KIND_CORRUPTIONS.values() for c in cs],
            {**tomorrow, "key": "tomorrow"}]
    if request.param == WINDOW_CHANGES.name:  # the step back to an empty window
        rows.append({**tomorrow, "key": "emptied", "p": None, "top": [], "hist": {}, "distinct": 0,
                     "event_count": 0, "count": 0})
    frame = table(spark, declared_columns(request.param, KINDS_CONFIG), rows)
    if request.param == WINDOW_CHANGES.name:
        return request.param, validation.run_suite(frame, changes_checks.prepare(frame, None, KINDS_CONFIG),
                                                   changes_checks.suite(KINDS_CONFIG), DAYS)
    return request.param, validation.run_suite(frame, snapshot_checks.prepare(frame, KINDS_CONFIG, DAYS),
                                               snapshot_checks.suite(KINDS_CONFIG), DAYS)


@pytest.mark.parametrize("check", sorted(KIND_CORRUPTIONS))
def test_kind_checks_fail_on_the_corrupted_day_only(kind_results, check):
    """Histogram counts summing to event_count where the field is never null, percentiles in
    order, k-lists at most k long, distinct counts not negative; a window that empties (no
    percentile, an empty list and map) passes."""
    table_name, results = kind_results
    outcome = results[check][DAY]
    assert not outcome.passed
    assert keys_in(outcome) == {c["key"] for c in KIND_CORRUPTIONS[check]}
    assert results[check][NEXT].passed, results[check][NEXT].metadata
    assert {check for check in KIND_CORRUPTIONS} <= {c.name for c in checks_of(KINDS_CONFIG, table_name)}


def test_histograms_of_declared_fields_may_count_fewer_than_the_events(spark):
    """A declared field may be missing from a record: its histogram then counts fewer values
    than the window's events, never more."""
    config = PipelineConfig(windows=(WindowSpec.of("1h", "1h", "15m"),), fields=(("page", "string"),),
                            aggregations=(aggregation("histogram", "pages", "page", "string"),))
    base = {"window": "1h", "window_start": at(DAY, 11), "window_end": at(DAY, 12), "date": DAY, "event_count": 3}
    frame = table(spark, declared_columns(WINDOW_CHANGES.name, config), [
        {**base, "key": "missing_one", "pages": {"home": 2}}, {**base, "key": "over", "pages": {"home": 4}}])
    result = validation.run_suite(frame, changes_checks.prepare(frame, None, config),
                                  changes_checks.suite(config), [DAY], {"histogram_counts_match_events"})
    assert keys_in(result["histogram_counts_match_events"][DAY]) == {"over"}


@pytest.mark.parametrize("table_name", [WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name])
def test_a_count_of_a_field_above_the_window_event_count_fails(spark, table_name):
    rows = [{"key": "good", "event_count": 3, "pages": 2, "date": DAY},
            {"key": "over", "event_count": 1, "pages": 2, "date": DAY},
            {"key": "good", "event_count": 2, "pages": 2, "date": NEXT}]
    frame = table(spark, declared_columns(table_name, TYPED), rows)
    suite = (changes_checks.suite if table_name == WINDOW_CHANGES.name else snapshot_checks.suite)(TYPED)
    results = validation.run_suite(frame, frame, suite, DAYS, {"counts_within_event_count"})
    assert not results["counts_within_event_count"][DAY].passed
    assert "over" in keys_in(results["counts_within_event_count"][DAY])
    assert results["counts_within_event_count"][NEXT].passed
    assert "counts_within_event_count" in {c.name for c in checks_of(TYPED, table_name)}
    assert "counts_within_event_count" not in {c.name for c in checks_of(SUITE_CONFIG, table_name)}  # value is never null
