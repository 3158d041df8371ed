"""Session windows (Flink's ``EventTimeSessionWindows.withGap``, Bytewax's ``SessionWindower``):
the spec and its pure rules (the brute-force oracle is ``reference.session_rows``).

Bounds, once for the whole module:

- A key's session is a maximal run of its events in which consecutive events are less than
  ``gap`` apart: an event ``gap`` or more after the one before it starts a new session.
- The session's window is ``[first event time, last event time + gap)``: start inclusive, end
  exclusive, at the events' own precision (microseconds in Spark, never rounded to frames).
- ``max_length`` (optional) cuts sessions on a grid of whole multiples of ``max_length`` since
  the epoch: an event in another cell than the one before it starts a new session, and a
  window ends at the latest at the end of its cell (``[first, min(last + gap, cell end))``). So
  no window is longer than ``max_length`` and a never-ending session is emitted cell by cell.
  Not Flink users' "``max_length`` after the session's first event", for two reasons. That cut
  falls inside a frame (at the first event's own microsecond plus ``max_length``), and a
  frame's partials cannot be split there: a frame's max or sketch does not say which of its
  events came before the cut, so only the raw events could decide it. And each cut depends on
  the start of the session before it, so one late event would move every later cut of the
  key, to the end of the data (a month of daily pieces rewritten); on the grid a late event
  changes only its own cell.
- ``emit: final`` (the default): a session is closed, and its one final row emitted, once the
  watermark has passed its end: ``window_end <= watermark``, where the watermark is the largest
  accepted event time minus ``max_out_of_orderness``. A session still open at the end of the
  data is not emitted. Its row belongs to the daily partition of its ``window_end``'s UTC date.
- ``emit: changes``: provisional change points, as a sliding window's, on the bucket grid. A
  key's value at a bucket end ``T`` is its session ``S`` with ``start(S) < T <= end(S)`` (the
  session holding ``T``, its end included: the window ending at ``end(S)`` is the session),
  folded over its events before ``T``; at any other ``T`` the key is empty. So a session writes
  one row at the end of each frame holding its events (``floor(e) + bucket``: the session so
  far, ``window_start`` its first event), and one row at the first bucket end after its end
  (``floor(end) + bucket``: event_count 0 and every aggregation's empty value, the step back to
  empty, ``window_start`` still the closed session's), unless the key's next session already
  holds a value there. ``window_end`` is that bucket end, and its date the row's partition.
  These rows need no watermark: a day's frames decide them (late data re-fires the day).
- ``time: arrival`` places each event by its ``arrival_time`` instead (processing-time
  sessions, Flink's ``ProcessingTimeSessionWindows``): the same accepted events, and the
  watermark is the newest arrival time (processing time runs in order: no out-of-orderness).
  Such sessions are never late; they are final once the arrival day holding their end is
  ingested.

Why sessions can be computed from minute frames exactly: two events of one frame are less than
one bucket apart, so with ``gap >= bucket`` no session boundary can fall inside a frame. A
frame then needs only its first and last event time beside its partials: two consecutive
frames of a key belong to one session exactly when the next frame's first event is less than
``gap`` after the previous frame's last.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from windowing_core.window_spec import (
    DAY_SECONDS,
    MAX_DURATION,
    check_time,
    format_duration,
    parse_duration,
    refuse_unknown,
)

SESSION_FIELDS = {"gap", "max_length", "emit", "time"}
EMITS = ("final", "changes")
"""What a session window may declare; ``length``, ``slide``, ``offset`` are a sliding window's."""


@dataclass(frozen=True)
class SessionSpec:
    """A named session window: ``gap`` and (optional) ``max_length`` in whole seconds.

    ``emit``: ``final`` (one row per closed session) or ``changes`` (provisional change points
    while a session is open, and the step back to empty after it). ``time``: ``event`` or
    ``arrival`` (processing-time sessions).
    """

    name: str
    gap: int
    bucket: int = 60
    max_length: int | None = None
    emit: str = "final"
    time: str = "event"

    @classmethod
    def of(cls, name: str, gap: str | int, bucket: str | int = "1m", max_length: str | int | None = None,
           emit: str = "final", time: str = "event") -> SessionSpec:
        """Build from duration strings: ``SessionSpec.of("visits", "30m")``."""
        return cls(name=name, gap=parse_duration(gap, field_name=f"windows.{name}.gap"),
                   bucket=parse_duration(bucket, field_name="bucket"),
                   max_length=None if max_length is None else parse_duration(
                       max_length, field_name=f"windows.{name}.max_length"),
                   emit=emit, time=time)

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any], bucket: int) -> SessionSpec:
        """The configuration's ``windows: {NAME: {gap: 30m, max_length: 1d}}``."""
        where = f"windows.{name}"
        mixed = sorted({"length", "slide", "offset", "step"} & set(spec))
        if mixed:
            raise ValueError(f"{where}.gap makes a session window, which takes no {', '.join(mixed)}")
        refuse_unknown(spec, SESSION_FIELDS, where)
        return cls.of(str(name), spec["gap"], bucket, spec.get("max_length"), spec.get("emit", "final"),
                      spec.get("time", "event"))

    def __post_init__(self) -> None:
        where = f"windows.{self.name}"
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"window name {self.name!r}: use letters, digits and underscores")
        for label, value in (("gap", self.gap), ("max_length", self.max_length)):
            if value is not None and value > MAX_DURATION:  # a sliding window's cap: its ends are dates too
                raise ValueError(f"{where}.{label} ({format_duration(value)}) must be at most "
                                 f"{format_duration(MAX_DURATION)} (about ten years)")
        if self.gap < self.bucket:
            raise ValueError(f"{where}.gap ({format_duration(self.gap)}) must be at least the bucket "
                             f"({format_duration(self.bucket)}): a shorter gap could split a frame")
        if self.max_length is not None:
            if self.max_length <= 0 or self.max_length % self.bucket:
                raise ValueError(f"{where}.max_length ({format_duration(self.max_length)}) must be a positive "
                                 f"whole multiple of the bucket ({format_duration(self.bucket)})")
            if self.max_length % DAY_SECONDS and DAY_SECONDS % self.max_length:
                raise ValueError(f"{where}.max_length ({format_duration(self.max_length)}) must divide a day "
                                 "or be whole days, so that its grid is the same every day")
        if self.emit not in EMITS:
            raise ValueError(f"{where}.emit must be 'final' or 'changes', got {self.emit!r}")
        check_time(where, self.time)

    def cell_end(self, micros: int) -> int | None:
        """The end of the ``max_length`` cell holding this instant (microseconds), or None."""
        if self.max_length is None:
            return None
        size = self.max_length * 1_000_000
        return micros - micros % size + size

    def describe(self) -> str:
        text = f"{self.name}: sessions with gap {format_duration(self.gap)}"
        if self.max_length:
            text += f", cut every {format_duration(self.max_length)}"
        if self.emit == "changes":
            text += ", provisional changes"
        if self.time == "arrival":
            text += ", by arrival time"
        return text


# -- the rules every path shares ---------------------------------------------------------------


def micros(moment: datetime) -> int:
    """Microseconds since the epoch, exactly (no float)."""
    return (moment - datetime(1970, 1, 1, tzinfo=moment.tzinfo)) // timedelta(microseconds=1)


def sessions(times: Iterable[datetime], spec: SessionSpec) -> list[tuple[datetime, datetime]]:
    """The ``[window_start, window_end)`` of each session of one key's event times."""
    gap = timedelta(seconds=spec.gap)
    found: list[list[datetime]] = []
    for t in sorted(times):
        if found and t - found[-1][-1] < gap and spec.cell_end(micros(found[-1][-1])) == spec.cell_end(micros(t)):
            found[-1].append(t)
        else:
            found.append([t])
    return [(run[0], _end(run[0], run[-1], spec)) for run in found]


def _end(first: datetime, last: datetime, spec: SessionSpec) -> datetime:
    end = last + timedelta(seconds=spec.gap)
    cell = spec.cell_end(micros(first))
    if cell is not None:
        end = min(end, first + timedelta(microseconds=cell - micros(first)))
    return end
