"""``minute_partials``' checks: each fails on a frame corrupted for it, on that day only, and the
frames hold exactly the accepted events."""

import pytest

from expectations import minute_partials as partials_checks
from expectations import validation
from expectations.catalog import checks_of
from expectations.minute_partials import partials_count_accepted_events
from jobs.tables import MINUTE_PARTIALS, declared_columns
from tests.expectations.frames import (
    BEFORE, DAY, DAYS, EVENT_COLUMNS, LATE_COLUMNS, NEXT, SUITE_CONFIG, at, keys_in, partials, table,
)
from windowing_core.config import PipelineConfig

PARTIALS = {
    "keys_not_null": {"key": None},
    "frames_on_bucket_grid": {"key": "offgrid", "frame_start": at(DAY, 10, 2, 30)},
    "frames_inside_partition": {"key": "elsewhere", "frame_start": at(BEFORE, 23, 59)},
    "frames_unique": {"key": "twice"},
    "counts_non_negative": {"key": "negative", "event_count": -1, "count__n": -1},
    "sums_non_negative": {"key": "negsum", "sum__s": -3},
}


@pytest.fixture(scope="module")
def partials_results(spark):
    base = {"frame_start": at(DAY, 12), "event_date": DAY}
    rows = [{**base, "key": "good"}, *[{**base, **change} for change in PARTIALS.values()],
            {**base, "key": "twice"}, {"key": "tomorrow", "frame_start": at(NEXT, 1), "event_date": NEXT}]
    frame = table(spark, declared_columns(MINUTE_PARTIALS.name, SUITE_CONFIG), rows)
    return validation.run_suite(frame, partials_checks.prepare(frame, SUITE_CONFIG),
                                partials_checks.suite(SUITE_CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, PARTIALS[c]) for c in PARTIALS])
def test_partial_check_fails_on_the_corrupted_day_only(partials_results, check, corrupted):
    outcome = partials_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert partials_results[check][NEXT].passed
    assert partials_results[check][NEXT].metadata["rows_checked"] == 1


def test_every_partial_check_has_a_corruption_test(partials_results):
    assert {c.name for c in checks_of(SUITE_CONFIG, MINUTE_PARTIALS.name)} - set(partials_results) == {
        "partials_count_accepted_events"}  # a reconciliation, tested below
    assert set(PARTIALS) | {"schema_matches_declared"} == set(partials_results)


@pytest.fixture(scope="module")
def accepted(spark):
    """Event day DAY: ids a, b, c; b arrived twice (DAY and NEXT) and counts once. Event day NEXT: d."""
    return table(spark, EVENT_COLUMNS, [
        {"key": "k1", "event_time": at(DAY, 10, 0, 5), "event_id": "a", "arrival_date": DAY},
        {"key": "k1", "event_time": at(DAY, 10, 0, 50), "event_id": "b", "arrival_date": DAY},
        {"key": "k1", "event_time": at(DAY, 10, 0, 50), "event_id": "b", "arrival_date": NEXT},
        {"key": "k2", "event_time": at(DAY, 23, 59, 59), "event_id": "c", "arrival_date": NEXT},
        {"key": "k2", "event_time": at(NEXT, 0, 0, 1), "event_id": "d", "arrival_date": NEXT},
    ])



def test_partials_count_accepted_events_passes_when_every_event_is_in_one_frame(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 2, "event_date": DAY},
                              {"key": "k2", "frame_start": at(DAY, 23, 59), "event_count": 1, "event_date": DAY},
                              {"key": "k2", "frame_start": at(NEXT, 0), "event_count": 1, "event_date": NEXT}])
    outcomes = partials_count_accepted_events(frames, accepted, table(spark, LATE_COLUMNS, []),
                                                             [DAY, NEXT], PipelineConfig())
    assert outcomes[DAY].passed and outcomes[NEXT].passed, outcomes


def test_partials_count_accepted_events_fails_on_a_double_counted_duplicate(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 3, "event_date": DAY},
                              {"key": "k2", "frame_start": at(DAY, 23, 59), "event_count": 1, "event_date": DAY}])
    outcome = partials_count_accepted_events(frames, accepted, table(spark, LATE_COLUMNS, []),
                                                            [DAY], PipelineConfig())[DAY]
    assert not outcome.passed
    assert outcome.metadata["difference"] == 1
    assert outcome.metadata["sample_frames"] == [
        {"key": "k1", "minute": "2025-01-28T10:00:00", "events": 2, "in_frames": 3}]


def test_partials_count_accepted_events_takes_out_events_held_back_by_a_watermark(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 2, "event_date": DAY}])
    late = table(spark, LATE_COLUMNS, [{"event_id": "c", "reason": "behind_watermark", "event_date": DAY,
                                        "arrival_date": NEXT}])
    assert partials_count_accepted_events(frames, accepted, late, [DAY], PipelineConfig())[DAY].passed


@pytest.mark.parametrize("in_frames, passed", [(1, True), (2, False)])
def test_partials_count_accepted_events_takes_out_what_the_row_filter_left_out(spark, in_frames, passed):
    """The filter judges an id's first arrival: b's later copy would pass, its first does not;
    c's value is null, which a SQL filter does not select."""
    config = PipelineConfig.from_dict({"where": "value > 0"})
    events = table(spark, EVENT_COLUMNS, [
        {"key": "k1", "event_time": at(DAY, 10, 0, 5), "event_id": "a", "value": 5, "arrival_date": DAY},
        {"key": "k1", "event_time": at(DAY, 10, 0, 50), "event_id": "b", "value": 0, "arrival_date": DAY},
        {"key": "k1", "event_time": at(DAY, 10, 0, 50), "event_id": "b", "value": 5, "arrival_date": NEXT},
        {"key": "k2", "event_time": at(DAY, 11), "event_id": "c", "value": None, "arrival_date": DAY},
    ])
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": in_frames, "event_date": DAY}])
    outcome = partials_count_accepted_events(frames, events, table(spark, LATE_COLUMNS, []),
                                                            [DAY], config)[DAY]
    assert outcome.passed is passed
    assert outcome.metadata["filtered_out"] == 2
    assert outcome.metadata["accepted_event_ids"] == 3
