from datetime import date, datetime, timedelta, timezone

import pytest

from windowing_core.config import PipelineConfig
from windowing_core.reference import Event
from windowing_core.sessions import SessionSpec, session_rows, sessions

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


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"windows": {"s": {"gap": "30s"}}}, r"windows\.s\.gap \(30s\) must be at least the bucket \(1m\)"),
        ({"windows": {"s": {"gap": "30m", "length": "1h"}}}, r"windows\.s\.gap .* takes no length"),
        ({"windows": {"s": {"gap": "30m", "slide": "1m"}}}, r"windows\.s\.gap .* takes no slide"),
        ({"windows": {"s": {"gap": "30m", "max_length": "90s"}}}, r"windows\.s\.max_length .* bucket"),
        ({"windows": {"s": {"gap": "30m", "max_length": "7h"}}}, r"windows\.s\.max_length .* divide a day"),
        ({"windows": {"s": {"gap": "30m", "emit": "changes"}}}, r"windows\.s\.emit"),
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
