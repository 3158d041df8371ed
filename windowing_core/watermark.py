"""Watermarks: the event time before which no more events are expected.

As in the seeds' event clocks (Flink's bounded out-of-orderness, Bytewax's per-key clocks): the
watermark at an event's arrival is the largest event time seen *before* it, in arrival order,
minus the maximum out-of-orderness. Its scope is all keys (``global``) or each key alone
(``key``). An event whose time is behind the watermark at its arrival is late. The first event
of a scope has no watermark and is never late.

Arrival order is ``(arrival_date, arrival_time, source_file, line)``: the landing folder's day,
the record's own arrival time (or its file's), then the file and the line within it.

Its clock (``watermark_clock``) is ``event``, as above, or ``arrival``: Bytewax's
``EventClock(ts_getter, wait_for_system_duration)``, where the watermark also advances with the
arrival time elapsed since its base was set, ``watermark = base + (now - base_arrival)``, and an
event moves the base (to its time minus the out-of-orderness, at its arrival) only where that is
ahead of the watermark: the watermark never goes back. A quiet stream's watermark so keeps
moving, and an event that arrives long after newer ones is late even within the out-of-orderness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import TypeVar

E = TypeVar("E")


def watermarks(events: Iterable[E], *, event_time: Callable[[E], datetime], scope_of: Callable[[E], object],
               max_out_of_orderness: timedelta,
               arrival_time: Callable[[E], datetime] | None = None) -> Iterator[tuple[E, datetime | None]]:
    """Each event (given in arrival order) with the watermark at its arrival: the ``event`` clock,
    or with ``arrival_time`` the ``arrival`` clock (``arrival_watermarks``)."""
    if arrival_time is not None:
        yield from arrival_watermarks(events, event_time=event_time, arrival_time=arrival_time,
                                      scope_of=scope_of, max_out_of_orderness=max_out_of_orderness)
        return
    newest: dict[object, datetime] = {}
    for event in events:
        scope = scope_of(event)
        seen = newest.get(scope)
        yield event, (None if seen is None else seen - max_out_of_orderness)
        t = event_time(event)
        if seen is None or t > seen:
            newest[scope] = t


def arrival_watermarks(events: Iterable[E], *, event_time: Callable[[E], datetime],
                       arrival_time: Callable[[E], datetime], scope_of: Callable[[E], object],
                       max_out_of_orderness: timedelta) -> Iterator[tuple[E, datetime | None]]:
    """Bytewax's event clock, step by step: per scope a base and the arrival time it was set at;
    the watermark at an arrival is ``base + (arrival - base_arrival)``, and the event then moves
    the base to ``event_time - max_out_of_orderness`` at its arrival only where that is ahead of
    the watermark."""
    bases: dict[object, tuple[datetime, datetime]] = {}
    for event in events:
        scope, now = scope_of(event), arrival_time(event)
        if now is None:
            raise ValueError("watermark_clock 'arrival' needs every event's arrival_time")
        held = bases.get(scope)
        watermark = None if held is None else held[0] + (now - held[1])
        yield event, watermark
        candidate = event_time(event) - max_out_of_orderness
        if watermark is None or candidate > watermark:
            bases[scope] = (candidate, now)


def is_late(event_time: datetime, watermark: datetime | None) -> bool:
    """Behind the watermark: strictly earlier than it."""
    return watermark is not None and event_time < watermark
