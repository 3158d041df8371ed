"""``minute_partials``: per key and frame, the partial of every aggregation, by event day."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.partitions import arrivals_of_event_day, daily_partitions, day_range
from assets.resources import LakehouseResource
from jobs import minute_partials as job
from jobs.tables import EVENTS, MINUTE_PARTIALS
from windowing_core.config import PipelineConfig


def build_minute_partials_asset(config: PipelineConfig) -> dg.AssetsDefinition:
    @dg.asset(
        name=MINUTE_PARTIALS.name,
        group_name="windows",
        kinds={"spark", "delta"},
        partitions_def=daily_partitions,
        deps=[dg.AssetDep(EVENTS.name, partition_mapping=arrivals_of_event_day(config))],
        backfill_policy=dg.BackfillPolicy.single_run(),
        description=f"One row per key and {config.bucket}s frame: event_count and the partials of "
                    f"{', '.join(a.name for a in config.aggregations)}.",
    )
    def minute_partials(context: dg.AssetExecutionContext, pyspark: PySparkResource,
                        lakehouse: LakehouseResource) -> dg.MaterializeResult:
        first, last = day_range(context)
        written = job.run(pyspark.spark_session, lakehouse.lakehouse_root, first, last, config)
        arrivals = job.arrival_days(first, last, config)
        return dg.MaterializeResult(metadata={
            "dagster/row_count": written["rows_written"],
            "event_days": f"{first} .. {last}",
            "arrival_days_read": f"{arrivals[0]} .. {arrivals[1]}",
            "files_written": written["files_written"],
            "table_version": written["table_version"],
            "writer": written["writer"],
            "path": dg.MetadataValue.path(MINUTE_PARTIALS.path(lakehouse.lakehouse_root)),
        })

    return minute_partials
