"""Great Expectations suites: each check fails on a table corrupted for it, on that day only.

One small table per asset holds, on DAY, a correct key and one corrupted key per check, and on
NEXT only correct rows. The suite runs once over both days (as a range run does), so each test
also shows the failing day is told apart from the passing one.
"""

from dataclasses import replace

import pytest

from expectations import suites, validation
from expectations.catalog import checks_of
from jobs.tables import (
    DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns,
)
from tests.expectations.frames import BEFORE, DAY, NEXT, at, table
from windowing_core.aggregations import AGGREGATIONS, Custom, aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

RICH = all(kind in AGGREGATIONS for kind in ("mean", "min", "max", "var_pop"))
AGGS = [("count", "count"), ("sum", "sum")] + (
    [("mean", "avg"), ("min", "low"), ("max", "high"), ("var_pop", "spread")] if RICH else [])
CONFIG = PipelineConfig(
    windows=(WindowSpec.of("1h", "1h", "15m"), WindowSpec.of("6h", "6h", emit="final")),
    aggregations=(*(aggregation(kind, name) for kind, name in AGGS),  # and a user's own, checked as any other
                  Custom("ratio", {"s": "sum(value)", "n": "count(*)"}, "s / nullif(n, 0)")),
)
DAYS = [DAY, NEXT]
needs_rich = pytest.mark.skipif(not RICH, reason="mean, min, max and var_pop are not in the algebra yet")


def keys_in(outcome) -> set:
    return {row.get("key") for row in outcome.metadata.get("sample_rows", [])}


# -- minute_partials ------------------------------------------------------------------------------

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
    frame = table(spark, declared_columns(MINUTE_PARTIALS.name, CONFIG), rows)
    return validation.run_suite(frame, suites.prepare_minute_partials(frame, CONFIG),
                                suites.minute_partials_suite(CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, PARTIALS[c]) for c in PARTIALS])
def test_partial_check_fails_on_the_corrupted_day_only(partials_results, check, corrupted):
    outcome = partials_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert partials_results[check][NEXT].passed
    assert partials_results[check][NEXT].metadata["rows_checked"] == 1


def test_every_partial_check_has_a_corruption_test(partials_results):
    assert {c.name for c in checks_of(CONFIG, MINUTE_PARTIALS.name)} - set(partials_results) == {
        "partials_count_accepted_events"}  # a reconciliation, tested in test_reconciliation
    assert set(PARTIALS) | {"schema_matches_declared"} == set(partials_results)


# -- daily_partials -------------------------------------------------------------------------------

TILES = {
    "keys_not_null": {"key": None},
    "tiles_unique": {"key": "twice"},
    "counts_non_negative": {"key": "negative", "event_count": -2},
    "sums_non_negative": {"key": "negsum", "sum__s": -3},
}


@pytest.fixture(scope="module")
def tiles_results(spark):
    rows = [{"key": "good", "event_date": DAY}, *[{"event_date": DAY, **change} for change in TILES.values()],
            {"key": "twice", "event_date": DAY}, {"key": "tomorrow", "event_date": NEXT}]
    frame = table(spark, declared_columns(DAILY_PARTIALS.name, CONFIG), rows)
    return validation.run_suite(frame, frame, suites.daily_partials_suite(CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, TILES[c]) for c in TILES])
def test_tile_check_fails_on_the_corrupted_day_only(tiles_results, check, corrupted):
    outcome = tiles_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert tiles_results[check][NEXT].passed


@needs_rich
def test_every_tile_check_has_a_corruption_test(tiles_results):
    covered = set(TILES) | {"schema_matches_declared", "tiles_match_minute_partials"}
    # the tiles are kept (and checked) only where min or max slides over a window of a day or more
    sliding_over_tiles = replace(CONFIG, windows=(*CONFIG.windows, WindowSpec.of("1d", "1d", "1h")))
    assert {c.name for c in checks_of(sliding_over_tiles, DAILY_PARTIALS.name)} == covered
    assert checks_of(CONFIG, DAILY_PARTIALS.name) == []


# -- window_changes -------------------------------------------------------------------------------

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
    frame = table(spark, declared_columns(WINDOW_CHANGES.name, CONFIG), rows)
    return validation.run_suite(frame, suites.prepare_window_changes(frame, None, CONFIG),
                                suites.window_changes_suite(CONFIG), DAYS)


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
    assert {c.name for c in checks_of(CONFIG, WINDOW_CHANGES.name)} == covered


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
    result = validation.run_suite(changes, suites.prepare_window_changes(changes, snapshot, config, {"1h"}),
                                  suites.window_changes_suite(config), [DAY], {"no_repeated_change_points"})
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
    result = validation.run_suite(changes, suites.prepare_window_changes(changes, None, config),
                                  suites.window_changes_suite(config), [DAY])
    failing = {check for check, by_day in result.items() if not by_day[DAY].passed}
    assert failing == {"window_ends_inside_partition"}
    assert keys_in(result["window_ends_inside_partition"][DAY]) == {"elsewhere"}


# -- window_snapshot ------------------------------------------------------------------------------

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
    frame = table(spark, declared_columns(WINDOW_SNAPSHOT.name, CONFIG), rows)
    return validation.run_suite(frame, suites.prepare_window_snapshot(frame, CONFIG, DAYS),
                                suites.window_snapshot_suite(CONFIG), DAYS)


@pytest.mark.parametrize("check, corrupted", [(c, SNAPSHOT[c]) for c in SNAPSHOT])
def test_snapshot_check_fails_on_the_corrupted_day_only(snapshot_results, check, corrupted):
    outcome = snapshot_results[check][DAY]
    assert not outcome.passed
    assert corrupted["key"] in keys_in(outcome)
    assert "good" not in keys_in(outcome)
    assert snapshot_results[check][NEXT].passed


def test_every_snapshot_check_has_a_corruption_test(snapshot_results):
    covered = set(SNAPSHOT) | {"schema_matches_declared", "snapshot_matches_last_change"}
    assert {c.name for c in checks_of(CONFIG, WINDOW_SNAPSHOT.name)} == covered


# -- schema ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["renamed", "retyped", "reordered", "extra"])
def test_schema_matches_declared_fails_on_a_changed_schema(spark, change):
    declared = declared_columns(WINDOW_CHANGES.name, CONFIG)
    columns = {
        "renamed": [("user", "string"), *declared[1:]],
        "retyped": [(n, "string" if n == "count" else t) for n, t in declared],
        "reordered": [declared[1], declared[0], *declared[2:]],
        "extra": [*declared[:-1], ("debug", "string"), declared[-1]],
    }[change]
    suite = suites.window_changes_suite(CONFIG)
    assert validation.schema_outcome(table(spark, declared, []), suite).passed
    outcome = validation.schema_outcome(table(spark, columns, []), suite)
    assert not outcome.passed
    assert outcome.metadata["actual"] == [f"{n} {t}" for n, t in columns]


def test_derived_columns_are_not_part_of_the_schema(spark):
    """The schema is judged on the table as read, not on the frame the row checks see."""
    frame = table(spark, declared_columns(MINUTE_PARTIALS.name, CONFIG),
                  [{"key": "a", "frame_start": at(DAY, 1), "event_date": DAY}])
    result = validation.run_suite(frame, suites.prepare_minute_partials(frame, CONFIG),
                                  suites.minute_partials_suite(CONFIG), [DAY], {"schema_matches_declared"})
    assert result["schema_matches_declared"][DAY].passed


def test_catalog_names_are_predicates_and_unique_per_table():
    for table_name in (MINUTE_PARTIALS.name, WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
        names = [c.name for c in checks_of(CONFIG, table_name)]
        assert len(names) == len(set(names))
    only_counts = replace(CONFIG, aggregations=(aggregation("count"),))
    assert "sums_non_negative" not in {c.name for c in checks_of(only_counts, WINDOW_CHANGES.name)}
    assert "mean_between_min_and_max" not in {c.name for c in checks_of(only_counts, WINDOW_SNAPSHOT.name)}


def test_values_not_after_row_time_fails_a_value_read_from_after_its_row(spark):
    """A row whose window ends after its ts (or, exclusive, at it) or whose value was read from a
    row after that end fails; the rows that read at or before their ts pass."""
    from datetime import date, datetime

    from expectations.suites import prepare_spine_values, spine_values_suite
    from expectations.validation import run_suite
    from jobs.point_in_time_join import readings
    from windowing_core.spine import SpineSpec
    from windowing_core.window_spec import WindowSpec

    day = date(2025, 1, 28)
    t = lambda h, m=0: datetime(2025, 1, 28, h, m)  # noqa: E731
    #   ts 12:00   window_end   read_at
    #   ok         12:00        11:50
    #   leak       12:10        -          the window read ends after ts
    #   leak       12:00        12:05      the row it came from is after the window's end
    rows = [("k", t(12), t(12), t(11, 50)), ("k", t(12), t(12, 10), None), ("k", t(12), t(12), t(12, 5))]
    for exclusive, failing in ((False, 2), (True, 3)):
        config = PipelineConfig(windows=(WindowSpec.of("w", "1h", "10m"),), spine=SpineSpec(path="/s", exclusive=exclusive))
        values = spark.createDataFrame([(*r, 1, 1, day) for r in rows],
                                       "user_id string, ts timestamp, w__window_end timestamp, w__read_at timestamp, "
                                       "w__event_count bigint, w__count bigint, date date")
        spine = config.spine
        outcome = run_suite(values, prepare_spine_values(values, spine, readings(spine, config)),
                            spine_values_suite(spine), [day], {"values_not_after_row_time"})
        outcome = outcome["values_not_after_row_time"][day]
        assert not outcome.passed and outcome.metadata["unexpected_rows"] == failing, exclusive
        clean = spark.createDataFrame([("k", t(12), t(11, 50), t(11, 40), 1, 1, day)], values.schema)
        assert run_suite(clean, prepare_spine_values(clean, spine, readings(spine, config)), spine_values_suite(spine),
                         [day], {"values_not_after_row_time"})["values_not_after_row_time"][day].passed


# -- Chronon's kinds: lists and maps --------------------------------------------------------------

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
        return request.param, validation.run_suite(frame, suites.prepare_window_changes(frame, None, KINDS_CONFIG),
                                                   suites.window_changes_suite(KINDS_CONFIG), DAYS)
    return request.param, validation.run_suite(frame, suites.prepare_window_snapshot(frame, KINDS_CONFIG, DAYS),
                                               suites.window_snapshot_suite(KINDS_CONFIG), DAYS)


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
    result = validation.run_suite(frame, suites.prepare_window_changes(frame, None, config),
                                  suites.window_changes_suite(config), [DAY], {"histogram_counts_match_events"})
    assert keys_in(result["histogram_counts_match_events"][DAY]) == {"over"}


# -- typed fields (issue 29) ----------------------------------------------------------------------

TYPED = PipelineConfig.from_dict({
    "fields": {"amount": "decimal(12,2)", "page": "string"},
    "windows": {"1h": {"length": "1h", "slide": "15m"}},
    "aggregations": {"pages": {"kind": "count", "field": "page"}, "revenue": {"kind": "sum", "field": "amount"}},
})


def test_quarantine_reasons_must_be_ones_ingest_gives_naming_the_field(spark):
    rows = [{"reason": "amount_beyond_scale", "arrival_date": DAY},
            {"reason": "value_not_integer", "source_file": "old.json", "arrival_date": DAY},  # no field value
            {"reason": "page_not_string", "arrival_date": NEXT}, {"reason": "malformed_json", "arrival_date": NEXT}]
    frame = table(spark, declared_columns(QUARANTINE.name, TYPED), rows)
    results = validation.run_suite(frame, frame, suites.quarantine_suite(TYPED), DAYS)
    assert not results["quarantine_reasons_known"][DAY].passed
    assert results["quarantine_reasons_known"][NEXT].passed
    assert {c.name for c in checks_of(TYPED, QUARANTINE.name)} == {"quarantine_reasons_known",
                                                                  "quarantine_share_below_limit"}


@pytest.mark.parametrize("table_name", [WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name])
def test_a_count_of_a_field_above_the_window_event_count_fails(spark, table_name):
    rows = [{"key": "good", "event_count": 3, "pages": 2, "date": DAY},
            {"key": "over", "event_count": 1, "pages": 2, "date": DAY},
            {"key": "good", "event_count": 2, "pages": 2, "date": NEXT}]
    frame = table(spark, declared_columns(table_name, TYPED), rows)
    suite = (suites.window_changes_suite if table_name == WINDOW_CHANGES.name else suites.window_snapshot_suite)(TYPED)
    results = validation.run_suite(frame, frame, suite, DAYS, {"counts_within_event_count"})
    assert not results["counts_within_event_count"][DAY].passed
    assert "over" in keys_in(results["counts_within_event_count"][DAY])
    assert results["counts_within_event_count"][NEXT].passed
    assert "counts_within_event_count" in {c.name for c in checks_of(TYPED, table_name)}
    assert "counts_within_event_count" not in {c.name for c in checks_of(CONFIG, table_name)}  # value is never null


def test_schema_matches_declared_tells_a_decimal_scale_and_a_field_type(spark):
    declared = declared_columns(WINDOW_CHANGES.name, TYPED)
    rescaled = [(n, "decimal(38,0)" if n == "revenue" else t) for n, t in declared]
    suite = suites.window_changes_suite(TYPED)
    assert validation.schema_outcome(table(spark, declared, []), suite).passed
    assert not validation.schema_outcome(table(spark, rescaled, []), suite).passed
    events = declared_columns(EVENTS.name, TYPED)
    assert ("amount", "decimal(12,2)") in events and ("page", "string") in events
    retyped = [(n, "double" if n == "amount" else t) for n, t in events]
    assert validation.schema_outcome(table(spark, events, []), suites.events_suite(TYPED)).passed
    assert not validation.schema_outcome(table(spark, retyped, []), suites.events_suite(TYPED)).passed
