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
    # Flink's -8h: daily windows from a Beijing (UTC+8) midnight, 16:00 UTC
    spec = WindowSpec.of("d", "1d", "1d", offset="-8h")
    assert spec.offset == 16 * 3600
    day = to_epoch_seconds(datetime(2025, 1, 30, tzinfo=timezone.utc))
    assert spec.end_at_or_after(day) == day + 16 * 3600
    assert spec.end_at_or_before(day) == day + 16 * 3600 - 86400


def test_a_length_that_is_not_a_multiple_of_the_slide_starts_windows_on_the_slide_grid():
    # length 50m, slide 20m (Flink's SlidingEventTimeWindows.of(50m, 20m)): starts on the 20m grid
    #
    #   -40  -20    0   10   20   30   40   50   60   70   (minutes)
    #    [-------------)                                     ends 10
    #         [-------------)                                ends 30
    #              [x-------------)                          ends 50
    #                   .    [-------------)                 ends 70: no longer holds x
    #              x = the frame [0, 1m)
    spec = WindowSpec.of("w", "50m", "20m")
    assert spec.end_offset == 10 * 60
    assert spec.enter_end(0) == 10 * 60
    assert spec.leave_end(0) == 70 * 60
    assert list(spec.ends_containing(0)) == [10 * 60, 30 * 60, 50 * 60]


def test_flink_start_formula_gives_the_same_windows():
    # Flink: start = ts - (ts - offset + slide) % slide, the last start at or before ts
    spec = WindowSpec.of("w", "1h", "30m", offset="15m")
    for ts in range(0, 4 * 3600, 60):
        last_start = ts - (ts - spec.offset + spec.every) % spec.every
        assert max(spec.ends_containing(ts)) == last_start + spec.length


def test_one_hour_windows_every_ninety_minutes_leave_gaps():
    # Bytewax: 1 hour windows every 90 minutes from midnight (align_to 00:00)
    #
    #   00:00     01:00     01:30     02:30     03:00
    #   [---------)         [---------)         [----
    #        a          g        b         g
    #   a (00:30) is in the window ending 01:00; g (01:10, 02:45) in gaps: no window
    spec = WindowSpec.of("w", "1h", "90m", align_to="2025-01-30T00:00:00Z")
    midnight = to_epoch_seconds(datetime(2025, 1, 30, tzinfo=timezone.utc))
    assert list(spec.ends_containing(midnight + 30 * 60)) == [midnight + 3600]
    assert list(spec.ends_containing(midnight + 70 * 60)) == []
    assert list(spec.ends_containing(midnight + 120 * 60)) == [midnight + 150 * 60]
    assert list(spec.ends_containing(midnight + 165 * 60)) == []
    gap_frame = midnight + 70 * 60
    assert spec.enter_end(gap_frame) == spec.leave_end(gap_frame)  # enters and leaves at once


def test_align_to_is_another_way_to_say_the_offset():
    by_instant = WindowSpec.of("d", "1d", align_to="2025-01-30T16:00:00Z")
    assert by_instant.offset == WindowSpec.of("d", "1d", offset="-8h").offset == 16 * 3600


@pytest.mark.parametrize("align_to", ["2025-01-30T00:00:00", "2025-01-30T08:00:00+08:00", "noon",
                                      datetime(2025, 1, 30), "2025-01-30"])
def test_align_to_must_be_a_utc_timestamp(align_to):
    with pytest.raises(ValueError, match=r"^windows\.w\.align_to: expected a UTC timestamp"):
        WindowSpec.of("w", "1h", align_to=align_to)


def test_offset_and_align_to_together_are_refused():
    with pytest.raises(ValueError, match="windows.w: give offset or align_to, not both"):
        WindowSpec.of("w", "1h", offset="15m", align_to="2025-01-30T00:00:00Z")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(length="0m", slide="1m"), "length must be positive"),
        (dict(length="7d", slide="-1m"), "slide must be positive"),
        (dict(length="90s", slide="1m"), "length .* multiple of the bucket"),
        (dict(length="1h", slide="1m", offset="30s"), "offset .* multiple of the bucket"),
        (dict(length="1h", align_to="2025-01-30T00:00:30Z"), "align_to .* multiple of the bucket"),
        (dict(length="1h", offset="8"), "windows.w.offset: cannot parse"),
        (dict(length="1h", slide="1m", emit="sometimes"), r"^windows\.w\.emit must be 'changes' or 'final'"),
    ],
)
def test_bad_specs_fail_with_the_field_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindowSpec.of("w", **kwargs)


def test_cumulating_windows_share_a_start_and_grow_by_the_step():
    # CUMULATE(step 10m, size 30m), offset 5m: periods start at :05 and :35
    #
    #   00:05     00:15     00:25     00:35     00:45
    #   [---------)                                     ends 00:15
    #   [-------------------)                           ends 00:25
    #   [--x----------------------)                     ends 00:35 (the period's last)
    #                                [---------)        ends 00:45: a new period, x has left
    #      x = 00:07
    spec = WindowSpec.of("c", "30m", offset="5m", step="10m")
    assert spec.cumulating and not spec.tumbling
    x = 7 * 60
    assert list(spec.ends_containing(x)) == [15 * 60, 25 * 60, 35 * 60]
    assert spec.enter_end(x - x % 60) == 15 * 60
    assert spec.leave_end(x - x % 60) == 45 * 60
    assert [spec.window_start(t) for t in (15 * 60, 25 * 60, 35 * 60, 45 * 60)] == [5 * 60] * 3 + [35 * 60]


def test_a_negative_offset_moves_the_period_of_a_cumulating_window():
    spec = WindowSpec.of("c", "1d", offset="-8h", step="1h")
    assert spec.offset == 16 * 3600
    assert spec.window_start(17 * 3600) == 16 * 3600
    assert spec.window_start(16 * 3600) == 16 * 3600 - 86400  # the previous period's last window


@pytest.mark.parametrize("kwargs, message", [
    (dict(length="1h", step="7m"), r"windows.w.step \(7m\) must divide the length \(1h\)"),
    (dict(length="1h", slide="10m", step="10m"), "windows.w.step: a cumulating window has no slide"),
    (dict(length="1h", step="0m"), "windows.w.step"),
    (dict(length="1h", step="ten"), "windows.w.step: cannot parse"),
])
def test_bad_cumulating_specs_fail_with_the_field_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindowSpec.of("w", **kwargs)


def test_keyed_must_be_a_boolean():
    with pytest.raises(ValueError, match="windows.w.keyed must be true or false"):
        WindowSpec.of("w", "1h", keyed="no")
