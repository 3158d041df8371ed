"""Count windows (Flink's ``countWindow(size)`` and ``countWindow(size, slide)``): the spec and
its pure rules (the brute-force oracle is ``reference.count_rows``).

Bounds, once for the whole module:

- A key's events are numbered 1, 2, 3, ... in order of event time, ties at one instant broken by
  ``event_id`` (ascending). The events are the accepted ones, after deduplication and the late
  policy, the same the time windows fold; under a row filter (``where``), those it selects.
- ``{count: N}`` is tumbling: the key's events ``kN - N + 1 .. kN`` make its k-th window, which
  fires at its last event (Flink: ``GlobalWindows`` with a purging ``CountTrigger.of(N)``). A
  key's last, incomplete window never fires.
- ``{count: N, slide: S}`` (``S <= N``) fires at every S-th event of the key, at event ``kS``,
  a window of its last N events, ``max(1, kS - N + 1) .. kS``: fewer than N at the key's start
  (Flink: ``CountEvictor.of(N)`` and ``CountTrigger.of(S)``). ``{count: N}`` is ``slide: N``. A
  slide longer than the count would fire windows that skip events, and is refused.
- Each firing is one row of ``window_changes``: ``window_start`` and ``window_end`` are the event
  times of its first and last event (both inside it: the end is not exclusive here), and its
  partition the UTC date of ``window_end``. Where a key fires more than once at one instant (S
  events or more at the same event time), the row is the last of those firings: a table of
  values by instant holds one per key and instant, and a read at that instant sees every event
  of it (Flink would emit each firing into its stream).
- Exact from events, not frames: a count cuts inside a minute frame wherever the N-th event
  falls, so these windows read the accepted events themselves.
- A late event within the allowed lateness shifts the numbers of the key's later events, so it
  changes every later window of its key: late firing re-materialises its event day and the
  days after it (as many as a late event can reach back, ``allowed_lateness`` plus one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from windowing_core.window_spec import refuse_unknown

COUNT_FIELDS = {"count", "slide"}
MAX_COUNT = 100_000
"""The longest count window: a firing folds its N events again, as Flink's evicting window does,
so an event costs ``ceil(N / S)`` merges; past this, a time window is the better tool."""


@dataclass(frozen=True)
class CountSpec:
    """A named count window: ``size`` events, firing every ``slide`` events (``slide == size``:
    tumbling)."""

    name: str
    size: int
    slide: int

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any]) -> CountSpec:
        """The configuration's ``windows: {NAME: {count: 100, slide: 10}}``."""
        where = f"windows.{name}"
        mixed = sorted({"length", "offset", "step", "gap", "emit", "time", "keyed", "align_to",
                        "max_length"} & set(spec))
        if mixed:
            raise ValueError(f"{where}.count makes a count window, which takes no {', '.join(mixed)}")
        refuse_unknown(spec, COUNT_FIELDS, where)
        size = _whole(spec["count"], f"{where}.count")
        return cls(str(name), size, _whole(spec.get("slide", size), f"{where}.slide"))

    def __post_init__(self) -> None:
        where = f"windows.{self.name}"
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"window name {self.name!r}: use letters, digits and underscores")
        if not 1 <= self.size <= MAX_COUNT:
            raise ValueError(f"{where}.count must be a whole number of events from 1 to {MAX_COUNT}, got {self.size}")
        if not 1 <= self.slide <= self.size:
            raise ValueError(f"{where}.slide must be from 1 to the count ({self.size}), got {self.slide}: "
                             "a longer slide would skip events")

    @property
    def tumbling(self) -> bool:
        return self.slide == self.size

    def describe(self) -> str:
        if self.tumbling:
            return f"{self.name}: every {self.size} events of a key"
        return f"{self.name}: a key's last {self.size} events, every {self.slide} events"


def _whole(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be a whole number of events, got {value!r}")
    return value


# -- the rules every path shares ---------------------------------------------------------------


def fires(position: int, spec: CountSpec) -> bool:
    """Whether the key's event numbered ``position`` (from 1) fires a window."""
    return position % spec.slide == 0


def window_of(position: int, spec: CountSpec) -> range:
    """The numbers of the events in the window firing at ``position``."""
    return range(max(1, position - spec.size + 1), position + 1)


def released_after(position: int, spec: CountSpec) -> int:
    """The key's event count from which the event numbered ``position`` is in no window still to
    fire: the next firing after that count, ``S * (count // S + 1)``, starts past it. Until then
    it is carried from day to day (at most N - 1 events of a key are)."""
    return spec.slide * (-(-(position + spec.size) // spec.slide) - 1)
