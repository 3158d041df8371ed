"""``minute_partials`` and ``daily_partials``: per key, the partial of every aggregation, by event day.

``daily_partials`` is an asset only where the configuration slides over it
(``windowing_core.config.reads_day_tiles``)."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata, rows_by_day
from assets.keys import key, table_spec
from assets.partitions import arrivals_of_event_part, partitions_of, runs
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from assets.spark_work import SPARK_POOL
from jobs import tables
from jobs import minute_partials as job
from jobs.runtime import compilers
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
from windowing_core.window_spec import DAY_SECONDS


def build_minute_partials_asset(config: PipelineConfig) -> dg.AssetsDefinition:
    arrivals = dg.AssetDep(key(EVENTS.name, config), partition_mapping=arrivals_of_event_part(config))
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
        partitions_def=partitions_of(config),
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
    )
    def partials(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
                 spark_launch: SparkLaunchResource):
        root = tables.root(lakehouse.lakehouse_root, config)
        planned = runs(context)
        written = [spark_launch.run(context, pyspark, f"partials {run}", "minute_partials",
                                    run.argv(lakehouse.lakehouse_root), config,
                                    lambda spark, run=run: job.run(spark, root, run.first, run.last, config,
                                                                   interval=run.interval),
                                    lambda run=run: compilers.events_of_the_days(root, config, run.first, run.last,
                                                                                   run.interval))
                   for run in planned]
        first, last = planned[0].first, planned[-1].last
        arrival_days = job.arrival_days(first, last, config)
        shared = {"event_days": "; ".join(str(run) for run in planned),
                  "arrival_days_read": f"{arrival_days[0]} .. {arrival_days[1]}"}

        def total(name: str) -> int:
            return sum(w[name] or 0 for w in written)

        event_days = day_list(first, last)
        by_day = config.partition == DAY_SECONDS  # a day's counts are a partition's only where it is one
        if by_day:
            late_path = LATE_EVENTS.path(root)
            late = (rows_by_day(late_path, "event_date", event_days, ("reason", "=", job.BEHIND_WATERMARK))
                    if delta_io.table_exists(late_path) else dict.fromkeys(event_days, 0))
            add_day_metadata(context, key(MINUTE_PARTIALS.name, config), {
                day: {"dagster/row_count": rows, "late_behind_watermark": late[day]}
                for day, rows in rows_by_day(MINUTE_PARTIALS.path(root), "event_date", event_days).items()})
        yield dg.MaterializeResult(asset_key=key(MINUTE_PARTIALS.name, config), metadata={
            "rows_written_in_run": total("rows_written"), **shared,
            "files_written": total("files_written"),
            "table_version": written[-1]["table_version"],
            "writer": written[-1]["writer"],
            "path": dg.MetadataValue.path(MINUTE_PARTIALS.path(root)),
        })
        if config.places_by_arrival:
            yield dg.MaterializeResult(asset_key=key(ARRIVAL_PARTIALS.name, config), metadata={
                "dagster/row_count": total("arrival_rows_written"), **shared,
                "path": dg.MetadataValue.path(ARRIVAL_PARTIALS.path(root)),
            })
        if not tiles:
            return
        if by_day:
            add_day_metadata(context, key(DAILY_PARTIALS.name, config), {
                day: {"dagster/row_count": rows}
                for day, rows in rows_by_day(DAILY_PARTIALS.path(root), "event_date", event_days).items()})
        yield dg.MaterializeResult(asset_key=key(DAILY_PARTIALS.name, config), metadata={
            "rows_written_in_run": total("daily_rows_written"), **shared,
            "path": dg.MetadataValue.path(DAILY_PARTIALS.path(root)),
        })

    return partials
