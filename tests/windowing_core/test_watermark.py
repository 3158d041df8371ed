"""Watermark tables in the style of the seeds: events arriving out of order, one behind the mark."""

from datetime import date, datetime, timedelta, timezone

import pytest

from windowing_core.config import PipelineConfig
from windowing_core.reference import Event, accepted_events, behind_watermark
from windowing_core.watermark import watermarks

D = date(2025, 1, 30)


def ev(n, key, minute, second=0):
    """The n-th arrival: key, event time 12:mm:ss."""
    t = datetime(2025, 1, 30, 12, minute, second, tzinfo=timezone.utc)
    arrived = datetime(2025, 1, 30, 13, 0, n, tzinfo=timezone.utc)
    return Event(key, t, 1, f"e{n}", D, "f.json", f"line{n}", arrival_time=arrived, line=n)


# arrival | key | event time | newest seen before (global) | watermark (5 min) | late?
#    0    |  a  | 12:10      | -                           | -                 | no
#    1    |  b  | 12:20      | 12:10                       | 12:05             | no
#    2    |  a  | 12:16      | 12:20                       | 12:15             | no  (12:16 >= 12:15)
#    3    |  a  | 12:14      | 12:20                       | 12:15             | yes (global); per key a: 12:16 -> 12:11, no
#    4    |  b  | 12:14:59   | 12:20                       | 12:15             | yes (both scopes: b saw 12:20)
#    5    |  a  | 12:15      | 12:20                       | 12:15             | no  (on the mark is not behind it)
EVENTS = [ev(0, "a", 10), ev(1, "b", 20), ev(2, "a", 16), ev(3, "a", 14), ev(4, "b", 14, 59), ev(5, "a", 15)]


def late_ids(config):
    return sorted(e.event_id for e in behind_watermark(EVENTS, config))


def test_global_watermark_marks_events_behind_the_newest_seen_by_any_key():
    assert late_ids(PipelineConfig(max_out_of_orderness=300)) == ["e3", "e4"]


def test_per_key_watermark_only_looks_at_the_same_key():
    assert late_ids(PipelineConfig(max_out_of_orderness=300, watermark_scope="key")) == ["e4"]


def test_arrival_order_not_input_order_decides():
    shuffled = list(reversed(EVENTS))
    assert sorted(e.event_id for e in behind_watermark(shuffled, PipelineConfig())) == ["e3", "e4"]


def test_drop_policy_keeps_late_events_out_and_include_keeps_them_in():
    dropped = PipelineConfig(late_policy="drop")
    included = PipelineConfig(late_policy="include")
    assert sorted(e.event_id for e in accepted_events(EVENTS, dropped)) == ["e0", "e1", "e2", "e5"]
    assert len(accepted_events(EVENTS, included)) == 6


def test_a_larger_out_of_orderness_tolerates_more():
    assert late_ids(PipelineConfig(max_out_of_orderness=360)) == []


# Bytewax's own table for EventClock(wait_for_system_duration=5 min):
#
# arrival | item  | watermark before it        | late? | base afterwards
# 10:32   | 10:35 | -                          | no    | 10:30 set at 10:32
# 10:34   | 10:38 | 10:30 + 2 min = 10:32      | no    | 10:33 set at 10:34 (ahead of 10:32)
# 10:36   | 10:39 | 10:33 + 2 min = 10:35      | no    | kept: 10:34 is behind 10:35
# 10:38   | 10:36 | 10:33 + 4 min = 10:37      | yes   |
def bytewax_items(key=lambda n: "a"):
    at = lambda h, m: datetime(2025, 1, 30, h, m, tzinfo=timezone.utc)  # noqa: E731
    seen = [(at(10, 35), at(10, 32)), (at(10, 38), at(10, 34)), (at(10, 39), at(10, 36)), (at(10, 36), at(10, 38))]
    return [Event(key(n), t, 1, f"i{n}", D, "f.json", f"line{n}", arrival_time=a, line=n)
            for n, (t, a) in enumerate(seen)]


@pytest.mark.parametrize("scope", ["global", "key"])
def test_bytewax_event_clock_table_only_the_10_36_item_is_late(scope):
    items = bytewax_items()
    config = PipelineConfig(max_out_of_orderness=300, watermark_clock="arrival", watermark_scope=scope)
    marks = list(watermarks(sorted(items, key=lambda e: e.arrival_time), event_time=lambda e: e.event_time,
                            scope_of=lambda e: None, max_out_of_orderness=timedelta(minutes=5),
                            arrival_time=lambda e: e.arrival_time))
    assert [w and w.strftime("%H:%M") for _, w in marks] == [None, "10:32", "10:35", "10:37"]
    assert sorted(e.event_id for e in behind_watermark(items, config)) == ["i3"]


def test_the_event_clock_alone_does_not_mark_the_10_36_item():
    # largest seen before it 10:39, minus 5 min: 10:34; 10:36 is ahead of that
    assert behind_watermark(bytewax_items(), PipelineConfig(max_out_of_orderness=300)) == set()


def test_the_arrival_clock_keeps_one_base_per_key_under_the_key_scope():
    # the 10:36 item under another key than the rest: its key has no watermark yet
    items = bytewax_items(key=lambda n: "b" if n == 3 else "a")
    assert behind_watermark(items, PipelineConfig(watermark_clock="arrival", watermark_scope="key")) == set()
    assert len(behind_watermark(items, PipelineConfig(watermark_clock="arrival"))) == 1


def test_an_unknown_watermark_clock_names_the_field():
    with pytest.raises(ValueError, match="^watermark_clock must be one of event, arrival, got 'system'$"):
        PipelineConfig.from_dict({"watermark_clock": "system"})
