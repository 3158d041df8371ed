"""Reconciliation checks: each passes on consistent tables and fails on a deliberately broken one."""

from datetime import date

import pytest

from expectations import reconciliation
from expectations.reconciliation import IngestReport
from jobs.tables import (
    DAILY_PARTIALS, EVENTS, LATE_EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT,
    declared_columns,
)
from tests.expectations.frames import BEFORE, CONFIG, DAY, NEXT, WINDOW, at, table
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

EVENT_COLUMNS = declared_columns(EVENTS.name, PipelineConfig())
QUARANTINE_COLUMNS = declared_columns(QUARANTINE.name, PipelineConfig())
LATE_COLUMNS = declared_columns(LATE_EVENTS.name, PipelineConfig())


# -- input_records_reconcile ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingested(spark):
    """One arrival day: 6 records = 3 accepted + 1 quarantined + 1 duplicate + 1 late."""
    landing = table(spark, [("raw", "string"), ("arrival_date", "date")], [{"arrival_date": DAY}] * 6)
    events = table(spark, EVENT_COLUMNS, [{"event_id": f"e{i}", "arrival_date": DAY} for i in range(3)])
    quarantine = table(spark, QUARANTINE_COLUMNS, [{"reason": "malformed_json", "arrival_date": DAY}])
    late = table(spark, LATE_COLUMNS, [{"reason": "beyond_allowed_lateness", "event_date": date(2025, 1, 20),
                                        "arrival_date": DAY},
                                       # written by a watermark, for its event day: not an input record
                                       {"reason": "behind_watermark", "event_date": DAY, "arrival_date": DAY}])
    return landing, events, quarantine, late


def report(**changes) -> IngestReport:
    counts = {"input_records": 6, "accepted": 3, "quarantined": 1, "duplicates": 1, "late": 1, **changes}
    return IngestReport(DAY, DAY, **counts)


def test_input_records_reconcile_passes_when_landing_report_and_tables_agree(ingested):
    outcome = reconciliation.input_records_reconcile(*ingested, {DAY: report()}, [DAY])[DAY]
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["this_day"]["duplicates_implied"] == 1


def test_input_records_reconcile_fails_when_a_table_lost_rows(ingested):
    landing, events, quarantine, late = ingested
    outcome = reconciliation.input_records_reconcile(landing, events.limit(2), quarantine, late,
                                                     {DAY: report()}, [DAY])[DAY]
    assert not outcome.passed
    assert outcome.metadata["problems"] == ["accepted: recounted 2, reported 3"]


def test_input_records_reconcile_fails_when_the_landing_folder_changed(ingested):
    landing, *tables = ingested
    outcome = reconciliation.input_records_reconcile(landing.union(landing.limit(1)), *tables,
                                                     {DAY: report()}, [DAY])[DAY]
    assert not outcome.passed
    assert "input_records: recounted 7, reported 6" in outcome.metadata["problems"]


def test_input_records_reconcile_fails_when_the_report_does_not_add_up(ingested):
    outcome = reconciliation.input_records_reconcile(*ingested, {DAY: report(duplicates=0)}, [DAY])[DAY]
    assert not outcome.passed
    assert "does not add up" in outcome.metadata["problems"][0]


def test_input_records_reconcile_fails_without_a_report(ingested):
    outcome = reconciliation.input_records_reconcile(*ingested, {DAY: None}, [DAY])[DAY]
    assert not outcome.passed


def test_a_range_report_is_reconciled_over_its_whole_range(spark, ingested):
    """A range run reports once for all its days; each day is judged against the range's totals."""
    landing, events, quarantine, late = ingested
    next_landing = table(spark, [("raw", "string"), ("arrival_date", "date")], [{"arrival_date": NEXT}] * 2)
    next_events = table(spark, EVENT_COLUMNS, [{"event_id": "n", "arrival_date": NEXT}] * 2)
    both = IngestReport(DAY, NEXT, input_records=8, accepted=5, quarantined=1, duplicates=1, late=1)
    outcomes = reconciliation.input_records_reconcile(landing.union(next_landing), events.union(next_events),
                                                      quarantine, late, {NEXT: both}, [NEXT])
    assert outcomes[NEXT].passed, outcomes[NEXT].metadata


# -- quarantine_share_below_limit -----------------------------------------------------------------


def test_quarantine_share_warns_above_the_limit_and_reports_reasons(spark):
    events = table(spark, EVENT_COLUMNS, [{"arrival_date": DAY}] * 9 + [{"arrival_date": NEXT}] * 100)
    quarantine = table(spark, QUARANTINE_COLUMNS, [
        {"reason": "truncated_gzip", "raw": None, "arrival_date": DAY},
        {"reason": "bad_encoding", "arrival_date": DAY}, {"reason": "malformed_json", "arrival_date": NEXT},
        # more rows of a reason than the sample shows: counted whole, shown in (reason, file) order
        *[{"reason": "bad_encoding", "source_file": f"f{i}", "arrival_date": BEFORE} for i in range(6, 0, -1)],
        {"reason": "malformed_json", "arrival_date": BEFORE}])
    late = table(spark, LATE_COLUMNS, [])
    outcomes = reconciliation.quarantine_share_below_limit(quarantine, events, late, [BEFORE, DAY, NEXT],
                                                           limit=0.01)
    assert not outcomes[DAY].passed
    assert outcomes[DAY].metadata["by_reason"] == {"bad_encoding": 1, "truncated_gzip": 1}
    assert outcomes[DAY].metadata["share"] == pytest.approx(2 / 11, rel=1e-4)
    assert [r["reason"] for r in outcomes[DAY].metadata["sample_rows"]] == ["bad_encoding", "truncated_gzip"]
    assert outcomes[NEXT].passed  # 1 of 101
    assert outcomes[BEFORE].metadata["by_reason"] == {"bad_encoding": 6, "malformed_json": 1}
    assert [r["source_file"] for r in outcomes[BEFORE].metadata["sample_rows"]] == [f"f{i}" for i in range(1, 6)]


# -- partials_count_accepted_events ---------------------------------------------------------------


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


def partials(spark, rows):
    config = PipelineConfig()
    return table(spark, declared_columns(MINUTE_PARTIALS.name, config), rows)


def test_partials_count_accepted_events_passes_when_every_event_is_in_one_frame(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 2, "event_date": DAY},
                              {"key": "k2", "frame_start": at(DAY, 23, 59), "event_count": 1, "event_date": DAY},
                              {"key": "k2", "frame_start": at(NEXT, 0), "event_count": 1, "event_date": NEXT}])
    outcomes = reconciliation.partials_count_accepted_events(frames, accepted, table(spark, LATE_COLUMNS, []),
                                                             [DAY, NEXT], PipelineConfig())
    assert outcomes[DAY].passed and outcomes[NEXT].passed, outcomes


def test_partials_count_accepted_events_fails_on_a_double_counted_duplicate(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 3, "event_date": DAY},
                              {"key": "k2", "frame_start": at(DAY, 23, 59), "event_count": 1, "event_date": DAY}])
    outcome = reconciliation.partials_count_accepted_events(frames, accepted, table(spark, LATE_COLUMNS, []),
                                                            [DAY], PipelineConfig())[DAY]
    assert not outcome.passed
    assert outcome.metadata["difference"] == 1
    assert outcome.metadata["sample_frames"] == [
        {"key": "k1", "minute": "2025-01-28T10:00:00", "events": 2, "in_frames": 3}]


def test_partials_count_accepted_events_takes_out_events_held_back_by_a_watermark(spark, accepted):
    frames = partials(spark, [{"key": "k1", "frame_start": at(DAY, 10), "event_count": 2, "event_date": DAY}])
    late = table(spark, LATE_COLUMNS, [{"event_id": "c", "reason": "behind_watermark", "event_date": DAY,
                                        "arrival_date": NEXT}])
    assert reconciliation.partials_count_accepted_events(frames, accepted, late, [DAY], PipelineConfig())[DAY].passed


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
    outcome = reconciliation.partials_count_accepted_events(frames, events, table(spark, LATE_COLUMNS, []),
                                                            [DAY], config)[DAY]
    assert outcome.passed is passed
    assert outcome.metadata["filtered_out"] == 2
    assert outcome.metadata["accepted_event_ids"] == 3


# -- tiles_match_minute_partials ------------------------------------------------------------------


@pytest.mark.parametrize("tiles, differing", [
    ([{"key": "k1", "event_count": 2, "count__n": 2, "sum__s": 7}, {"key": "k2", "event_count": 1, "sum__s": 1}], set()),
    ([{"key": "k1", "event_count": 2, "count__n": 2, "sum__s": 6}, {"key": "k2", "event_count": 1, "sum__s": 1}],
     {"k1"}),  # a sum that lost a frame
    ([{"key": "k1", "event_count": 2, "count__n": 2, "sum__s": 7}], {"k2"}),  # a key without its tile
])
def test_tiles_match_minute_partials(spark, tiles, differing):
    """k1 has frames (1 event, sum 3) and (1 event, sum 4); k2 one frame (1 event, sum 1)."""
    config = PipelineConfig()
    frames = partials(spark, [
        {"key": "k1", "frame_start": at(DAY, 10), "event_count": 1, "count__n": 1, "sum__s": 3, "event_date": DAY},
        {"key": "k1", "frame_start": at(DAY, 11), "event_count": 1, "count__n": 1, "sum__s": 4, "event_date": DAY},
        {"key": "k2", "frame_start": at(DAY, 12), "event_count": 1, "count__n": 1, "sum__s": 1, "event_date": DAY}])
    stored = table(spark, declared_columns(DAILY_PARTIALS.name, config), [{"event_date": DAY, **t} for t in tiles])
    outcome = reconciliation.tiles_match_minute_partials(stored, frames, config, [DAY])[DAY]
    assert outcome.passed == (not differing)
    assert {r["key"] for r in outcome.metadata.get("sample_rows", [])} == differing


def snapshot_rows(spark, rows):
    """Rows of the 1h window as of each day's last end, 23:30, unless a row says otherwise."""
    return table(spark, declared_columns(WINDOW_SNAPSHOT.name, CONFIG), [
        {"window": "1h", "window_start": at(r["date"], 22, 30), "as_of": at(r["date"], 23, 30), **r} for r in rows])


def test_snapshot_matches_last_change(spark):
    """Keys on DAY: a changed (last change 2, 5); b did not change (carried from BEFORE); c's last
    change is to empty (absent). Broken: d's snapshot differs from its last change, e vanished
    without a change, f kept a value its last change emptied."""
    before = [{"key": k, "count": n, "sum": s, "date": BEFORE} for k, n, s in
              [("a", 1, 1), ("b", 1, 7), ("c", 1, 1), ("e", 4, 4), ("f", 1, 1)]]
    day = [{"key": k, "count": n, "sum": s, "date": DAY} for k, n, s in
           [("a", 2, 5), ("b", 1, 7), ("d", 9, 9), ("f", 1, 1)]]
    last = {"a": (2, 5), "c": (0, 0), "d": (3, 3), "f": (0, 0)}
    changes = table(spark, declared_columns(WINDOW_CHANGES.name, CONFIG), [
        {"key": k, "window": "1h", "window_start": at(DAY, 10), "window_end": at(DAY, 11), "count": n, "sum": s,
         "date": DAY} for k, (n, s) in last.items()] + [
        {"key": "a", "window": "1h", "window_start": at(DAY, 9), "window_end": at(DAY, 10), "count": 1, "sum": 3,
         "date": DAY}])
    outcome = reconciliation.snapshot_matches_last_change(snapshot_rows(spark, before + day), changes, CONFIG,
                                                          [DAY])[DAY]
    assert not outcome.passed
    assert outcome.metadata["mismatches"] == 3
    assert {r["key"] for r in outcome.metadata["sample_rows"]} == {"d", "e", "f"}


A_CHANGES_AT_11 = [{"key": "a", "window": "1h", "window_start": at(DAY, 10), "window_end": at(DAY, 11),
                    "count": 2, "sum": 5, "date": DAY}]


def judged_day(spark, snapshots: list[dict], changes: list[dict]):
    return reconciliation.snapshot_matches_last_change(
        snapshot_rows(spark, snapshots), table(spark, declared_columns(WINDOW_CHANGES.name, CONFIG), changes),
        CONFIG, [DAY])[DAY]


def test_snapshot_matches_last_change_passes_on_a_consistent_day(spark):
    before = [{"key": "b", "count": 1, "sum": 7, "date": BEFORE}]
    day = [{"key": "a", "count": 2, "sum": 5, "date": DAY}, {"key": "b", "count": 1, "sum": 7, "date": DAY}]
    outcome = judged_day(spark, before + day, A_CHANGES_AT_11)
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["unverified_without_previous_snapshot"] == 0


def test_snapshot_keys_continued_from_another_definition_of_the_window_are_unverified(spark):
    """BEFORE's snapshot holds a 2h window named 1h (the configuration changed since), which the
    job did not continue from: b, without a change on DAY, cannot be judged against it, and e,
    absent on DAY, is not missed; a's change is judged."""
    before = [{"key": k, "count": 1, "sum": 7, "date": BEFORE, "window_start": at(BEFORE, 21, 30)} for k in "abe"]
    day = [{"key": "a", "count": 2, "sum": 5, "date": DAY}, {"key": "b", "count": 3, "sum": 3, "date": DAY}]
    outcome = judged_day(spark, before + day, A_CHANGES_AT_11)
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["unverified_without_previous_snapshot"] == 1
    assert outcome.metadata["keys_compared"] == 2


def test_snapshot_keys_without_a_previous_snapshot_are_unverified_not_failed(spark):
    day = [{"key": "b", "count": 1, "sum": 7, "date": DAY}]
    changes = table(spark, declared_columns(WINDOW_CHANGES.name, CONFIG), [])
    outcome = reconciliation.snapshot_matches_last_change(snapshot_rows(spark, day), changes, CONFIG,
                                                          [DAY])[DAY]
    assert outcome.passed
    assert outcome.metadata["unverified_without_previous_snapshot"] == 1


HISTOGRAMS = PipelineConfig(windows=(WINDOW,), aggregations=(aggregation("count"), aggregation("histogram")))


def test_snapshot_matches_last_change_compares_histograms(spark):
    """Spark orders no map, and a histogram's value is one. On DAY: a's snapshot is its last
    change; b's histogram differs from its change's; c has two snapshot rows whose histograms
    differ (the same count)."""
    def snapshot(key, histogram):
        return {"window": "1h", "window_start": at(DAY, 22, 30), "as_of": at(DAY, 23, 30), "key": key,
                "count": sum(histogram.values()), "histogram": histogram, "date": DAY}

    changes = table(spark, declared_columns(WINDOW_CHANGES.name, HISTOGRAMS), [
        {"key": k, "window": "1h", "window_start": at(DAY, 10), "window_end": at(DAY, 11), "count": 2,
         "histogram": h, "date": DAY} for k, h in [("a", {1: 2}), ("b", {1: 1, 3: 1}), ("c", {1: 2})]])
    snapshots = table(spark, declared_columns(WINDOW_SNAPSHOT.name, HISTOGRAMS), [
        snapshot("a", {1: 2}), snapshot("b", {1: 2}), snapshot("c", {1: 2}), snapshot("c", {2: 2})])
    outcome = reconciliation.snapshot_matches_last_change(snapshots, changes, HISTOGRAMS, [DAY])[DAY]
    assert outcome.metadata["keys_compared"] == 3
    assert outcome.metadata["mismatches"] == 2
    assert {r["key"] for r in outcome.metadata["sample_rows"]} == {"b", "c"}
