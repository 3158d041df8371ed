"""A run below a day: the interval ``[start, until)`` of one UTC day whose change points it replaces.

One definition for the command line (``--from/--until``), the jobs and their read plans, so an
interval is checked once, where it is made, and every refusal names it in datetimes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta


@dataclass(frozen=True)
class RunInterval:
    """``[start, until)`` within one UTC day; a naive datetime is read as UTC."""

    start: datetime
    until: datetime

    def __post_init__(self) -> None:
        start, until = (t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
                        for t in (self.start, self.until))
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "until", until)
        midnight = datetime(start.year, start.month, start.day, tzinfo=UTC)
        if not start < until <= midnight + timedelta(days=1):
            raise ValueError(f"a run below a day lies within its one day: {self} is not within {start.date()}")

    @classmethod
    def of_seconds(cls, start: int, until: int) -> RunInterval:
        return cls(datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(until, UTC))

    @property
    def day(self) -> date:
        return self.start.date()

    @property
    def seconds(self) -> tuple[int, int]:
        """``[start, until)`` in epoch seconds, as the jobs' time arithmetic counts."""
        return int(self.start.timestamp()), int(self.until.timestamp())

    def require_day(self, first: date, last: date) -> None:
        """Refuse a run of days ``first .. last`` this interval is not within."""
        if not first == last == self.day:
            raise ValueError(f"a run below a day lies within its one day: {self} is not within {first} .. {last}")

    def require_grid(self, seconds: int, what: str) -> None:
        """Refuse an interval whose ends are not whole multiples of ``seconds`` (``what``: a bucket)."""
        if any(s % seconds for s in self.seconds):
            raise ValueError(f"a run below a day starts and ends on whole {what}s ({seconds} s): {self} does not")

    def __str__(self) -> str:
        return f"{self.start:%Y-%m-%dT%H:%M:%S} .. {self.until:%Y-%m-%dT%H:%M:%S}"
