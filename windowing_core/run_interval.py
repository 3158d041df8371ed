"""A run below a day: the interval ``[start, until)`` of one UTC day whose change points it replaces.

One definition for the command line (``--from/--until``), the jobs and their read plans, so an
interval is checked once, where it is made, and every refusal names it in datetimes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from windowing_core.window_spec import DAY_SECONDS


def midnight(day: date) -> datetime:
    """The UTC instant a day (or the day of a datetime) starts: event days and parts are UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC, a naive one read as UTC: the session and the Delta log hand back UTC
    instants without their zone."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class RunInterval:
    """``[start, until)`` within one UTC day; a naive datetime is read as UTC."""

    start: datetime
    until: datetime

    def __post_init__(self) -> None:
        start, until = as_utc(self.start), as_utc(self.until)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "until", until)
        if not start < until <= midnight(start) + timedelta(days=1):
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

    @property
    def closes_day(self) -> bool:
        """Whether the interval runs to its day's end: its run writes what the next day continues from."""
        return self.until == midnight(self.day) + timedelta(days=1)

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


STAGES = ("ingest", "partials", "windows")
"""The jobs that run part of a day, in the order a part flows through them."""


def why_not_below_a_day(config: Any, stage: str) -> str | None:
    """Why ``stage``'s job cannot run part of a day under ``config`` (a ``PipelineConfig``),
    or None: the one list of those rules, for the jobs' ``--from/--until`` and for a deployment's
    ``partition:`` below a day, which needs every stage of every group to run in parts."""
    if stage == "partials" and config.places_by_arrival:
        return "a run below a day computes frames by event time only: this configuration has arrival-time windows"
    if stage == "windows":
        if config.arrival_windows or config.arrival_sessions:
            return ("a run below a day computes windows of event time only: this configuration has "
                    "arrival-time windows or sessions")
        for spec in config.windows:
            if spec.every > DAY_SECONDS:  # a day without an end: its snapshot's as_of lies before it
                return f"window {spec.name!r} ends less often than daily: it runs by whole days"
    return None


def refuse_below_a_day(config: Any, stage: str, interval: RunInterval | None, first: date | None = None,
                       last: date | None = None) -> None:
    """Refuse, in one line, a run of ``interval`` that ``stage``'s job cannot make (before Spark
    starts, on the command line): a rule above, an end off the job's grid (a minute for ingest's
    part folders, the bucket for frames), or days ``first .. last`` it does not lie within."""
    if interval is None:
        return
    reason = why_not_below_a_day(config, stage)
    if reason is not None:
        raise ValueError(reason)
    if stage == "ingest" and config.source is not None and config.source.is_table:
        if config.partition == DAY_SECONDS:  # every row of a day is in its one part, the day's end
            raise ValueError("a table source's rows arrive in parts of the configured partition: with "
                             "partition: 1d it runs whole days")
        interval.require_grid(config.partition, "partition")
    elif stage == "ingest":
        interval.require_grid(60, "minute")
    elif stage == "partials":
        interval.require_grid(config.bucket, "bucket")
    if first is not None:
        interval.require_day(first, last)


def partition_cron(seconds: int) -> str:
    """The cron schedule that starts every partition of ``seconds`` (a day, or minutes that
    divide an hour, or hours that divide a day); a ValueError says why another length is none."""
    if seconds == DAY_SECONDS:
        return "0 0 * * *"
    minutes, rest = divmod(seconds, 60)
    if seconds <= 0 or rest:
        raise ValueError(f"partition must be whole minutes, got {seconds} s")
    if minutes < 60 and 60 % minutes == 0:
        return f"*/{minutes} * * * *" if minutes > 1 else "* * * * *"
    if minutes % 60 == 0 and 24 % (minutes // 60) == 0:
        return f"0 */{minutes // 60} * * *" if minutes > 60 else "0 * * * *"
    raise ValueError(f"partition ({seconds // 60} minutes) must be a day, minutes that divide an hour or hours "
                     "that divide a day (1d, 1h, 15m ...): a schedule starts each partition")


PART_FORMAT = "%Y-%m-%d-%H:%M"
"""A partition key below a day: Dagster's hourly partitions' format (``2025-01-28-13:00``)."""


def part_key(day: date, part: datetime, seconds: int) -> str:
    """The key of the partition of ``seconds`` (below a day) that reads arrival part ``part`` of
    ``day``: the one holding its time, or for the day's end (files outside the part folders) the
    day's last, which the run closing the day is."""
    start = midnight(day)
    offset = min((part - start).total_seconds(), DAY_SECONDS - 1)
    return (start + timedelta(seconds=offset - offset % seconds)).strftime(PART_FORMAT)


def part_keys(day: date, until: datetime, seconds: int) -> list[str]:
    """The keys of ``day``'s partitions of ``seconds`` that start before ``until``."""
    start = midnight(day)
    count = math.ceil((until - start).total_seconds() / seconds)
    return [(start + timedelta(seconds=i * seconds)).strftime(PART_FORMAT) for i in range(count)]


def partition_starts(keys: Iterable[str], seconds: int) -> set[datetime]:
    """The starts of the partitions of ``seconds`` that materialised partition ``keys`` cover: a
    part's own key, and a day's key every part of that day (a deployment that ran daily before it
    ran in parts). Under daily partitions a part's key covers no whole day and counts for none."""
    starts = set()
    for key in keys:
        if len(key) == len("YYYY-MM-DD"):
            day = midnight(date.fromisoformat(key))
            starts.update(day + timedelta(seconds=s) for s in range(0, DAY_SECONDS, seconds))
        elif seconds < DAY_SECONDS:
            starts.add(partition_start(key, seconds))
    return starts


def partition_start(key: str, seconds: int) -> datetime:
    """The start of the partition of ``seconds`` keyed ``key`` (``partition_key``'s inverse)."""
    if seconds == DAY_SECONDS:
        return midnight(date.fromisoformat(key))
    return datetime.strptime(key, PART_FORMAT).replace(tzinfo=UTC)


def partition_key(start: datetime, seconds: int) -> str:
    """The key of the partition of ``seconds`` that starts at ``start``."""
    return start.date().isoformat() if seconds == DAY_SECONDS else start.strftime(PART_FORMAT)
