"""Daily partitions and the mappings between event days and arrival days.

Event time decides the partition of ``minute_partials`` and the window tables; arrival time
decides the partition of ``events``. Allowed lateness L and the longest window W say how far
apart the two can be.
"""

from __future__ import annotations

import math
import os
import warnings
from datetime import date, timedelta

import dagster as dg

from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS

START_DATE = os.environ.get("PANES_START_DATE", "2025-01-01")

daily_partitions = dg.DailyPartitionsDefinition(start_date=START_DATE)


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


def frames_of_window_day(config: PipelineConfig, extra_days: int = 0) -> dg.TimeWindowPartitionMapping:
    """Window ends on day D see frames from D - ceil(W) - 1 (the frame leaving first) to D
    (``extra_days`` earlier still for frames written by earlier days' runs: arrival frames)."""
    reach = math.ceil(config.longest_window / DAY_SECONDS) + 1 + extra_days
    return _mapping(-reach, 0)


def day_range(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """The first and last day (both included) of the run's partition or partition range."""
    window = context.partition_time_window
    return window.start.date(), (window.end - timedelta(days=1)).date()
