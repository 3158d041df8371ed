"""``window_snapshot``'s checks: each fails on a snapshot row corrupted for it, on that day only,
and each key's snapshot is its last change point."""

import pytest

from expectations import validation
from expectations import window_snapshot as snapshot_checks
from expectations.catalog import checks_of
from expectations.window_snapshot import snapshot_matches_last_change
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns
from tests.expectations.frames import (
    BEFORE, CONFIG, DAY, DAYS, NEXT, RICH, SUITE_CONFIG, WINDOW, at, keys_in, table,
)
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig

SNAPSHOT = {
    "keys_not_null": {"key": None},
    "windows_declared": {"key": "unknown_window", "window": "2h"},
    "snapshot_as_of_last_window_end": {"key": "stale", "as_of": at(DAY, 23, 30), "window_start": at(DAY, 22, 30)},
    "window_length_matches_spec": {"key": "longer", "window_start": at(DAY, 21, 45)},
    "snapshot_keys_not_empty": {"key": "empty", "event_count": 0},
    "snapshot_keys_unique": {"key": "twice"},
    "counts_non_negative": {"key": "negative", "count": -1, "count__n": -1},
    "sums_non_negative": {"key": "negsum", "sum": -1, "sum__s": -1},
    **({"mean_between_min_and_max": {"key": "mean", "avg": 9.0, "low": 1, "high": 3},
        "variances_non_negative": {"key": "negvar", "spread": -1.0}} if RICH else {}),
}


@pytest.fixture(scope="module")
def snapshot_results(spark):
    # the 1h window slides every 15 minutes: a day's last end is 23:45
    base = {"window": "1h", "window_start": at(DAY, 22, 45), "as_of": at(DAY, 23, 45), "date": DAY}
    rows = [{**base, "key": "good"}, *[{**base, **change} for change in SNAPSHOT.values()], {**base, "key": "twice"},
            {"key": "tomorrow", "window": "1h", "window_start": at(NEXT, 22, 45), "as_of": at(NEXT, 23, 45),
             "date": NEXT},
            {"key": "tomorrow", "window": "6h", "window_start": at(NEXT, 12), "as_of": at(NEXT, 18),
             "date": NEXT}]  # 6h tumbling: 18:00
    frame = table(spark, declared_columns(WINDOW_SNAPSHOT.name, SUITE_CONFIG), rows)
    return validation.run_suite(frame, snapshot_checks.prepare(frame, SUITE_CONFIG, DAYS),
                                snapshot_checks.suite(SUITE_CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, SNAPSHOT[c]) for c in SNAPSHOT])
def test_snapshot_check_fails_on_the_corrupted_day_only(snapshot_results, check, corrupted):
    outcome = snapshot_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert snapshot_results[check][NEXT].passed


def test_every_snapshot_check_has_a_corruption_test(snapshot_results):
    covered = set(SNAPSHOT) | {"schema_matches_declared", "snapshot_matches_last_change"}
    assert {c.name for c in checks_of(SUITE_CONFIG, WINDOW_SNAPSHOT.name)} == covered


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
    outcome = snapshot_matches_last_change(snapshot_rows(spark, before + day), changes, CONFIG,
                                                          [DAY])[DAY]
    assert not outcome.passed
    assert outcome.metadata["mismatches"] == 3
    assert {r["key"] for r in outcome.metadata["sample_rows"]} == {"d", "e", "f"}


A_CHANGES_AT_11 = [{"key": "a", "window": "1h", "window_start": at(DAY, 10), "window_end": at(DAY, 11),
                    "count": 2, "sum": 5, "date": DAY}]


def judged_day(spark, snapshots: list[dict], changes: list[dict]):
    return snapshot_matches_last_change(
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
    outcome = snapshot_matches_last_change(snapshot_rows(spark, day), changes, CONFIG,
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
    outcome = snapshot_matches_last_change(snapshots, changes, HISTOGRAMS, [DAY])[DAY]
    assert outcome.metadata["keys_compared"] == 3
    assert outcome.metadata["mismatches"] == 2
    assert {r["key"] for r in outcome.metadata["sample_rows"]} == {"b", "c"}
