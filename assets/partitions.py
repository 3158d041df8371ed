"""The partitions (days, or parts of days: ``partition:``), the mappings between event time and
arrival time, and the job runs a range of partitions makes.

Event time decides the partition of ``minute_partials`` and the window tables; arrival time
decides the partition of ``events``. Allowed lateness L and the longest window W say how far
apart the two can be.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import dagster as dg

from windowing_core.config import PipelineConfig
from windowing_core.run_interval import PART_FORMAT, RunInterval, partition_cron
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

DEFAULT_START_DATE = "2025-01-01"


def partitions_from_environment(environ: Mapping[str, str],
                                seconds: int = DAY_SECONDS) -> dg.TimeWindowPartitionsDefinition:
    """The partitions of ``seconds`` (the configuration's ``partition:``; daily by default) from
    ``PANES_START_DATE`` to the end of ``PANES_END_DATE`` (both included, UTC days).

    The first partition should be the first day with data: Dagster shows every partition without
    a materialisation as missing, so days before the data would show as work left to do. Without
    an end the partitions run to today, as a pipeline that keeps ingesting needs; a fixed end
    suits data that stops (the demo's days). A malformed date fails when the Definitions load.

    Below a day the partition under way exists too (``end_offset=1``): a file landing in the
    current hour is ingested and its windows computed within minutes, and computed again as more
    lands and when the schedule runs the part as it ends. A day's partition exists once it ends.
    """
    start = _day(environ, "PANES_START_DATE") or date.fromisoformat(DEFAULT_START_DATE)
    end = _day(environ, "PANES_END_DATE")
    if end is not None and end < start:
        raise ValueError(f"PANES_END_DATE {end} is before PANES_START_DATE {start}")
    after = end + timedelta(days=1) if end else None  # Dagster's end is exclusive
    if seconds == DAY_SECONDS:
        return dg.DailyPartitionsDefinition(start_date=start.isoformat(),
                                            end_date=after.isoformat() if after else None)
    return dg.TimeWindowPartitionsDefinition(
        cron_schedule=partition_cron(seconds), fmt=PART_FORMAT, end_offset=1,
        start=datetime.combine(start, time(), UTC), end=datetime.combine(after, time(), UTC) if after else None)


@functools.cache
def partitions_every(seconds: int) -> dg.TimeWindowPartitionsDefinition:
    """The deployment's partitions of ``seconds``, from this process's environment (one
    definition per length, so every asset of it shares the same object)."""
    return partitions_from_environment(os.environ, seconds)


def partitions_of(config: PipelineConfig) -> dg.TimeWindowPartitionsDefinition:
    return partitions_every(config.partition)


def _day(environ: Mapping[str, str], name: str) -> date | None:
    value = environ.get(name, "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} must be a date (YYYY-MM-DD), not {value!r}") from None


daily_partitions = partitions_every(DAY_SECONDS)
"""Whole days: what a spine and an online store run by (``partition:`` below a day refuses them)."""


def _mapping(start_offset: int, end_offset: int) -> dg.TimeWindowPartitionMapping:
    # Partitions before the first one do not exist; a run of the first day must still be
    # allowed. The flag is beta in Dagster 1.13, so its warning is silenced here only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.TimeWindowPartitionMapping(start_offset=start_offset, end_offset=end_offset,
                                             allow_nonexistent_upstream_partitions=True)


def parts_per_day(config: PipelineConfig) -> int:
    return DAY_SECONDS // config.partition


def arrivals_of_event_day(config: PipelineConfig) -> dg.TimeWindowPartitionMapping:
    """Event day D reads arrival days D .. D + L. An event part reads what the job of its day
    reads, the arrival parts of D .. D + L; the offsets count parts from the event part, so they
    reach from its day's first part to D + L's last, and over-cover by less than a day."""
    n = parts_per_day(config)
    return _mapping(-(n - 1), (config.allowed_lateness_days + 1) * n - 1)


def arrivals_of_event_part(config: PipelineConfig) -> dg.TimeWindowPartitionMapping:
    """The arrival parts that can change an event part's partials: what automation re-fires it on.

    Under a lateness in whole days, those of ``arrivals_of_event_day``. Below, an event before the
    part's end E counts only from an arrival part starting before E + L, so the parts after the
    one holding E + L change nothing (``windowing_core.reference``, step 2: an earlier part's
    copy always wins, so a later one cannot displace it). Under ``late_policy: drop`` an arrival
    may still move the watermark of its arrival day's earlier arrivals (arrival order is by
    arrival time within a day), so the parts reach on to that day's end."""
    if config.lateness_by_date:
        return arrivals_of_event_day(config)
    n = parts_per_day(config)
    reach = -(-config.allowed_lateness // config.partition)
    return _mapping(-(n - 1), reach + (n - 1 if config.late_policy == "drop" else 0))


def reach_days(config: PipelineConfig) -> int:
    """How many days before a window day its frames begin: ceil(W) + 1 (the frame leaving first)."""
    return math.ceil(config.longest_window / DAY_SECONDS) + 1


def frames_of_window_day(config: PipelineConfig, extra_days: int = 0) -> dg.TimeWindowPartitionMapping:
    """Window ends on day D see frames from D - ceil(W) - 1 (the frame leaving first) to D
    (``extra_days`` earlier still: for frames written by earlier days' runs, arrival frames, or
    for count windows, whose day a late event of any of the L + 1 days before renumbers); a
    window part, the parts from that day's first to its own."""
    n = parts_per_day(config)
    return _mapping(-((reach_days(config) + extra_days) * n + n - 1), 0)


def day_range(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """The first and last day (both included) of a run of daily partitions (a spine, a store)."""
    window = context.partition_time_window
    return window.start.date(), (window.end - timedelta(days=1)).date()


@dataclass(frozen=True)
class Run:
    """One job run of an asset's partitions: whole days ``first .. last``, or ``interval``, a
    part of the one day ``first``."""

    first: date
    last: date
    interval: RunInterval | None = None

    def argv(self, lakehouse_root: str) -> list[str]:
        """The command line every job takes for this run: the lakehouse and the days (or the part)."""
        if self.interval is None:
            return ["--lakehouse", lakehouse_root, "--date", self.first.isoformat(), "--until", self.last.isoformat()]
        return ["--lakehouse", lakehouse_root, "--from", self.interval.start.isoformat(),
                "--until", self.interval.until.isoformat()]

    def __str__(self) -> str:
        return str(self.interval) if self.interval is not None else f"{self.first} .. {self.last}"


def runs_of(start: datetime, end: datetime) -> list[Run]:
    """The job runs of the partitions ``[start, end)``, in time order: the part of a day before
    its first midnight, the whole days, the part after the last midnight. A backfill of two days
    of hourly partitions is then one run of two days, not 48 runs of an hour."""
    start, end = (t.astimezone(UTC) for t in (start, end))
    first_midnight = datetime.combine(start.date(), time(), UTC)
    if first_midnight < start:
        first_midnight += timedelta(days=1)
    last_midnight = datetime.combine(end.date(), time(), UTC)
    if last_midnight < first_midnight:  # within one day, neither end at its midnight
        return [Run(start.date(), start.date(), RunInterval(start, end))]
    runs = [Run(start.date(), start.date(), RunInterval(start, first_midnight))] if start < first_midnight else []
    if first_midnight < last_midnight:
        runs.append(Run(first_midnight.date(), (last_midnight - timedelta(days=1)).date()))
    if last_midnight < end:
        runs.append(Run(last_midnight.date(), last_midnight.date(), RunInterval(last_midnight, end)))
    return runs


def runs(context: dg.AssetExecutionContext) -> list[Run]:
    """The job runs of the run's partition or partition range (``runs_of``)."""
    window = context.partition_time_window
    return runs_of(window.start, window.end)


def windows_of_spine_day(config: PipelineConfig, *, snapshot: bool) -> dg.TimeWindowPartitionMapping:
    """Spine day D reads the change points of the days of the window ends its rows read (an end
    lies less than a slide before its row's ts: D - ceil(slide) .. D) and the snapshots of the
    day before each. Closed sessions of any earlier day are read too, and not declared: a
    session's last row can be of any day, and no mapping says "every day before"."""
    reach = max([math.ceil(w.every / DAY_SECONDS) for w in config.windows], default=0)
    return _mapping(-(reach + (1 if snapshot else 0)), 0)


def partials_of_spine_day(windows: list[WindowSpec]) -> dg.TimeWindowPartitionMapping:
    """Spine day D read at its rows' instants (``precision: event``) reaches the partials of the
    days its windows hold: D - ceil(length) .. D."""
    return _mapping(-max(math.ceil(w.length / DAY_SECONDS) for w in windows), 0)
