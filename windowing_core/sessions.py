"""Session windows (Flink's ``EventTimeSessionWindows.withGap``, Bytewax's ``SessionWindower``):
the spec, its pure rules, and the brute-force oracle.

Bounds, once for the whole module:

- A key's session is a maximal run of its events in which consecutive events are less than
  ``gap`` apart: an event ``gap`` or more after the one before it starts a new session.
- The session's window is ``[first event time, last event time + gap)``: start inclusive, end
  exclusive, at the events' own precision (microseconds in Spark, never rounded to frames).
- ``max_length`` (optional) cuts sessions on a grid of whole multiples of ``max_length`` since
  the epoch: an event in another cell than the one before it starts a new session, and a
  window ends at the latest at the end of its cell (``[first, min(last + gap, cell end))``). So
  no window is longer than ``max_length`` and a never-ending session is emitted cell by cell.
  A grid and not "``max_length`` after the session's first event" because the grid's cell
  boundaries are frame boundaries, so the minute frames still decide it exactly; a cut at
  ``first + max_length`` would fall inside a frame.
- A session is closed, and its one final row emitted, once the watermark has passed its end:
  ``window_end <= watermark``, where the watermark is the largest accepted event time minus
  ``max_out_of_orderness``. A session still open at the end of the data is not emitted. Its
  row belongs to the daily partition of its ``window_end``'s UTC date.

Why sessions can be computed from minute frames exactly: two events of one frame are less than
one bucket apart, so with ``gap >= bucket`` no session boundary can fall inside a frame. A
frame then needs only its first and last event time beside its partials: two consecutive
frames of a key belong to one session exactly when the next frame's first event is less than
``gap`` after the previous frame's last.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from windowing_core.window_spec import DAY_SECONDS, check_time, format_duration, parse_duration

SESSION_FIELDS = {"gap", "max_length", "emit", "time"}
"""What a session window may declare; ``length``, ``slide``, ``offset`` are a sliding window's."""


@dataclass(frozen=True)
class SessionSpec:
    """A named session window: ``gap`` and (optional) ``max_length`` in whole seconds.

    ``emit`` is ``final``: one row per closed session. Provisional change points of open
    sessions (``emit: changes``) are not built yet, and refused rather than ignored.
    """

    name: str
    gap: int
    bucket: int = 60
    max_length: int | None = None
    emit: str = "final"

    @classmethod
    def of(cls, name: str, gap: str | int, bucket: str | int = "1m", max_length: str | int | None = None,
           emit: str = "final") -> SessionSpec:
        """Build from duration strings: ``SessionSpec.of("visits", "30m")``."""
        return cls(name=name, gap=parse_duration(gap, field_name=f"windows.{name}.gap"),
                   bucket=parse_duration(bucket, field_name="bucket"),
                   max_length=None if max_length is None else parse_duration(
                       max_length, field_name=f"windows.{name}.max_length"),
                   emit=emit)

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any], bucket: int) -> SessionSpec:
        """The configuration's ``windows: {NAME: {gap: 30m, max_length: 1d}}``."""
        where = f"windows.{name}"
        mixed = sorted({"length", "slide", "offset", "step"} & set(spec))
        if mixed:
            raise ValueError(f"{where}.gap makes a session window, which takes no {', '.join(mixed)}")
        unknown = set(spec) - SESSION_FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        check_time(where, spec.get("time", "event"))
        if spec.get("time", "event") != "event":
            raise ValueError(f"{where}.time: session windows by arrival time are not built yet; use 'event'")
        return cls.of(str(name), spec["gap"], bucket, spec.get("max_length"), spec.get("emit", "final"))

    def __post_init__(self) -> None:
        where = f"windows.{self.name}"
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"window name {self.name!r}: use letters, digits and underscores")
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
        if self.emit != "final":
            raise ValueError(f"{where}.emit: a session window emits 'final' rows only, got {self.emit!r}")

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
        return text


# -- the oracle: brute force from the raw events ------------------------------------------------


@dataclass(frozen=True)
class SessionRow:
    key: str
    window: str
    window_start: datetime
    window_end: datetime
    event_count: int
    values: tuple


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


def session_rows(events: Iterable, config, first: date, last: date) -> list[SessionRow]:
    """Final rows of every configured session window whose ``window_end`` lies on days
    ``first .. last`` and is at or behind the watermark (the largest accepted event time minus
    ``max_out_of_orderness``). Each row's values are folded again from the raw events inside it."""
    from windowing_core.reference import accepted_events, fold  # the reference imports the specs

    accepted = accepted_events(events, config)
    if not accepted:
        return []
    watermark = max(e.event_time for e in accepted) - timedelta(seconds=config.max_out_of_orderness)
    by_key: dict[str, list] = defaultdict(list)
    for e in accepted:
        by_key[e.key].append(e)
    rows = []
    for spec in config.sessions:
        for key, mine in by_key.items():
            for start, end in sessions([e.event_time for e in mine], spec):
                if end <= watermark and first <= end.date() <= last:
                    inside = [e for e in mine if start <= e.event_time < end]
                    rows.append(SessionRow(key, spec.name, start, end, len(inside), fold(config, inside)))
    return rows
