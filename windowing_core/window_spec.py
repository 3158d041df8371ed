"""Window specifications and the pure arithmetic of frames and window ends.

Every time here is either a UTC-aware ``datetime`` or whole epoch seconds. The Spark jobs
use the epoch-second forms (they map one-to-one onto Spark SQL expressions); the reference
implementation and the tests use both.

Bounds, once for the whole module:

- A frame (bucket) starting at ``f`` is the half-open interval ``[f, f + bucket)``.
- Windows are ``[k * slide + offset, k * slide + offset + length)`` for every integer ``k``, as
  Flink (``SlidingEventTimeWindows.of(size, slide, offset)``) and Bytewax (``align_to``) define
  them: start inclusive, end exclusive. Window *starts* lie on the slide grid, so the window that
  ends at ``t`` covers ``[t - length, t)`` and ends lie on the grid shifted by the length,
  ``(t - offset - length) % slide == 0`` (``end_offset``). Where slide > length the windows
  leave gaps, and an instant in a gap belongs to no window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

_DURATION = re.compile(r"^\s*(-?)\s*(\d+)\s*(s|m|h|d|w)\s*$")
ALL_KEYS = "*"
"""The key of a non-keyed window's rows (``keyed: false``, Flink's ``windowAll``): one fixed,
non-null value, so that every key column stays non-null and rows keep the tables' shape."""
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DAY_SECONDS = 86400
MAX_DURATION = 3660 * DAY_SECONDS
"""About ten years: the longest length, slide or offset a window may have. Window ends and the
days they reach are dates, and Python's and Spark's dates end at 9999-12-31, so an unbounded
length (``1000000w``) would fail a run with an overflow instead of loading as an error."""


def parse_duration(text: str | int | timedelta, *, field_name: str = "duration") -> int:
    """Parse '7d', '1m', '10s', '-8h' (or a timedelta, or whole seconds) into whole seconds."""
    if isinstance(text, timedelta):
        seconds = text.total_seconds()
        if seconds != int(seconds):
            raise ValueError(f"{field_name}: {text!r} is not a whole number of seconds")
        return int(seconds)
    if isinstance(text, bool):
        raise ValueError(f"{field_name}: expected a duration such as '7d', got {text!r}")
    if isinstance(text, int):
        return text
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(
            f"{field_name}: cannot parse duration {text!r}; use a whole number and a unit "
            "s, m, h, d or w, for example '7d', '1m', '10s', '-8h'"
        )
    sign, amount, unit = match.groups()
    if len(amount.lstrip("0")) > 15:  # beyond any cap (3660d is 9 digits of seconds); int() fails past 4300
        shown = str(text).strip()
        shown = shown if len(shown) <= 20 else shown[:20] + "..."
        raise ValueError(f"{field_name}: {shown!r} is longer than any duration "
                         f"(at most {format_duration(MAX_DURATION)})")
    return (-1 if sign else 1) * int(amount) * _UNIT_SECONDS[unit]


def unknown_names(names: set) -> str:
    """Unknown field names for a message, as text: YAML reads ``1:`` as a number and ``~:`` as
    None, and those neither join nor sort with strings."""
    return ", ".join(sorted(str(n) for n in names))


def refuse_unknown(raw: dict, known: Iterable[str], where: str | None = None) -> None:
    """Refuse, in one line naming them and the known ones, the fields of a configuration mapping
    that ``known`` does not hold: a misspelt field would otherwise be silently ignored. ``where``
    names the mapping (``windows.7d``); the configuration's top level has no name."""
    unknown = set(raw) - set(known)
    if unknown:
        label = f"{where}: unknown field(s) " if where else "unknown configuration field(s): "
        raise ValueError(f"{label}{unknown_names(unknown)}; known: {', '.join(sorted(known))}")


def format_duration(seconds: int) -> str:
    """The shortest exact spelling: 604800 -> '7d', 90 -> '90s'."""
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{sign}{seconds // _UNIT_SECONDS[unit]}{unit}"
    return f"{sign}{seconds}s"


def to_epoch_seconds(moment: datetime) -> int:
    """Whole seconds since the epoch; refuses naive datetimes (Bytewax's rule: UTC-aware only)."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: panes only accepts timezone-aware UTC times")
    return int(moment.timestamp() // 1)


def from_epoch_seconds(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


TIMES = ("event", "arrival")


def check_time(where: str, time: str) -> None:
    """A window's ``time``: which of an event's times places it."""
    if time not in TIMES:
        raise ValueError(f"{where}.time must be 'event' or 'arrival', got {time!r}")


def parse_utc_timestamp(value: str | datetime, *, field_name: str) -> datetime:
    """An ISO timestamp in UTC (``2025-01-30T00:00:00Z``, or an aware ``datetime`` at offset 0),
    as Bytewax's ``align_to`` takes: anything naive, at another offset, or a bare date is refused."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            moment = None
    if (not isinstance(moment, datetime) or moment.tzinfo is None
            or moment.utcoffset() != timedelta(0)):
        raise ValueError(f"{field_name}: expected a UTC timestamp such as '2025-01-30T00:00:00Z', got {value!r}")
    return moment


@dataclass(frozen=True)
class WindowSpec:
    """A named window: ``length``, ``every`` (the spacing of its ends), ``offset`` and ``bucket``
    in whole seconds.

    A sliding window ends ``every`` slide (:attr:`slide`); a tumbling one every ``length``.
    ``offset`` shifts the grid of window starts, ``k * every + offset``, as in Flink: ``-8h``
    starts daily windows at a UTC-8 midnight.
    ``align_to`` (Bytewax's) says the same with a UTC instant at which some window starts; give
    one or the other. The offset is kept normalised into ``[0, every)`` because only its position
    on the grid matters.

    With ``step``, the window is cumulating (Flink's ``CUMULATE(step, size)``): windows share a
    start on the grid ``k * length + offset`` and grow by ``step`` up to ``length``, so the
    windows of one period are ``[s, s + step)``, ``[s, s + 2 * step)``, .. ``[s, s + length)``,
    and the next period starts again at ``s + length``. Its ends lie ``every`` step (it has no
    slide), and the offset is normalised into ``[0, length)``.

    ``keyed: false`` aggregates all keys together (Flink's ``windowAll``): its rows carry the key
    ``ALL_KEYS`` (``*``).
    """

    name: str
    length: int
    every: int  # the spacing of window ends: the slide, or a cumulating window's step
    offset: int | None = None
    bucket: int = 60
    emit: str = "changes"
    align_to: datetime | None = None
    step: int | None = None
    keyed: bool = True
    # ``event`` (event time) or ``arrival``: processing-time windows (Flink's, Akka's system
    # time) place each event by its arrival_time; they are never late (``jobs.windows.arrival_frames``).
    time: str = "event"

    @classmethod
    def of(
        cls,
        name: str,
        length: str | int,
        slide: str | int | None = None,
        offset: str | int | None = None,
        bucket: str | int = "1m",
        emit: str = "changes",
        *,
        align_to: str | datetime | None = None,
        step: str | int | None = None,
        keyed: bool = True,
        time: str = "event",
    ) -> WindowSpec:
        """Build from duration strings: ``WindowSpec.of("7d", "7d", "1m")``."""
        length_s = parse_duration(length, field_name=f"windows.{name}.length")
        every_s = length_s if slide is None else parse_duration(slide, field_name=f"windows.{name}.slide")
        step_s = None if step is None else parse_duration(step, field_name=f"windows.{name}.step")
        if step_s is not None:
            if slide is not None:
                raise ValueError(f"windows.{name}.step: a cumulating window has no slide (its ends are its steps)")
            every_s = step_s
        return cls(
            name=name,
            length=length_s,
            every=every_s,
            offset=None if offset is None else parse_duration(offset, field_name=f"windows.{name}.offset"),
            bucket=parse_duration(bucket, field_name="bucket"),
            emit=emit,
            align_to=None if align_to is None else parse_utc_timestamp(align_to, field_name=f"windows.{name}.align_to"),
            step=step_s,
            keyed=keyed,
            time=time,
        )

    def __post_init__(self) -> None:
        where = f"windows.{self.name}"
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"window name {self.name!r}: use letters, digits and underscores")
        if not isinstance(self.keyed, bool):
            raise ValueError(f"{where}.keyed must be true or false, got {self.keyed!r}")
        if self.step is not None and self.step <= 0:
            raise ValueError(f"{where}.step must be positive, got {format_duration(self.step)}")
        for label, value in (("length", self.length), ("slide", self.every), ("bucket", self.bucket)):
            if value <= 0:
                raise ValueError(f"{where}.{label} must be positive, got {format_duration(value)}")
        if self.align_to is not None:
            if self.offset is not None:
                raise ValueError(f"{where}: give offset or align_to, not both")
            parse_utc_timestamp(self.align_to, field_name=f"{where}.align_to")
            origin = ("align_to", to_epoch_seconds(self.align_to))
        else:
            origin = ("offset", self.offset or 0)
        if not isinstance(origin[1], int) or isinstance(origin[1], bool):
            raise ValueError(f"{where}.offset: expected whole seconds, got {origin[1]!r}")
        spacing = ("step" if self.step is not None else "slide", self.every)
        for label, value in (("length", self.length), spacing, origin):
            if abs(value) > MAX_DURATION and label != "align_to":  # an instant, not a duration
                raise ValueError(f"{where}.{label} ({format_duration(value)}) must be at most "
                                 f"{format_duration(MAX_DURATION)} (about ten years)")
        for label, value in (("length", self.length), spacing, origin):
            if value % self.bucket:
                raise ValueError(
                    f"{where}.{label} ({format_duration(value)}) must be a whole multiple of "
                    f"the bucket ({format_duration(self.bucket)})"
                )
        if DAY_SECONDS % self.bucket:
            raise ValueError(f"bucket ({format_duration(self.bucket)}) must divide one day evenly")
        if self.step is not None:
            if self.length % self.step:
                raise ValueError(f"{where}.step ({format_duration(self.step)}) must divide the length "
                                 f"({format_duration(self.length)}) into whole steps")
            if self.every != self.step:
                raise ValueError(f"{where}.step: a cumulating window has no slide (its ends are its steps)")
        if self.emit not in ("changes", "final"):
            raise ValueError(f"{where}.emit must be 'changes' or 'final', got {self.emit!r}")
        check_time(where, self.time)
        object.__setattr__(self, "offset", origin[1] % (self.length if self.cumulating else self.every))

    @property
    def slide(self) -> int | None:
        """The slide of a sliding or tumbling window; None for a cumulating one, which has steps."""
        return None if self.cumulating else self.every

    @property
    def tumbling(self) -> bool:
        return self.every == self.length and not self.cumulating

    @property
    def cumulating(self) -> bool:
        return self.step is not None

    def period_start(self, epoch_second: int) -> int:
        """A cumulating window: the start ``k * length + offset`` of the period holding the instant."""
        return epoch_second - (epoch_second - self.offset) % self.length

    @property
    def end_offset(self) -> int:
        """Where window ends lie on their grid of spacing ``every``: starts at ``offset`` plus the length."""
        return (self.offset + self.length) % self.every

    def window_start(self, end: int) -> int:
        """Start of the window that ends at ``end``: its period's, for a cumulating window (whose
        last end is the period's end, so the instant just before ``end`` says which period)."""
        if self.cumulating:
            return self.period_start(end - self.step)
        return end - self.length

    # -- frames ---------------------------------------------------------------------------
    def frame_start(self, epoch_second: int) -> int:
        """Start of the frame ``[f, f + bucket)`` that holds this instant."""
        return epoch_second - epoch_second % self.bucket

    # -- the grid of window ends ----------------------------------------------------------
    def end_at_or_after(self, epoch_second: int) -> int:
        """The first window end ``t >= epoch_second``."""
        return epoch_second + (self.end_offset - epoch_second) % self.every

    def end_at_or_before(self, epoch_second: int) -> int:
        """The last window end ``t <= epoch_second``."""
        return epoch_second - (epoch_second - self.end_offset) % self.every

    def ends_between(self, start: int, stop: int) -> range:
        """Window ends ``t`` with ``start <= t < stop``."""
        return range(self.end_at_or_after(start), stop, self.every)

    def ends_containing(self, epoch_second: int) -> range:
        """Ends of every window that holds this instant: ``t - length <= instant < t``, or for a
        cumulating window every end after it up to its period's end."""
        if self.cumulating:
            return range(self.end_at_or_after(epoch_second + 1), self.period_start(epoch_second) + self.length + 1,
                         self.every)
        return range(self.end_at_or_after(epoch_second + 1), epoch_second + self.length + 1, self.every)

    def enter_end(self, frame_start: int) -> int:
        """The first window end whose window holds the frame (the frame enters there).

        With every end on the bucket grid, ``[f, f + bucket) ⊂ [t - length, t)`` holds exactly
        when ``t - length <= f < t``. A frame in a gap (slide > length) enters and leaves at the
        same end, so no window holds it.
        """
        return self.end_at_or_after(frame_start + self.bucket)

    def leave_end(self, frame_start: int) -> int:
        """The first window end after ``enter_end`` whose window no longer holds the frame: for a
        cumulating window, the first end of the next period."""
        if self.cumulating:
            return self.period_start(frame_start) + self.length + self.step
        return self.end_at_or_after(frame_start + self.length + self.bucket)

    def describe(self) -> str:
        if self.cumulating:
            kind = f"cumulating every {format_duration(self.every)}"
        else:
            kind = "tumbling" if self.tumbling else f"sliding every {format_duration(self.every)}"
        text = f"{self.name}: {format_duration(self.length)} {kind}"
        if self.offset:
            text += f", starting at offset {format_duration(self.offset)}"
        if self.every > self.length:
            text += " (with gaps)"
        if not self.keyed:
            text += ", all keys together"
        if self.time == "arrival":
            text += ", by arrival time"
        return text


def tile_size(spec: WindowSpec) -> int:
    """The coarser tile for hierarchical frames: one day, or for windows shorter than a day the
    largest span that divides a day, is a whole number of buckets and fits in the window (so a
    window's start and end never fall in the same tile)."""
    if spec.length >= DAY_SECONDS:
        return DAY_SECONDS
    return max(t for t in range(spec.bucket, spec.length + 1, spec.bucket) if DAY_SECONDS % t == 0)


def slides_over_day_tiles(spec: WindowSpec) -> bool:
    """Whether the window's non-invertible aggregations read whole days as tiles
    (``daily_partials``): a sliding window whose tile is a day, or a cumulating window whose
    period is longer than a day (its ends merge the period's whole days before the run as day
    tiles and the frames of the days around them; a period of a day or less holds no whole day
    before its last end that a daily run would not read anyway)."""
    if spec.cumulating:
        return spec.length > DAY_SECONDS
    return tile_size(spec) == DAY_SECONDS


DEFAULT_WINDOW = WindowSpec.of("7d", "7d", "1m")
