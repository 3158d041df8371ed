"""``minute_partials`` and ``daily_partials``: per key, the partial of every aggregation, by event day.

``daily_partials`` is an asset only where the configuration slides over it
(``windowing_core.config.reads_day_tiles``)."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.columns import column_schema
from assets.partitions import arrivals_of_event_day, daily_partitions, day_range
from assets.resources import LakehouseResource
from assets.spark_work import spark_work
from jobs import minute_partials as job
from windowing_core.config import reads_day_tiles
from jobs.tables import DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS
from windowing_core.config import PipelineConfig


def build_minute_partials_asset(config: PipelineConfig) -> dg.AssetsDefinition:
    arrivals = dg.AssetDep(EVENTS.name, partition_mapping=arrivals_of_event_day(config))
    aggregations = ", ".join(a.name for a in config.aggregations)
    tiles = reads_day_tiles(config)
    specs = [dg.AssetSpec(MINUTE_PARTIALS.name, group_name="windows", kinds={"spark", "delta"}, deps=[arrivals],
                          metadata=column_schema(MINUTE_PARTIALS, config),
                          description=f"One row per key and {config.bucket}s frame: event_count and the "
                                      f"partials of {aggregations}.")]
    if tiles:
        specs.append(dg.AssetSpec(DAILY_PARTIALS.name, group_name="windows", kinds={"spark", "delta"},
                                  deps=[arrivals], metadata=column_schema(DAILY_PARTIALS, config),
                                  description="The same partials per key and whole event "
                                  "day: the coarser tiles non-invertible aggregations slide over."))

    @dg.multi_asset(
        name="partials",
        specs=specs,
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def partials(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource):
        first, last = day_range(context)
        with spark_work(context, pyspark.spark_session, f"partials {first} .. {last}"):
            written = job.run(pyspark.spark_session, lakehouse.lakehouse_root, first, last, config)
        arrival_days = job.arrival_days(first, last, config)
        shared = {"event_days": f"{first} .. {last}",
                  "arrival_days_read": f"{arrival_days[0]} .. {arrival_days[1]}"}
        yield dg.MaterializeResult(asset_key=MINUTE_PARTIALS.name, metadata={
            "dagster/row_count": written["rows_written"], **shared,
            "files_written": written["files_written"],
            "table_version": written["table_version"],
            "writer": written["writer"],
            "path": dg.MetadataValue.path(MINUTE_PARTIALS.path(lakehouse.lakehouse_root)),
        })
        if not tiles:
            return
        yield dg.MaterializeResult(asset_key=DAILY_PARTIALS.name, metadata={
            "dagster/row_count": written["daily_rows_written"], **shared,
            "path": dg.MetadataValue.path(DAILY_PARTIALS.path(lakehouse.lakehouse_root)),
        })

    return partials
