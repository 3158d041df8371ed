from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

import pytest

from windowing_core.config import PipelineConfig
from windowing_core.reference import Event, session_rows
from windowing_core.sessions import SessionSpec, sessions

ZERO = datetime(2025, 1, 28, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return ZERO + timedelta(minutes=minutes)


def test_bytewax_session_example_gives_three_sessions():
    # Bytewax's SessionWindower(gap=30 min) example, events at 00:00, 00:10, 00:15 | 00:50,
    # 01:00 | 01:30: the gaps 00:15 -> 00:50 and 01:00 -> 01:30 are not less than 30 minutes.
    #
    #   00:00   00:30   01:00   01:30   02:00
    #   x  x x        x  x       x
    #   [0:00 ----- 0:45)
    #                 [0:50 ----- 1:30)
    #                            [1:30 ----- 2:00)
    times = [at(0), at(10), at(15), at(50), at(60), at(90)]
    assert sessions(times, SessionSpec.of("s", "30m")) == [
        (at(0), at(45)), (at(50), at(90)), (at(90), at(120))]


def test_events_exactly_gap_apart_start_a_new_session_and_one_microsecond_less_do_not():
    spec = SessionSpec.of("s", "30m")
    assert len(sessions([at(0), at(30)], spec)) == 2
    almost = at(30) - timedelta(microseconds=1)
    assert sessions([at(0), almost], spec) == [(at(0), almost + timedelta(minutes=30))]


def test_a_session_crosses_midnight_and_lasts_longer_than_a_day():
    # one event every 20 minutes for 30 hours: one session from 00:00 to 06:00 + 20 min next day
    spec = SessionSpec.of("s", "30m")
    times = [at(20 * i) for i in range(90)]
    assert sessions(times, spec) == [(at(0), at(20 * 89 + 30))]


def test_max_length_cuts_a_never_ending_session_on_its_grid():
    #   day 1                   | day 2
    #   x x x x ... x x x x x x | x x x ...
    #   [00:00 ------- 24:00)   | [24:00 ---- last + 30m)
    spec = SessionSpec.of("s", "30m", max_length="1d")
    times = [at(20 * i) for i in range(90)]
    assert sessions(times, spec) == [(at(0), at(24 * 60)), (at(24 * 60), at(20 * 89 + 30))]


def _event(key: str, moment: datetime, value: int = 1, arrival: date | None = None) -> Event:
    return Event(key=key, event_time=moment, value=value, event_id=f"{key}-{moment.isoformat()}",
                 arrival_date=arrival or moment.date(), arrival_time=moment)


def test_only_sessions_behind_the_watermark_are_final_in_their_end_day():
    config = PipelineConfig(sessions=(SessionSpec.of("visits", "30m"),), max_out_of_orderness=0)
    events = [_event("a", at(m)) for m in (0, 10, 15, 50, 60, 90)] + [_event("b", at(100), 5)]
    rows = session_rows(events, config, ZERO.date(), ZERO.date())
    # the watermark is b's event at 01:40: a's third session (ends 02:00) and b's are still open
    assert [(r.key, r.window_start, r.window_end, r.event_count, r.values) for r in rows] == [
        ("a", at(0), at(45), 3, (3, 3)), ("a", at(50), at(90), 2, (2, 2))]


def test_changes_follow_bytewax_sessions_frame_by_frame_and_step_back_to_empty():
    # emit: changes, gap 30m, bucket 1m: a row at the end of each frame holding events (the
    # session so far) and one at the first bucket end after the session's end (empty), unless
    # the next session's first row falls there (01:31: the third session starts at 01:30).
    #
    #   00:00   00:30   01:00   01:30   02:00
    #   x  x x        x  x       x
    #   [0:00 ----- 0:45)                          rows 00:01 1, 00:11 2, 00:16 3, 00:46 empty
    #                 [0:50 ----- 1:30)            rows 00:51 1, 01:01 2
    #                            [1:30 ----- 2:00) rows 01:31 1, 02:01 empty
    config = PipelineConfig(sessions=(SessionSpec.of("visits", "30m", emit="changes"),))
    events = [_event("a", at(m)) for m in (0, 10, 15, 50, 60, 90)]
    rows = session_rows(events, config, ZERO.date(), ZERO.date())
    assert [(r.window_start, r.window_end, r.event_count, r.values) for r in rows] == [
        (at(0), at(1), 1, (1, 1)), (at(0), at(11), 2, (2, 2)), (at(0), at(16), 3, (3, 3)),
        (at(0), at(46), 0, (0, 0)),
        (at(50), at(51), 1, (1, 1)), (at(50), at(61), 2, (2, 2)),
        (at(90), at(91), 1, (1, 1)), (at(90), at(121), 0, (0, 0))]


def test_changes_of_one_frame_and_a_session_ending_on_a_bucket_end():
    # gap = bucket = 1m, events at 00:00:00 and 00:01:00 (whole minutes): two sessions
    # [00:00, 00:01) and [00:01, 00:02). The first's row is at 00:01, the end of its frame and
    # its own end (included: the window ending there is the session). Its step back to empty
    # would be at 00:02, where the second session's first row is: the second takes its place.
    #
    #   00:00  00:01  00:02  00:03
    #   x      x
    #   [------)                      row 00:01: 1 event
    #          [------)               row 00:02: the second session, 1 event
    #                                 row 00:03: empty
    config = PipelineConfig(bucket=60, sessions=(SessionSpec.of("s", "1m", emit="changes"),))
    rows = session_rows([_event("a", at(0)), _event("a", at(1), 5)], config, ZERO.date(), ZERO.date())
    assert [(r.window_start, r.window_end, r.event_count, r.values) for r in rows] == [
        (at(0), at(1), 1, (1, 1)), (at(1), at(2), 1, (1, 5)), (at(1), at(3), 0, (0, 0))]
    alone = session_rows([_event("a", at(0))], config, ZERO.date(), ZERO.date())
    assert [(r.window_start, r.window_end, r.event_count) for r in alone] == [(at(0), at(1), 1), (at(0), at(2), 0)]


def test_sessions_by_arrival_time_use_the_arrival_and_the_newest_arrival_as_watermark():
    # a arrives at 00:00 and 00:20 (event times a day earlier), b at 01:00: a's session by
    # arrival is [00:00, 00:50), closed by the newest arrival (01:00); b's is still open.
    config = PipelineConfig(sessions=(SessionSpec.of("s", "30m", time="arrival"),), max_out_of_orderness=0)
    events = [replace(_event("a", at(m) - timedelta(days=1), arrival=ZERO.date()), arrival_time=at(m))
              for m in (0, 20)] + [_event("b", at(60))]
    rows = session_rows(events, config, ZERO.date(), ZERO.date())
    assert [(r.key, r.window_start, r.window_end, r.event_count) for r in rows] == [("a", at(0), at(50), 2)]


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"windows": {"s": {"gap": "30s"}}}, r"windows\.s\.gap \(30s\) must be at least the bucket \(1m\)"),
        ({"windows": {"s": {"gap": "30m", "length": "1h"}}}, r"windows\.s\.gap .* takes no length"),
        ({"windows": {"s": {"gap": "30m", "slide": "1m"}}}, r"windows\.s\.gap .* takes no slide"),
        ({"windows": {"s": {"gap": "30m", "max_length": "90s"}}}, r"windows\.s\.max_length .* bucket"),
        ({"windows": {"s": {"gap": "30m", "max_length": "7h"}}}, r"windows\.s\.max_length .* divide a day"),
        ({"windows": {"s": {"gap": "30m", "emit": "all"}}}, r"windows\.s\.emit must be 'final' or 'changes'"),
        ({"windows": {"s": {"gap": "30m", "time": "wall"}}}, r"windows\.s\.time must be 'event' or 'arrival'"),
        ({"windows": {"s": {"gap": "30m", "gapp": 1}}}, r"windows\.s: unknown field.*gapp"),
        ({"windows": {"s": {"gap": "soon"}}}, r"windows\.s\.gap: cannot parse"),
        ({"windows": {"s": {"gap": "30m"}, "t": {"length": "1h"}}, "bucket": "1h"}, r"windows\.s\.gap"),
    ],
)
def test_bad_session_configuration_names_the_field(raw, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig.from_dict(raw)


def test_sessions_are_declared_beside_sliding_windows():
    config = PipelineConfig.from_dict({"windows": {"day": {"length": "1d"}, "visits": {"gap": "30m"}}})
    assert [w.name for w in config.windows] == ["day"]
    assert config.sessions == (SessionSpec.of("visits", "30m"),)
    assert config.window_names == ["day", "visits"]
    alone = PipelineConfig.from_dict({"windows": {"visits": {"gap": "2h", "max_length": "1d"}}})
    assert alone.windows == () and alone.sessions[0].max_length == 86400
    with pytest.raises(ValueError, match="windows: duplicate"):
        PipelineConfig(windows=config.windows, sessions=(SessionSpec.of("day", "30m"),))
