"""Watermarks: the event time before which no more events are expected.

As in the seeds' event clocks (Flink's bounded out-of-orderness, Bytewax's per-key clocks): the
watermark at an event's arrival is the largest event time seen *before* it, in arrival order,
minus the maximum out-of-orderness. Its scope is all keys (``global``) or each key alone
(``key``). An event whose time is behind the watermark at its arrival is late. The first event
of a scope has no watermark and is never late.

Arrival order is ``(arrival_date, arrival_time, source_file, line)``: the landing folder's day,
the record's own arrival time (or its file's), then the file and the line within it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import TypeVar

E = TypeVar("E")


def watermarks(events: Iterable[E], *, event_time: Callable[[E], datetime], scope_of: Callable[[E], object],
               max_out_of_orderness: timedelta) -> Iterator[tuple[E, datetime | None]]:
    """Each event (given in arrival order) with the watermark at its arrival."""
    newest: dict[object, datetime] = {}
    for event in events:
        scope = scope_of(event)
        seen = newest.get(scope)
        yield event, (None if seen is None else seen - max_out_of_orderness)
        t = event_time(event)
        if seen is None or t > seen:
            newest[scope] = t


def is_late(event_time: datetime, watermark: datetime | None) -> bool:
    """Behind the watermark: strictly earlier than it."""
    return watermark is not None and event_time < watermark
