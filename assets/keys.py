"""A table's asset key and spec under a configuration, with and without ``groups:``.

Without groups every key is bare, as it always was; with them a group's tables carry its name
as key prefix and asset group (``jobs.tables.asset_key``), so the UI shows one lineage per group.
"""

from typing import Any

import dagster as dg

from assets.columns import column_schema
from jobs.tables import Table, asset_group, asset_key
from windowing_core.config import PipelineConfig


def key(name: str, config: PipelineConfig) -> dg.AssetKey:
    return dg.AssetKey(asset_key(name, config))


def table_spec(table: Table, config: PipelineConfig, group: str, **kwargs: Any) -> dg.AssetSpec:
    """The spec of a Delta table written by Spark, its columns in its metadata; ``group`` is its
    asset group without groups (a group's tables are in the group's)."""
    return dg.AssetSpec(key(table.name, config), group_name=asset_group(table.name, group, config),
                        kinds={"spark", "delta"}, metadata=column_schema(table, config), **kwargs)
