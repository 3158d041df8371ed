"""Daily partitions and the mappings between event days and arrival days.

Event time decides the partition of ``minute_partials`` and the window tables; arrival time
decides the partition of ``events``. Allowed lateness L and the longest window W say how far
apart the two can be.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from datetime import date, timedelta

import dagster as dg

from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

DEFAULT_START_DATE = "2025-01-01"


def partitions_from_environment(environ: Mapping[str, str]) -> dg.DailyPartitionsDefinition:
    """The daily partitions ``PANES_START_DATE`` .. ``PANES_END_DATE`` (both included, UTC days).

    The first partition should be the first day with data: Dagster shows every partition without
    a materialisation as missing, so days before the data would show as work left to do. Without
    an end the partitions run to today, as a pipeline that keeps ingesting needs; a fixed end
    suits data that stops (the demo's days). A malformed date fails when the Definitions load.
    """
    start = _day(environ, "PANES_START_DATE") or date.fromisoformat(DEFAULT_START_DATE)
    end = _day(environ, "PANES_END_DATE")
    if end is not None and end < start:
        raise ValueError(f"PANES_END_DATE {end} is before PANES_START_DATE {start}")
    return dg.DailyPartitionsDefinition(
        start_date=start.isoformat(),
        end_date=(end + timedelta(days=1)).isoformat() if end else None)  # Dagster's end is exclusive


def _day(environ: Mapping[str, str], name: str) -> date | None:
    value = environ.get(name, "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} must be a date (YYYY-MM-DD), not {value!r}") from None


daily_partitions = partitions_from_environment(os.environ)


def _mapping(start_offset: int, end_offset: int) -> dg.TimeWindowPartitionMapping:
    # Partitions before the first one do not exist; a run of the first day must still be
    # allowed. The flag is beta in Dagster 1.13, so its warning is silenced here only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.TimeWindowPartitionMapping(start_offset=start_offset, end_offset=end_offset,
                                             allow_nonexistent_upstream_partitions=True)


def arrivals_of_event_day(config: PipelineConfig) -> dg.TimeWindowPartitionMapping:
    """Event day D reads arrival days D .. D + L."""
    return _mapping(0, config.allowed_lateness_days)


def reach_days(config: PipelineConfig) -> int:
    """How many days before a window day its frames begin: ceil(W) + 1 (the frame leaving first)."""
    return math.ceil(config.longest_window / DAY_SECONDS) + 1


def frames_of_window_day(config: PipelineConfig, extra_days: int = 0) -> dg.TimeWindowPartitionMapping:
    """Window ends on day D see frames from D - ceil(W) - 1 (the frame leaving first) to D
    (``extra_days`` earlier still: for frames written by earlier days' runs, arrival frames, or
    for count windows, whose day a late event of any of the L + 1 days before renumbers)."""
    return _mapping(-(reach_days(config) + extra_days), 0)


def day_range(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """The first and last day (both included) of the run's partition or partition range."""
    window = context.partition_time_window
    return window.start.date(), (window.end - timedelta(days=1)).date()


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
