"""``window_changes``' checks: each fails on a change point corrupted for it, on that day only."""

import pytest

from expectations import validation
from expectations import window_changes as changes_checks
from expectations.catalog import checks_of
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns
from tests.expectations.frames import BEFORE, DAY, DAYS, NEXT, RICH, SUITE_CONFIG, at, keys_in, table
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

CHANGES = {
    "keys_not_null": {"key": None},
    "windows_declared": {"key": "unknown_window", "window": "2h"},
    "window_ends_on_grid": {"key": "offgrid", "window_start": at(DAY, 9, 20), "window_end": at(DAY, 10, 20)},
    "window_length_matches_spec": {"key": "short", "window_start": at(DAY, 10), "window_end": at(DAY, 10, 30)},
    "window_ends_inside_partition": {"key": "elsewhere", "window_start": at(DAY, 23, 15), "window_end": at(NEXT, 0, 15)},
    "change_points_unique": {"key": "twice"},
    "no_repeated_change_points": {"key": "same", "window_start": at(DAY, 9, 15), "window_end": at(DAY, 10, 15)},
    "counts_non_negative": {"key": "negative", "count": -1, "event_count": -1},
    "sums_non_negative": {"key": "negsum", "sum": -2},
    **({"mean_between_min_and_max": {"key": "mean", "avg": 9.0, "low": 1, "high": 3},
        "variances_non_negative": {"key": "negvar", "spread": -0.5}} if RICH else {}),
}


@pytest.fixture(scope="module")
def changes_results(spark):
    base = {"window": "1h", "window_start": at(DAY, 11), "window_end": at(DAY, 12), "date": DAY}
    rows = [
        {**base, "key": "good", "window_start": at(DAY, 9, 15), "window_end": at(DAY, 10, 15), "count": 1},
        {**base, "key": "good", "count": 2},
        *[{**base, **change} for change in CHANGES.values()],
        {**base, "key": "twice"},
        {**base, "key": "same"},  # 10:15 and 12:00 with the same values: one change too many
        {**base, "key": "tomorrow", "window_start": at(NEXT, 0), "window_end": at(NEXT, 1), "date": NEXT},
        # final emission: the same value in consecutive closed windows is no repetition
        {"key": "final", "window": "6h", "window_start": at(NEXT, 0), "window_end": at(NEXT, 6), "date": NEXT},
        {"key": "final", "window": "6h", "window_start": at(NEXT, 6), "window_end": at(NEXT, 12), "date": NEXT},
    ]
    frame = table(spark, declared_columns(WINDOW_CHANGES.name, SUITE_CONFIG), rows)
    return validation.run_suite(frame, changes_checks.prepare(frame, None, SUITE_CONFIG),
                                changes_checks.suite(SUITE_CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, CHANGES[c]) for c in CHANGES])
def test_change_check_fails_on_the_corrupted_day_only(changes_results, check, corrupted):
    outcome = changes_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert changes_results[check][NEXT].passed


def test_every_change_check_has_a_corruption_test(changes_results):
    # partials_materialised fails on a day without its partials: tests/jobs/test_hostile_input.py;
    # tables_written_whole on a run killed between its commits: tests/jobs/test_incomplete_writes.py
    covered = set(CHANGES) | {"schema_matches_declared", "changes_conserve_frames", "partials_materialised",
                              "tables_written_whole"}
    assert {c.name for c in checks_of(SUITE_CONFIG, WINDOW_CHANGES.name)} == covered


def test_a_first_change_point_repeating_the_previous_snapshot_is_a_repetition(spark):
    """The day before ended with k1 at count 2 and k2 absent (empty). A first change point of
    the day with the same values repeats it:

        snapshot of BEFORE:  k1 = (2, 2)          k2 absent = (0, 0)
        changes of DAY:      k1 10:15 -> (2, 2)   k2 10:15 -> (0, 0)   k3 10:15 -> (1, 1)
                             repeated             repeated             a change

    The 2h window did not continue from that snapshot (say it was added that day), so its
    first change point to empty, k4's, is not judged against it.
    """
    config = PipelineConfig(windows=(WindowSpec.of("1h", "1h", "15m"), WindowSpec.of("2h", "2h", "15m")))
    snapshot = table(spark, declared_columns(WINDOW_SNAPSHOT.name, config),
                     [{"key": "k1", "window": "1h", "count": 2, "sum": 2, "date": BEFORE}])
    base = {"window": "1h", "window_start": at(DAY, 9, 15), "window_end": at(DAY, 10, 15), "date": DAY}
    changes = table(spark, declared_columns(WINDOW_CHANGES.name, config), [
        {**base, "key": "k1", "count": 2, "sum": 2}, {**base, "key": "k2", "count": 0, "sum": 0},
        {**base, "key": "k3", "count": 1, "sum": 1},
        {**base, "window": "2h", "window_start": at(DAY, 8, 15), "key": "k4", "count": 0, "sum": 0}])
    result = validation.run_suite(changes, changes_checks.prepare(changes, snapshot, config, {"1h"}),
                                  changes_checks.suite(config), [DAY], {"no_repeated_change_points"})
    outcome = result["no_repeated_change_points"][DAY]
    assert not outcome.passed
    assert keys_in(outcome) == {"k1", "k2"}


@pytest.mark.parametrize("windows", [(WindowSpec.of("1h", "1h", "15m"),), ()])
def test_session_rows_pass_the_change_checks_that_apply_and_skip_grid_length_and_repetition(spark, windows):
    """Sessions of any length, ending off every grid, with equal values in a row, beside a
    sliding window or alone; a session row under another day than its end's still fails.

        visits (gap 30m):  [09:03:07, 09:40:01)  [10:11, 11:02:30)  count 2, 2
                           [23:50, 00:20 next day) stored under DAY: wrong partition
    """
    from windowing_core.sessions import SessionSpec

    config = PipelineConfig(windows=windows, sessions=(SessionSpec.of("visits", "30m"),))
    base = {"window": "visits", "key": "s", "count": 2, "sum": 2, "event_count": 2, "date": DAY}
    changes = table(spark, declared_columns(WINDOW_CHANGES.name, config), [
        {**base, "window_start": at(DAY, 9, 3, 7), "window_end": at(DAY, 9, 40, 1)},
        {**base, "window_start": at(DAY, 10, 11), "window_end": at(DAY, 11, 2, 30)},
        {**base, "key": "elsewhere", "window_start": at(DAY, 23, 50), "window_end": at(NEXT, 0, 20)},
    ])
    result = validation.run_suite(changes, changes_checks.prepare(changes, None, config),
                                  changes_checks.suite(config), [DAY])
    failing = {check for check, by_day in result.items() if not by_day[DAY].passed}
    assert failing == {"window_ends_inside_partition"}
    assert keys_in(result["window_ends_inside_partition"][DAY]) == {"elsewhere"}
