"""``minute_partials`` and ``daily_partials``: per key, the partial of every aggregation, by event day.

``daily_partials`` is an asset only where the configuration slides over it
(``windowing_core.config.reads_day_tiles``)."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata, rows_by_day
from assets.keys import key, table_spec
from assets.partitions import arrivals_of_event_day, daily_partitions, day_range
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource, job_days
from assets.spark_work import SPARK_POOL
from jobs import tables
from jobs import minute_partials as job
from jobs.storage import delta_io
from jobs.tables import (
    ARRIVAL_PARTIALS,
    DAILY_PARTIALS,
    EVENTS,
    LATE_EVENTS,
    MINUTE_PARTIALS,
    op_name,
)
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig, reads_day_tiles


def build_minute_partials_asset(config: PipelineConfig) -> dg.AssetsDefinition:
    arrivals = dg.AssetDep(key(EVENTS.name, config), partition_mapping=arrivals_of_event_day(config))
    aggregations = ", ".join(a.name for a in config.aggregations)
    tiles = reads_day_tiles(config)
    specs = [table_spec(MINUTE_PARTIALS, config, "windows", deps=[arrivals],
                        description=f"One row per key and {config.bucket}s frame: event_count and the "
                                    f"partials of {aggregations}.")]
    if config.places_by_arrival:
        specs.append(table_spec(ARRIVAL_PARTIALS, config, "windows", deps=[arrivals],
                                description="The same partials per key and frame of arrival time, for the "
                                "time: arrival windows; by event day (of the run) and frame day."))
    if tiles:
        specs.append(table_spec(DAILY_PARTIALS, config, "windows", deps=[arrivals],
                                description="The same partials per key and whole event "
                                "day: the coarser tiles non-invertible aggregations slide over."))

    @dg.multi_asset(
        name=op_name("partials", config),
        specs=specs,
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
    )
    def partials(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
                 spark_launch: SparkLaunchResource):
        first, last = day_range(context)
        root = tables.root(lakehouse.lakehouse_root, config)
        written = spark_launch.run(context, pyspark, f"partials {first} .. {last}", "minute_partials",
                                   job_days(lakehouse.lakehouse_root, first, last), config,
                                   lambda spark: job.run(spark, root, first, last, config))
        arrival_days = job.arrival_days(first, last, config)
        shared = {"event_days": f"{first} .. {last}",
                  "arrival_days_read": f"{arrival_days[0]} .. {arrival_days[1]}"}
        event_days = day_list(first, last)
        late_path = LATE_EVENTS.path(root)
        late = (rows_by_day(late_path, "event_date", event_days, ("reason", "=", job.BEHIND_WATERMARK))
                if delta_io.table_exists(late_path) else dict.fromkeys(event_days, 0))
        add_day_metadata(context, key(MINUTE_PARTIALS.name, config), {
            day: {"dagster/row_count": rows, "late_behind_watermark": late[day]}
            for day, rows in rows_by_day(MINUTE_PARTIALS.path(root), "event_date", event_days).items()})
        yield dg.MaterializeResult(asset_key=key(MINUTE_PARTIALS.name, config), metadata={
            "rows_written_in_run": written["rows_written"], **shared,
            "files_written": written["files_written"],
            "table_version": written["table_version"],
            "writer": written["writer"],
            "path": dg.MetadataValue.path(MINUTE_PARTIALS.path(root)),
        })
        if config.places_by_arrival:
            yield dg.MaterializeResult(asset_key=key(ARRIVAL_PARTIALS.name, config), metadata={
                "dagster/row_count": written["arrival_rows_written"], **shared,
                "path": dg.MetadataValue.path(ARRIVAL_PARTIALS.path(root)),
            })
        if not tiles:
            return
        add_day_metadata(context, key(DAILY_PARTIALS.name, config), {
            day: {"dagster/row_count": rows}
            for day, rows in rows_by_day(DAILY_PARTIALS.path(root), "event_date", event_days).items()})
        yield dg.MaterializeResult(asset_key=key(DAILY_PARTIALS.name, config), metadata={
            "rows_written_in_run": written["daily_rows_written"], **shared,
            "path": dg.MetadataValue.path(DAILY_PARTIALS.path(root)),
        })

    return partials
