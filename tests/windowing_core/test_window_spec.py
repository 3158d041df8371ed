from datetime import datetime, timezone

import pytest

from windowing_core.window_spec import WindowSpec, format_duration, parse_duration, to_epoch_seconds


def test_parse_duration_units():
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("1m") == 60
    assert parse_duration("10s") == 10
    assert parse_duration("-8h") == -8 * 3600
    assert format_duration(604800) == "7d"
    assert format_duration(90) == "90s"


@pytest.mark.parametrize("bad", ["7", "7 days", "1.5h", "", "m"])
def test_parse_duration_rejects_with_field_name(bad):
    with pytest.raises(ValueError, match="windows.x.length"):
        parse_duration(bad, field_name="windows.x.length")


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        to_epoch_seconds(datetime(2025, 1, 30, 12, 0))


def test_window_ending_at_t_covers_t_minus_length_inclusive_to_t_exclusive():
    # length 3m, slide 1m; event at 00:02:30 (second 150)
    #
    #   0     60    120   180   240   300   (s)
    #   |-----|-----|--x--|-----|-----|
    #               [ frame 120 )
    #   window ending 180 = [0, 180)     holds x
    #   window ending 240 = [60, 240)    holds x
    #   window ending 300 = [120, 300)   holds x
    #   window ending 360 = [180, 360)   does not
    spec = WindowSpec.of("w", "3m", "1m")
    assert list(spec.ends_containing(150)) == [180, 240, 300]
    assert spec.enter_end(120) == 180
    assert spec.leave_end(120) == 360


def test_event_on_a_window_end_belongs_to_the_next_window_only():
    # an event at exactly 180 is outside the window ending at 180 ([0, 180))
    spec = WindowSpec.of("w", "3m", "1m")
    assert list(spec.ends_containing(180)) == [240, 300, 360]


def test_tumbling_windows_hold_each_instant_once():
    spec = WindowSpec.of("w", "5m", "5m")
    assert spec.tumbling
    assert list(spec.ends_containing(299)) == [300]
    assert list(spec.ends_containing(300)) == [600]


def test_offset_shifts_the_grid_and_is_normalised():
    # daily windows aligned to UTC-8 midnight: ends at 08:00 UTC
    spec = WindowSpec.of("d", "1d", "1d", offset="-8h")
    assert spec.offset == 16 * 3600
    day = to_epoch_seconds(datetime(2025, 1, 30, tzinfo=timezone.utc))
    assert spec.end_at_or_after(day) == day + 16 * 3600
    assert spec.end_at_or_before(day) == day + 16 * 3600 - 86400


def test_leave_end_when_length_is_not_a_multiple_of_slide():
    # length 50m, slide 20m: the frame [0, 60) enters at 60... (grid 0, 1200, 2400, ...)
    spec = WindowSpec.of("w", "50m", "20m")
    assert spec.enter_end(0) == 1200
    assert spec.leave_end(0) == 3600  # first end t with t - 3000 > 0 on the 1200 grid
    assert 0 not in range(3600 - 3000, 3600)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(length="0m", slide="1m"), "length must be positive"),
        (dict(length="7d", slide="-1m"), "slide must be positive"),
        (dict(length="90s", slide="1m"), "length .* multiple of the bucket"),
        (dict(length="1h", slide="1m", offset="30s"), "offset .* multiple of the bucket"),
        (dict(length="1h", slide="1m", emit="final"), "tumbling"),
        (dict(length="1h", slide="1m", emit="sometimes"), "emit"),
    ],
)
def test_bad_specs_fail_with_the_field_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindowSpec.of("w", **kwargs)
