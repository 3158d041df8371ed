"""A run below a day: one UTC day's ``[start, until)``, refused in one line otherwise."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from windowing_core.run_interval import RunInterval

MIDNIGHT = datetime(2025, 1, 28, tzinfo=UTC)


def test_an_interval_is_read_in_utc_and_may_end_at_the_next_midnight():
    naive = RunInterval(datetime(2025, 1, 28, 13), datetime(2025, 1, 28, 14))
    assert (naive.start, naive.until) == (MIDNIGHT + timedelta(hours=13), MIDNIGHT + timedelta(hours=14))
    paris = timezone(timedelta(hours=1))
    shifted = RunInterval(datetime(2025, 1, 28, 14, tzinfo=paris), datetime(2025, 1, 29, 1, tzinfo=paris))
    assert (shifted.start, shifted.until) == (MIDNIGHT + timedelta(hours=13), MIDNIGHT + timedelta(days=1))
    assert shifted.day == date(2025, 1, 28)
    assert shifted.seconds == (int(shifted.start.timestamp()), int(shifted.start.timestamp()) + 11 * 3600)
    assert RunInterval.of_seconds(*shifted.seconds) == shifted
    assert str(shifted) == "2025-01-28T13:00:00 .. 2025-01-29T00:00:00"


@pytest.mark.parametrize("hours", [(23, 25), (-1, 1), (7, 7), (8, 7)])
def test_an_interval_outside_its_one_day_or_empty_is_refused(hours):
    start, until = (MIDNIGHT + timedelta(hours=h) for h in hours)
    with pytest.raises(ValueError, match=f"a run below a day lies within its one day: {start:%Y-%m-%dT%H}:00:00 .. "
                                         f"{until:%Y-%m-%dT%H}:00:00 is not within {start.date()}"):
        RunInterval(start, until)
