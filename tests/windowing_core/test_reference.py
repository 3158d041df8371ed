"""The oracle itself, checked against answers worked out by hand."""

from dataclasses import replace
from datetime import date, datetime, timezone

from windowing_core.config import PipelineConfig
from windowing_core.source import SourceSpec
from windowing_core.reference import (
    ChangeRow,
    Event,
    accepted_events,
    beyond_lateness,
    snapshot,
    window_changes,
)
from windowing_core.window_spec import WindowSpec

D = date(2025, 1, 30)


def at(h, m, s=0, day=30):
    return datetime(2025, 1, day, h, m, s, tzinfo=timezone.utc)


def ev(t, value=1, event_id=None, arrival=D, key="a"):
    return Event(key, t, value, event_id or f"{key}{t.isoformat()}{value}", arrival)


CONFIG = PipelineConfig(windows=(WindowSpec.of("3m", "3m", "1m"),))


def test_change_points_include_the_step_back_to_empty():
    # 3-minute window sliding every minute; events at 00:00:30 (1) and 00:01:10 (2)
    #
    #   00:00  00:01  00:02  00:03  00:04  00:05
    #   |--x---|--y---|------|------|------|
    #   end 00:01 [-2m, 1m)  x       -> count 1, sum 1
    #   end 00:02 [-1m, 2m)  x y     -> count 2, sum 3
    #   end 00:03 [0m, 3m)   x y     -> unchanged, no row
    #   end 00:04 [1m, 4m)   y       -> count 1, sum 2
    #   end 00:05 [2m, 5m)   -       -> count 0, sum 0 (the step to empty)
    events = [ev(at(0, 0, 30)), ev(at(0, 1, 10), 2)]
    rows = window_changes(events, CONFIG, D, D)
    assert rows == [
        ChangeRow("a", "3m", at(0, 1), (1, 1)),
        ChangeRow("a", "3m", at(0, 2), (2, 3)),
        ChangeRow("a", "3m", at(0, 4), (1, 2)),
        ChangeRow("a", "3m", at(0, 5), (0, 0)),
    ]
    assert snapshot(events, CONFIG, D) == {}


def test_duplicates_count_once_within_and_across_arrival_days():
    e = ev(at(10, 0), event_id="same")
    again_next_day = Event("a", at(10, 0), 5, "same", date(2025, 1, 31))
    kept = accepted_events([e, e, again_next_day], CONFIG)
    assert kept == [e]


def test_events_beyond_allowed_lateness_never_reach_a_window():
    in_time = ev(at(10, 0), arrival=date(2025, 2, 1))  # 2 days late: allowed
    too_late = ev(at(11, 0), arrival=date(2025, 2, 2))  # 3 days late
    assert accepted_events([in_time, too_late], CONFIG) == [in_time]


def test_lateness_below_a_day_counts_from_the_event_time_to_the_arrival_part():
    """30h: an event is in time while the part folder it landed in starts at most 30 hours after
    it; a file outside part folders lands at its day's end. Whole days count dates instead."""
    config = replace(CONFIG, allowed_lateness=30 * 3600)
    assert config.allowed_lateness_days == 2 and not config.lateness_by_date
    in_folder = ev(at(10, 0), arrival=date(2025, 1, 31), event_id="in")
    in_time = replace(in_folder, arrival_part=datetime(2025, 1, 31, 16, 0, tzinfo=timezone.utc))  # 30h after
    too_late = replace(in_folder, event_id="out", arrival_part=datetime(2025, 1, 31, 17, 0, tzinfo=timezone.utc))
    day_folder = replace(in_folder, event_id="day")  # at its day's end, February 1st 00:00: 38h after
    assert accepted_events([in_time, too_late, day_folder], config) == [in_time]
    assert beyond_lateness([in_time, too_late, day_folder], config) == [too_late, day_folder]
    # a table source's rows: their own arrival time
    table = replace(config, source=SourceSpec(path="/data/clicks", time="ts", arrival="loaded_at"))
    loaded = [replace(in_folder, event_id=f"t{h}", arrival_time=datetime(2025, 1, 31, h, 0, tzinfo=timezone.utc))
              for h in (16, 17)]
    assert accepted_events(loaded, table) == loaded[:1]
    # two days, by date: all three arrived on the second day after the event's
    assert accepted_events([in_time, too_late, day_folder], replace(config, allowed_lateness=2 * 86400)) == [
        in_time, too_late, day_folder]


def test_snapshot_is_the_value_at_the_days_last_window_end():
    # last end of the day is 23:59; the window [23:56, 23:59) holds the 23:57 event only
    events = [ev(at(23, 50)), ev(at(23, 57), 4), ev(at(23, 59, 30), 8)]
    assert snapshot(events, CONFIG, D) == {("3m", "a"): (1, 4)}
