"""Count windows' rules as Flink defines them: the docs' example, ties, and bad definitions."""

import random
from datetime import datetime, timedelta, timezone

import pytest

from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec, fires, released_after, window_of
from windowing_core.reference import Event, count_rows

ZERO = datetime(2025, 1, 28, tzinfo=timezone.utc)


def _event(name: str, minute: int, value: int) -> Event:
    moment = ZERO + timedelta(minutes=minute)
    return Event(key="k", event_time=moment, value=value, event_id=name, arrival_date=moment.date(),
                 arrival_time=moment)


# The docs' example (docs/concepts/count-windows.md): a..h in event time, d and e at one instant,
# listed out of order; values 1, 2, 4, ... so that each window's sum says which events it holds.
EVENTS = [_event("e", 30, 16), _event("a", 0, 1), _event("c", 20, 4), _event("b", 10, 2), _event("d", 30, 8),
          _event("h", 70, 128), _event("f", 40, 32), _event("g", 60, 64)]
MINUTE = {e.event_id: e.event_time for e in EVENTS}


def _rows(*specs: CountSpec) -> list[tuple]:
    config = PipelineConfig(windows=(), counts=specs)
    return [(r.window, r.window_start, r.window_end, r.event_count, r.values[1])
            for r in count_rows(EVENTS, config, ZERO.date(), ZERO.date())]


def test_a_sliding_count_window_fires_every_slide_events_with_the_last_count_fewer_at_the_start():
    # Flink's countWindow(5, 2): CountTrigger.of(2) fires at the 2nd, 4th, 6th and 8th event;
    # CountEvictor.of(5) keeps the last five. d before e: same instant, ids ascending.
    assert _rows(CountSpec("last_5", 5, 2)) == [
        ("last_5", MINUTE["a"], MINUTE["b"], 2, 1 + 2),
        ("last_5", MINUTE["a"], MINUTE["d"], 4, 1 + 2 + 4 + 8),
        ("last_5", MINUTE["b"], MINUTE["f"], 5, 2 + 4 + 8 + 16 + 32),
        ("last_5", MINUTE["d"], MINUTE["h"], 5, 8 + 16 + 32 + 64 + 128),
    ]


def test_a_tumbling_count_window_never_fires_its_incomplete_last_window():
    # countWindow(3): a b c | d e f | g h (two events: never fires)
    assert _rows(CountSpec("every_3", 3, 3)) == [
        ("every_3", MINUTE["a"], MINUTE["c"], 3, 1 + 2 + 4),
        ("every_3", MINUTE["d"], MINUTE["f"], 3, 8 + 16 + 32),
    ]


def test_of_several_firings_at_one_instant_the_last_is_the_row():
    # sliding by one: d and e both fire at 00:30; the row there is e's window (b c d e)
    rows = _rows(CountSpec("last_4", 4, 1))
    assert [r for r in rows if r[2] == MINUTE["d"]] == [("last_4", MINUTE["b"], MINUTE["e"], 4, 2 + 4 + 8 + 16)]
    assert len(rows) == len(EVENTS) - 1


def test_an_event_is_carried_exactly_while_a_window_still_to_fire_holds_it():
    """``released_after`` against its definition, brute force over random definitions."""
    rng = random.Random(3)
    for _ in range(300):
        size = rng.randrange(1, 12)
        spec = CountSpec("w", size, rng.randrange(1, size + 1))
        position = rng.randrange(1, 40)
        for count in range(position, position + 2 * size + 2):
            later = [f for f in range(count + 1, count + size + spec.slide + 1) if fires(f, spec)]
            held = any(position in window_of(f, spec) for f in later)
            assert held == (count < released_after(position, spec)), (spec, position, count)


@pytest.mark.parametrize("spec, message", [
    ({"count": 0}, r"^windows\.w\.count must be a whole number of events from 1 to 100000, got 0$"),
    ({"count": 100001}, r"^windows\.w\.count must be a whole number of events from 1 to 100000"),
    ({"count": "10"}, r"^windows\.w\.count must be a whole number of events, got '10'$"),
    ({"count": 2.5}, r"^windows\.w\.count must be a whole number of events, got 2\.5$"),
    ({"count": True}, r"^windows\.w\.count must be a whole number of events, got True$"),
    ({"count": 5, "slide": 6}, r"^windows\.w\.slide must be from 1 to the count \(5\), got 6: a longer slide"),
    ({"count": 5, "slide": 0}, r"^windows\.w\.slide must be from 1 to the count \(5\), got 0"),
    ({"count": 5, "slide": "1m"}, r"^windows\.w\.slide must be a whole number of events, got '1m'$"),
    ({"count": 5, "length": "1h"}, r"^windows\.w\.count makes a count window, which takes no length$"),
    ({"count": 5, "emit": "final"}, r"^windows\.w\.count makes a count window, which takes no emit$"),
    ({"count": 5, "gap": "30m"}, r"^windows\.w: gap makes a session window and count a count window; declare one$"),
    ({"count": 5, "sliding": 2}, r"^windows\.w: unknown field"),
])
def test_a_bad_count_window_is_a_one_line_error_naming_it(spec, message):
    with pytest.raises(ValueError, match=message) as refused:
        PipelineConfig.from_dict({"windows": {"w": spec}})
    assert "\n" not in str(refused.value)


def test_a_count_window_alone_is_a_configuration_and_its_name_is_unique():
    config = PipelineConfig.from_dict({"windows": {"every_10": {"count": 10}, "last_5": {"count": 5, "slide": 2}}})
    assert [(c.name, c.size, c.slide) for c in config.counts] == [("every_10", 10, 10), ("last_5", 5, 2)]
    assert config.window_names == ["every_10", "last_5"] and not config.windows
