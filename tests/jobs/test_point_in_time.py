"""Point-in-time reads from change points and snapshots equal the oracle at random instants."""

import random
from datetime import datetime, timedelta, timezone

from jobs import sliding_windows
from jobs.point_in_time import values_as_of
from tests.jobs.test_pipeline_against_oracle import FIRST, run_pipeline
from tests.landing import random_landing
from windowing_core import reference
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec, to_epoch_seconds

CONFIG = PipelineConfig(
    windows=(WindowSpec.of("2d", "2d", "1m"), WindowSpec.of("6h", "6h", emit="final")),
    aggregations=(aggregation("count"), aggregation("sum"), aggregation("max")),
)


def test_values_as_of_any_instant_equal_a_brute_force_fold(spark, tmp_path):
    landing = random_landing(tmp_path / "landing", 3, FIRST, 3)
    lake = str(tmp_path / "lake")
    run_pipeline(spark, tmp_path / "landing", lake, CONFIG, window_days=(FIRST, FIRST + timedelta(days=4)),
                 day_by_day=False)
    timelines = reference._timelines(landing.events, CONFIG)
    rng = random.Random(1)
    start = datetime(FIRST.year, FIRST.month, FIRST.day, tzinfo=timezone.utc)
    instants = [start + timedelta(days=1, seconds=rng.randrange(3 * 86400)) for _ in range(4)]
    for moment in instants + [start + timedelta(days=2)]:  # and exactly on a day boundary
        got = {(r.key, r.window): (r["count"], r["sum"], r["max"])
               for r in values_as_of(spark, lake, moment, CONFIG).collect()}
        expected = {}
        for spec in CONFIG.windows:
            end = spec.end_at_or_before(to_epoch_seconds(moment))
            for key, timeline in timelines.items():
                value = reference.window_value(timeline, spec, CONFIG, end)
                if value[0]:
                    expected[(key, spec.name)] = value
        assert got == expected, moment
        assert got, "the instants must fall where keys have values"
    # read exactly at the instant (precision: event): the sliding 2d window holds the events of
    # [t - 2d, t); the final 6h window is read as above
    moment = instants[0]
    got = {(r.key, r.window): (r.window_end.replace(tzinfo=timezone.utc), r["count"], r["sum"], r["max"])
           for r in values_as_of(spark, lake, moment, CONFIG, precision="event").collect() if r.window == "2d"}
    exact = reference.values_at_instant(landing.events, CONFIG, [(k, moment) for k in sorted(timelines)])
    assert got == {(k, "2d"): (moment, *answer["2d"][2])
                   for k, answer in zip(sorted(timelines), exact) if answer["2d"][1]}
    assert got, "the instant must fall where keys have values"


def test_values_for_one_key(spark, tmp_path):
    random_landing(tmp_path / "landing", 4, FIRST, 2)
    lake = str(tmp_path / "lake")
    run_pipeline(spark, tmp_path / "landing", lake, CONFIG, window_days=(FIRST, FIRST + timedelta(days=2)),
                 day_by_day=False)
    moment = datetime.combine(FIRST + timedelta(days=1), datetime.min.time(), timezone.utc) + timedelta(hours=13)
    rows = values_as_of(spark, lake, moment, CONFIG, keys=["k1"]).collect()
    assert {r.key for r in rows} == {"k1"}
    assert {r.window for r in rows} <= {"2d", "6h"}


def test_a_redefined_window_is_not_answered_from_the_snapshot_of_its_old_definition(spark, tmp_path):
    """The window ``w`` was 1 day long until FIRST + 1 and 2 days from FIRST + 2: on that day
    its values come from its own change points only, never from the 1-day state of the day
    before (a key before its first change point of the day is not answered)."""
    landing = random_landing(tmp_path / "landing", 3, FIRST, 3)
    lake = str(tmp_path / "lake")
    old = PipelineConfig(windows=(WindowSpec.of("w", "1d", "10m"),))
    new = PipelineConfig(windows=(WindowSpec.of("w", "2d", "10m"),))
    run_pipeline(spark, tmp_path / "landing", lake, old, window_days=(FIRST, FIRST + timedelta(days=1)),
                 day_by_day=True)
    day = FIRST + timedelta(days=2)
    sliding_windows.run(spark, lake, day, day, new)
    timelines = reference._timelines(landing.events, new)
    spec = new.windows[0]
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    answered = 0
    for moment in (start + timedelta(minutes=m) for m in (0, 10, 20, 30, 60, 120)):
        got = {r.key: (r["count"], r["sum"]) for r in values_as_of(spark, lake, moment, new).collect()}
        end = spec.end_at_or_before(to_epoch_seconds(moment))
        expected = {key: value for key, timeline in timelines.items()
                    if (value := reference.window_value(timeline, spec, new, end))[0]}
        assert got.items() <= expected.items(), moment
        answered += len(got)
    assert answered, "some keys must change on the day"
