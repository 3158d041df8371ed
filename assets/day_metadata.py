"""Each day's own counts on each day's materialisation, also when one run covers a range.

A single-run backfill materialises every day of its range from one output, and Dagster copies
that output's metadata to each day's materialisation: the range's totals would show as each
day's ``dagster/row_count``. Metadata added for one partition (``add_asset_metadata`` with a
``partition_key``) goes to that day's materialisation only and wins over the range's, so the UI's
partition view and its plots are true per day. The counts come from the Delta log's file
statistics of each day's partition after the write (no data is read).
"""

from collections.abc import Mapping
from datetime import date
from typing import Any

import dagster as dg

from jobs.storage import delta_io


def rows_by_day(path: str, column: str, days: list[date], *more: tuple[str, str, object]) -> dict[date, int]:
    """Rows in each day's partition of the table at ``path`` (``column`` = day, and ``more``)."""
    return {d: delta_io.row_count(path, partition_filters=[(column, "=", d.isoformat()), *more]) for d in days}


def add_day_metadata(context: dg.AssetExecutionContext, asset_key: dg.AssetKey | str,
                     by_day: Mapping[date, Mapping[str, Any]]) -> None:
    """Record each day's metadata on that day's materialisation of ``asset_key``."""
    for day, metadata in by_day.items():
        context.add_asset_metadata(dict(metadata), asset_key=asset_key, partition_key=day.isoformat())
