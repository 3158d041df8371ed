"""Processing-time windows (``time: arrival``) through every Spark job, against the oracle."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import pytest

from jobs.storage import delta_io
from jobs.tables import ARRIVAL_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.jobs.test_pipeline_against_oracle import (
    EVERY_AGGREGATION, SOME_TYPED_AGGREGATIONS, _rows, assert_rows_equal, expected_changes, fields_of, run_pipeline,
)
from tests.landing import random_landing
from windowing_core import arrival, reference
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
EVENT_DAYS = 3

CASES = [
    # seed, aggregations, day by day
    (51, None, True),
    (52, EVERY_AGGREGATION, False),
    (53, SOME_TYPED_AGGREGATIONS, False),  # typed fields
]


@pytest.mark.parametrize("seed, aggregations, day_by_day", CASES)
def test_arrival_windows_equal_the_oracle_beside_event_time_windows(spark, tmp_path, seed, aggregations,
                                                                   day_by_day):
    """Event-time and arrival-time windows side by side over records arriving up to three days
    late, with duplicates: each equals its oracle, in daily and in range runs.

        event time:    1h sliding every 10m over event_time
        arrival time:  the same over arrival_time, and 1d tumbling 'final' rows by arrival day
    """
    config = PipelineConfig(
        windows=(WindowSpec.of("ev1h", "1h", "10m"), WindowSpec.of("ar1h", "1h", "10m", time="arrival"),
                 WindowSpec.of("ar1d", "1d", emit="final", time="arrival")),
        aggregations=aggregations or PipelineConfig().aggregations, fields=fields_of(aggregations))
    landing = random_landing(tmp_path / "landing", seed, FIRST, EVENT_DAYS, events_per_day=25,
                             fields=dict(config.fields) or None)
    lakehouse = str(tmp_path / "lakehouse")
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 2))
    run_pipeline(spark, tmp_path / "landing", lakehouse, config, window_days=window_days, day_by_day=day_by_day)

    names = [a.name for a in config.aggregations]
    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end", *names)
    event_only = replace(config, windows=config.windows[:1])
    expected = expected_changes(landing.events, event_only, *window_days) + sorted(
        (r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
        for r in arrival.window_changes(landing.events, config, *window_days))
    assert_rows_equal(changes, sorted(expected), config, lead=3)
    assert any(r[1] == "ar1d" for r in changes) and any(r[1] == "ar1h" for r in changes)

    snapshots = _rows(spark, WINDOW_SNAPSHOT.path(lakehouse), "key", "window", "date", *names)
    expected_snapshots = []
    for i in range((window_days[1] - window_days[0]).days + 1):
        day = window_days[0] + timedelta(days=i)
        for source in (reference.snapshot(landing.events, event_only, day), arrival.snapshot(landing.events, config, day)):
            expected_snapshots += [(key, window, day, *values) for (window, key), values in source.items()]
    assert_rows_equal(snapshots, sorted(expected_snapshots), config, lead=3)

    by_arrival = delta_io.read_table(spark, ARRIVAL_PARTIALS.path(lakehouse))
    assert by_arrival.groupBy().sum("event_count").first()[0] == len(reference.accepted_events(landing.events, config))


def test_bad_time_names_the_field():
    with pytest.raises(ValueError, match=r"windows\.w\.time must be 'event' or 'arrival', got 'wall'"):
        PipelineConfig.from_dict({"windows": {"w": {"length": "1h", "time": "wall"}}})
    with pytest.raises(ValueError, match=r"windows\.s\.time must be 'event' or 'arrival'"):
        PipelineConfig.from_dict({"windows": {"s": {"gap": "1h", "time": "wall"}}})
    assert PipelineConfig.from_dict({"windows": {"w": {"length": "1h", "time": "arrival"}}}).arrival_windows
    sessions = PipelineConfig.from_dict({"windows": {"s": {"gap": "1h", "time": "arrival"}}})
    assert sessions.arrival_sessions and sessions.places_by_arrival and not sessions.arrival_windows
