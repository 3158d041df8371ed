"""``online_values``: each key's latest window values in PostgreSQL, for applications' lookups.

An asset only where the configuration names an online store (``online:``). Day D loads
``window_snapshot`` of D (``jobs.online_values``); a range run loads its last day, the latest
state of the range. It runs no Spark: its steps take no slot of the Spark pool.
"""

import dagster as dg

from assets.keys import key
from assets.partitions import daily_partitions, day_range
from assets.resources import LakehouseResource
from jobs import online_values, tables
from jobs.errors import MissingInputError, OnlineStoreError
from jobs.online.day_snapshot import served_windows
from jobs.online.postgres import store_name
from jobs.tables import WINDOW_SNAPSHOT, asset_group
from windowing_core.config import PipelineConfig

ONLINE_VALUES = "online_values"


def build_online_values_asset(config: PipelineConfig) -> dg.AssetsDefinition | None:
    online = config.online
    if online is None:
        return None
    windows = ", ".join(w.name for w in served_windows(config))

    @dg.asset(
        key=key(ONLINE_VALUES, config),
        group_name=asset_group(ONLINE_VALUES, "serving", config),
        kinds={"postgresql"},
        deps=[key(WINDOW_SNAPSHOT.name, config)],
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        description=f"Each key's latest values of {windows} in PostgreSQL ({online.table}): one row per key and "
                    "window, as of the partition's last day; older days never replace newer ones.",
    )
    def online_values_asset(context: dg.AssetExecutionContext, lakehouse: LakehouseResource) -> dg.MaterializeResult:
        first, last = day_range(context)
        try:
            loaded = online_values.load(tables.root(lakehouse.lakehouse_root, config), last, config, online)
        except (OnlineStoreError, MissingInputError) as err:
            raise dg.Failure(description=str(err), allow_retries=True) from None
        context.log.info(loaded.summary())
        return dg.MaterializeResult(metadata={
            "dagster/row_count": loaded.rows,
            "rows_written": loaded.written,
            "rows_removed": loaded.removed,
            "loaded_day": last.isoformat(),
            "windows_loaded": ", ".join(loaded.windows) or "none",
            "windows_left": ", ".join(loaded.skipped) or "none (the store held no later day)",
            "store": store_name(online),
        })

    return online_values_asset
