"""expectations.conservation: a sample of keys' change points recomputed from the minute frames."""

from __future__ import annotations

import pytest

from expectations import conservation
from expectations.conservation import RangeFold, expected_rows, range_folded_values
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES, declared_columns
from tests.expectations.frames import BEFORE, CONFIG, DAY, NEXT, WINDOW, at, table
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec, to_epoch_seconds

# A 1h window sliding every 30 minutes; key k has two one-minute frames on DAY:
#
#   frames         10:05 (value 3)      10:40 (value 2)
#   10:30  [09:30, 10:30)  |--x--|                            -> (1, 3)
#   11:00  [10:00, 11:00)  |----x-----x----|                  -> (2, 5)
#   11:30  [10:30, 11:30)           |-----x----|              -> (1, 2)
#   12:00  [11:00, 12:00)                      |----|         -> (0, 0)  the step back to empty
TRUE_CHANGES = {(10, 30): (1, 3), (11, 0): (2, 5), (11, 30): (1, 2), (12, 0): (0, 0)}


def frames_of_k(spark):
    return table(spark, declared_columns(MINUTE_PARTIALS.name, CONFIG), [
        {"key": "k", "frame_start": at(DAY, 10, 5), "event_count": 1, "count__n": 1, "sum__s": 3, "event_date": DAY},
        {"key": "k", "frame_start": at(DAY, 10, 40), "event_count": 1, "count__n": 1, "sum__s": 2, "event_date": DAY},
    ])


def changes_of_k(spark, points: dict):
    return table(spark, declared_columns(WINDOW_CHANGES.name, CONFIG), [
        {"key": "k", "window": "1h", "window_start": at(DAY, hh - 1, mm), "window_end": at(DAY, hh, mm),
         "event_count": count, "count": count, "sum": total, "date": DAY}
        for (hh, mm), (count, total) in points.items()])


def test_expected_rows_recomputes_the_drawn_change_points():
    frames = [(to_epoch_seconds(at(DAY, 10, 5)), ((1,), (3,))),  # (start, (count partial, sum partial))
              (to_epoch_seconds(at(DAY, 10, 40)), ((1,), (2,)))]
    rows = expected_rows(range_folded_values(frames, WINDOW, list(CONFIG.aggregations)), WINDOW, DAY)
    assert rows == {to_epoch_seconds(at(DAY, hh, mm)): v for (hh, mm), v in TRUE_CHANGES.items()}


def test_range_fold_keeps_order_for_any_run():
    tree = RangeFold(list("abcdefg"), lambda x, y: x + y, "")
    assert all(tree.fold(lo, hi) == "abcdefg"[lo:hi] for lo in range(8) for hi in range(lo, 8))


def test_the_key_sample_is_the_smallest_hashes_whatever_the_threshold(spark):
    """Sampling below a hash threshold (raised where a day falls short) picks the keys a full
    ranking of every key by hash picks."""
    from pyspark.sql import functions as F

    days = [DAY, NEXT]
    changes = spark.createDataFrame(  # every key but each third changes on DAY, each second on NEXT
        [(d, f"k{i}") for i in range(600) for d, every in ((DAY, 3), (NEXT, 2)) if i % every]
        + [(DAY, "k1")], "date date, key string")  # a key's second change point the same day
    partials = spark.createDataFrame([(f"k{i}", BEFORE) for i in range(700)], "key string, event_date date")
    hashed = F.xxhash64("key", F.col("date").cast("string")).alias("hash")
    changed = {(r["date"], r["hash"], r["key"]) for r in changes.select("date", "key", hashed).collect()}
    active = {(d, k) for d in days for k in (f"k{i}" for i in range(700))}
    every_key = spark.createDataFrame(sorted(active), "date date, key string").select("date", "key", hashed).collect()
    quiet = {(r["date"], r["hash"], r["key"]) for r in every_key} - changed
    expected = {d: [k for _, _, k in sorted(x for x in changed if x[0] == d)[:8]]
                + [k for _, _, k in sorted(x for x in quiet if x[0] == d)[:4]] for d in days}

    for oversample in (64, 4, 1, 0.01):  # 0.01: every day short at first, the threshold raised twice or more
        assert conservation.sampled_keys(changes, partials, days, 2, 8, oversample) == expected, oversample


def test_changes_conserve_frames_passes_on_the_true_change_points(spark):
    outcome = conservation.changes_conserve_frames(changes_of_k(spark, TRUE_CHANGES), frames_of_k(spark),
                                                     CONFIG, [DAY])[DAY]
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["keys_checked"] == 1


@pytest.mark.parametrize("oversample", [64, 0.01])  # the rows collected at once; a threshold's pass
@pytest.mark.parametrize("broken, problem", [
    ({**TRUE_CHANGES, (11, 0): (2, 6)}, "value differs from the frames"),
    ({k: v for k, v in TRUE_CHANGES.items() if k != (12, 0)}, "missing change point"),
    ({**TRUE_CHANGES, (13, 0): (0, 0)}, "change point where the value does not change"),
])
def test_changes_conserve_frames_fails_on_drifted_change_points(spark, broken, problem, oversample):
    outcome = conservation.changes_conserve_frames(changes_of_k(spark, broken), frames_of_k(spark),
                                                     CONFIG, [DAY], oversample=oversample)[DAY]
    assert not outcome.passed
    assert [r["problem"] for r in outcome.metadata["sample_rows"]] == [problem]


def test_below_a_day_a_window_end_at_or_after_the_judged_partitions_end_is_not_judged_yet(spark):
    """Partitions up to 11:00 judged (``until``): the change points at 11:00 and after belong to
    partitions not run yet, while a missing one before it is still caught."""
    until = at(DAY, 11, 0)
    judged = {end: value for end, value in TRUE_CHANGES.items() if end < (11, 0)}
    outcome = conservation.changes_conserve_frames(changes_of_k(spark, judged), frames_of_k(spark), CONFIG, [DAY],
                                                   until=until)[DAY]
    assert outcome.passed, outcome.metadata
    outcome = conservation.changes_conserve_frames(changes_of_k(spark, {}), frames_of_k(spark), CONFIG, [DAY],
                                                   until=until)[DAY]
    assert [r["window_end"] for r in outcome.metadata["sample_rows"]] == [at(DAY, 10, 30).isoformat()]


def test_changes_conserve_frames_finds_a_key_whose_change_points_are_all_missing(spark):
    outcome = conservation.changes_conserve_frames(changes_of_k(spark, {}), frames_of_k(spark), CONFIG,
                                                     [DAY])[DAY]
    assert not outcome.passed
    assert outcome.metadata["mismatches"] == 4


@pytest.mark.parametrize("rows, problem", [
    ({(11, 0): (2, 5)}, None),
    ({(11, 0): (2, 5), (12, 0): (0, 0)}, "row for a window without events"),
    ({}, "missing row"),
])
def test_a_final_window_has_one_row_per_closed_window_that_held_events(spark, rows, problem):
    """Tumbling 1h, emit final: both frames (10:05, 10:40) are in [10:00, 11:00): one row at 11:00."""
    final = PipelineConfig(windows=(WindowSpec.of("1h", "1h", emit="final"),),
                           aggregations=CONFIG.aggregations)
    changes = table(spark, declared_columns(WINDOW_CHANGES.name, final), [
        {"key": "k", "window": "1h", "window_start": at(DAY, hh - 1, mm), "window_end": at(DAY, hh, mm),
         "count": n, "sum": s, "date": DAY} for (hh, mm), (n, s) in rows.items()])
    outcome = conservation.changes_conserve_frames(changes, frames_of_k(spark), final, [DAY])[DAY]
    assert outcome.passed == (problem is None)
    assert [r["problem"] for r in outcome.metadata.get("sample_rows", [])] == ([problem] if problem else [])


# -- snapshot_matches_last_change -----------------------------------------------------------------
