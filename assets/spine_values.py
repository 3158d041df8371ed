"""``spine_values``: the configured spine's rows with each window's values as of their ts, by day of ts.

An asset only where the configuration names a spine (``spine:``). Day D joins the spine rows
whose ts falls on D (``jobs.point_in_time_join``), after the window days they read.
"""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata, rows_by_day
from assets.partitions import daily_partitions, day_range, windows_of_spine_day
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource, job_days
from assets.spark_work import SPARK_POOL
from jobs import point_in_time_join
from jobs.point_in_time import Reading
from jobs.tables import SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig


def build_spine_values_asset(config: PipelineConfig) -> dg.AssetsDefinition | None:
    spine = config.spine
    if spine is None:
        return None
    reading = Reading.of(config, spine.windows, spine.aggregations, spine.exclusive)
    windows = ", ".join(w.name for w in reading.windows)
    bound = "before" if spine.exclusive else "at or before"
    deps = [dg.AssetDep(WINDOW_CHANGES.name, partition_mapping=windows_of_spine_day(config, snapshot=False)),
            dg.AssetDep(WINDOW_SNAPSHOT.name, partition_mapping=windows_of_spine_day(config, snapshot=True))]

    @dg.asset(
        name=SPINE_VALUES.name,
        group_name="serving",
        kinds={"spark", "delta"},
        deps=deps,
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
        description=f"Each row of the spine {spine.source} (key {spine.key}, ts {spine.ts}) with the values of "
                    f"{windows} as of its ts (their latest change point {bound} it), by day of ts.",
    )
    def spine_values(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
                     spark_launch: SparkLaunchResource) -> dg.MaterializeResult:
        first, last = day_range(context)
        root = lakehouse.lakehouse_root
        result = spark_launch.run(
            context, pyspark, f"spine_values {first} .. {last}", "point_in_time_join", job_days(root, first, last),
            config, lambda spark: point_in_time_join.run(spark, root, SPINE_VALUES.path(root), spine, config,
                                                         first, last))
        add_day_metadata(context, SPINE_VALUES.name, {
            day: {"dagster/row_count": rows}
            for day, rows in rows_by_day(SPINE_VALUES.path(root), "date", day_list(first, last)).items()})
        return dg.MaterializeResult(metadata={
            "rows_written_in_run": result["rows_written"],
            "spine": spine.source,
            "windows": windows,
            "exclusive": spine.exclusive,
            "spine_days": f"{first} .. {last}",
            "path": dg.MetadataValue.path(SPINE_VALUES.path(root)),
        })

    return spine_values
