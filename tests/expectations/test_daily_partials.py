"""``daily_partials``' checks: each fails on a tile corrupted for it, on that day only, and tiles
equal the sums of their frames."""

from dataclasses import replace

import pytest

from expectations import daily_partials as tiles_checks
from expectations import validation
from expectations.catalog import checks_of
from expectations.daily_partials import tiles_match_minute_partials
from jobs.tables import DAILY_PARTIALS, declared_columns
from tests.expectations.frames import DAY, DAYS, NEXT, SUITE_CONFIG, at, keys_in, needs_rich, partials, table
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

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
    frame = table(spark, declared_columns(DAILY_PARTIALS.name, SUITE_CONFIG), rows)
    return validation.run_suite(frame, frame, tiles_checks.suite(SUITE_CONFIG), DAYS)


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
    sliding_over_tiles = replace(SUITE_CONFIG, windows=(*SUITE_CONFIG.windows, WindowSpec.of("1d", "1d", "1h")))
    assert {c.name for c in checks_of(sliding_over_tiles, DAILY_PARTIALS.name)} == covered
    assert checks_of(SUITE_CONFIG, DAILY_PARTIALS.name) == []


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
    outcome = tiles_match_minute_partials(stored, frames, config, [DAY])[DAY]
    assert outcome.passed == (not differing)
    assert {r["key"] for r in outcome.metadata.get("sample_rows", [])} == differing
