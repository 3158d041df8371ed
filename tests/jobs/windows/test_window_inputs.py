"""jobs.windows.window_inputs' read plan: pure arithmetic, so it is tested without Spark, against
the window grid itself (``WindowSpec.enter_end``, ``leave_end``, ``window_start``) over random
windows of every kind."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest

from jobs.windows import window_inputs
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.run_interval import RunInterval, refuse_below_a_day
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

INVERTIBLE = (aggregation("count"), aggregation("sum"))
WITH_MIN = (*INVERTIBLE, aggregation("min"))  # a non-invertible kind: tiles and exact frames


def random_window(rng: random.Random) -> WindowSpec:
    """Sliding, tumbling, gapped or cumulating; minutes to weeks; any offset on the bucket grid."""
    bucket = rng.choice([60, 300, 3600])
    length = bucket * rng.choice({60: [1, 5, 30, 120, 1440], 300: [1, 12, 36, 288, 576],
                                  3600: [1, 12, 24, 36, 96, 168, 336]}[bucket])
    offset = bucket * rng.randrange(0, 48)
    kind = rng.choice(["sliding", "tumbling", "gapped", "cumulating"])
    if kind == "cumulating":
        steps = [s for s in range(bucket, length + 1, bucket) if length % s == 0]
        return WindowSpec.of("w", length, offset=offset, bucket=bucket, step=rng.choice(steps))
    every = {"sliding": bucket * rng.choice([1, 2, 3, 10]), "tumbling": length,
             "gapped": length + bucket * rng.choice([1, 7])}[kind]
    return WindowSpec.of("w", length, min(every, length) if kind == "sliding" else every, offset, bucket)


def covered(intervals: list[tuple[int, int]], start: int, stop: int) -> bool:
    """Whether the union of ``[a, b)`` intervals holds all of ``[start, stop)``."""
    for a, b in sorted(intervals):
        if a <= start < b:
            start = b
        if start >= stop:
            return True
    return start >= stop


CASES = [(seed, rng.choice([INVERTIBLE, WITH_MIN]), date(2025, 1, 20) + timedelta(days=rng.randrange(20)),
          rng.randrange(3)) for seed, rng in ((s, random.Random(s)) for s in range(200))]


@pytest.mark.parametrize("seed, aggregations, first, extra_days", CASES)
def test_the_plan_reads_every_frame_each_window_of_the_run_needs(seed, aggregations, first, extra_days):
    spec = random_window(random.Random(f"window {seed}"))
    config = PipelineConfig(windows=(spec,), aggregations=aggregations, bucket=spec.bucket)
    last = first + timedelta(days=extra_days)
    plan = window_inputs.ReadPlan(spec, config, first, last)
    start, stop = day_start(first), day_start(last) + DAY_SECONDS
    ends = list(spec.ends_between(start, stop))

    # the run's ends are exactly those in its days; ``after`` is the last end before them
    assert ends == list(range(plan.after + spec.every, plan.last_end + 1, spec.every)), spec
    assert plan.after < start <= plan.after + spec.every and plan.last_end < stop

    # every frame entering (or, sliding, leaving) a window at one of the run's ends is read as a delta
    grid = range(plan.after - spec.length - spec.every - spec.bucket, plan.last_end + spec.bucket, spec.bucket)
    needed = [f for f in grid if plan.after < spec.enter_end(f) <= plan.last_end
              or (not spec.cumulating and plan.after < spec.leave_end(f) <= plan.last_end)]
    assert all(covered(plan.delta_ranges, f, f + spec.bucket) for f in needed), spec

    # the baseline is the window at ``after``: deltas continue from its state
    assert plan.baseline_window == (spec.window_start(plan.after), plan.after)

    # a non-invertible aggregation folds each window whole, the baseline's at ``after`` too (the
    # run's first change is told from it): its frames, or its whole days as tiles
    if aggregations is WITH_MIN:
        days = [(day_start(date.fromisoformat(d)), day_start(date.fromisoformat(d)) + DAY_SECONDS)
                for d in plan.tile_days]
        for end in [plan.after, *ends]:
            assert covered(plan.exact_ranges + days, spec.window_start(end), end), (spec, end)
    else:
        assert plan.exact_ranges == [] and plan.tile_days == []


@pytest.mark.parametrize("day", [date(2025, 1, 27) + timedelta(days=i) for i in range(8)])
def test_a_weekly_cumulating_window_with_min_reads_day_tiles_not_the_week_of_frames(day):
    # "this week's lowest value so far, every hour", weeks from Monday 2025-01-27 00:00 UTC: a
    # daily run's ends merge the period before them, so the plan reads the period's whole days
    # before the day holding the last end before the run (23:00) as day tiles, and frames only
    # of that day and the run's: at most 6 tiles and 2 days of frames, never the week's frames.
    #
    #   run on Sun 2nd:  Mon  Tue  Wed  Thu  Fri  | Sat     | Sun
    #                    [tile][tile][tile][tile][tile] frames  frames (the run)
    #   run on Mon 3rd:  Mon .. Sat as 6 tiles | Sun frames (23:00 is the last week's end) | Mon frames
    config = PipelineConfig.from_dict({"windows": {"week": {"length": "7d", "step": "1h",
                                                            "align_to": "2025-01-27T00:00:00Z"}},
                                       "aggregations": {"low": "min"}})
    spec = config.windows[0]
    plan = window_inputs.ReadPlan(spec, config, day, day)
    frame_days = window_inputs.days_of(*plan.frame_ranges)
    assert set(frame_days) == {(day - timedelta(days=1)).isoformat(), day.isoformat()}
    before = day - timedelta(days=1)  # the day of the last end before the run
    monday = before - timedelta(days=before.weekday())  # its week's start
    tiles = [(monday + timedelta(days=i)).isoformat() for i in range((before - monday).days)]
    assert plan.tile_days == tiles
    assert len(plan.tile_days) <= 6


@pytest.mark.parametrize("seed", range(100))
def test_a_day_cut_into_parts_emits_each_of_its_ends_once_and_its_snapshot_once(seed):
    """Runs of a day's parts (``interval``, cut at random buckets) together emit exactly the ends
    of the day's run, each once, from the same baseline; exactly one part writes a window's
    snapshot of the day, the one holding its last end; each part reads frames only up to its
    own last end."""
    rng = random.Random(f"cuts {seed}")
    spec = random_window(rng)
    aggregations = rng.choice([INVERTIBLE, WITH_MIN])
    config = PipelineConfig(windows=(spec,), aggregations=aggregations, bucket=spec.bucket)
    day = date(2025, 1, 20) + timedelta(days=rng.randrange(20))
    whole = window_inputs.ReadPlan(spec, config, day, day)
    start = day_start(day)
    if spec.every > DAY_SECONDS:
        with pytest.raises(ValueError, match="ends less often than daily: it runs by whole days"):
            refuse_below_a_day(config, "windows", RunInterval.of_seconds(start, start + DAY_SECONDS))
        return
    cuts = sorted(rng.sample(range(spec.bucket, DAY_SECONDS, spec.bucket), rng.randrange(1, 5)))
    bounds = [start, *(start + c for c in cuts), start + DAY_SECONDS]
    parts = [window_inputs.ReadPlan(spec, config, day, day, RunInterval.of_seconds(a, b))
             for a, b in zip(bounds, bounds[1:])]

    emitted = [e for p in parts for e in range(p.first_end, p.last_end + 1, spec.every)]
    assert emitted == list(range(whole.first_end, whole.last_end + 1, spec.every)), (spec, cuts)
    assert all(p.after == whole.after and p.baseline_window == whole.baseline_window for p in parts)
    assert [p.ends_day for p in parts].count(True) == 1 and whole.ends_day
    assert all(stop <= p.last_end for p in parts for _, stop in p.delta_ranges + p.exact_ranges)
    # Continuing from the state the part before left at its last end (``carried``): the same
    # ends, from the end just before the part, reading frames only from one window before it.
    for k, (part, (a, b)) in enumerate(zip(parts, zip(bounds, bounds[1:]))):
        carried = window_inputs.ReadPlan(spec, config, day, day, RunInterval.of_seconds(a, b), carried=True)
        assert (carried.first_end, carried.last_end, carried.ends_day) == (part.first_end, part.last_end, part.ends_day)
        emitted_before = [p.last_end for p in parts[:k] if p.first_end <= p.last_end]
        assert carried.after == max(emitted_before, default=whole.after), (spec, cuts, k)
        assert all(start >= carried.after - spec.length for start, _ in carried.delta_ranges)
