"""Watermark tables in the style of the seeds: events arriving out of order, one behind the mark."""

from datetime import date, datetime, timezone

from windowing_core.config import PipelineConfig
from windowing_core.reference import Event, accepted_events, behind_watermark

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
