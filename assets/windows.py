"""``window_changes`` and ``window_snapshot``: every configured window, by day of window end."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.partitions import daily_partitions, day_range, frames_of_window_day, previous_day
from assets.resources import LakehouseResource
from jobs import sliding_windows
from jobs.tables import DAILY_PARTIALS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT
from windowing_core.config import PipelineConfig


def build_window_assets(config: PipelineConfig) -> dg.AssetsDefinition:
    reach = frames_of_window_day(config)
    frames = [dg.AssetDep(MINUTE_PARTIALS.name, partition_mapping=reach),
              dg.AssetDep(DAILY_PARTIALS.name, partition_mapping=reach)]
    windows = "; ".join(w.describe() for w in config.windows)

    @dg.multi_asset(
        name="sliding_windows",
        specs=[
            dg.AssetSpec(WINDOW_CHANGES.name, group_name="windows", kinds={"spark", "delta"}, deps=frames,
                         description=f"Change points of every window ({windows}), by day of window_end."),
            dg.AssetSpec(WINDOW_SNAPSHOT.name, group_name="windows", kinds={"spark", "delta"},
                         deps=[*frames, dg.AssetDep(WINDOW_SNAPSHOT.name, partition_mapping=previous_day())],
                         description="Each key's state per window as of the day's last window end."),
        ],
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def sliding(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource):
        first, last = day_range(context)
        result = sliding_windows.run(pyspark.spark_session, lakehouse.lakehouse_root, first, last, config)
        days = f"{first} .. {last}"
        shared = {"window_end_days": days, "windows": windows, "baseline": result["baseline"]}
        yield dg.MaterializeResult(asset_key=WINDOW_CHANGES.name, metadata={
            "dagster/row_count": result["changes"]["rows_written"], **shared,
            "path": dg.MetadataValue.path(WINDOW_CHANGES.path(lakehouse.lakehouse_root)),
        })
        yield dg.MaterializeResult(asset_key=WINDOW_SNAPSHOT.name, metadata={
            "dagster/row_count": result["snapshots"]["rows_written"], **shared,
            "path": dg.MetadataValue.path(WINDOW_SNAPSHOT.path(lakehouse.lakehouse_root)),
        })

    return sliding
