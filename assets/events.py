"""``events`` and ``quarantine``: one arrival day of landing files (or of a table source's rows),
accepted or rejected."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata
from assets.keys import key, table_spec
from assets.partitions import daily_partitions, day_range
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource, job_days
from assets.spark_work import SPARK_POOL
from jobs import ingest_events
from jobs.tables import EVENTS, QUARANTINE, SOURCE_ASSET, op_name, root
from windowing_core.config import PipelineConfig


def build_source_spec(config: PipelineConfig) -> dg.AssetSpec | None:
    """The table the events are read from, as an external asset (panes reads it, never writes
    it); None where they come from landing folders."""
    if config.source is None or not config.source.is_table:
        return None
    source = config.source
    return dg.AssetSpec(key(SOURCE_ASSET, config), group_name="ingest",
                        kinds={source.format} if source.format else None,
                        description=f"The table of events ingest reads: {source.location}",
                        metadata={"source": source.location, "time_column": source.time,
                                  "arrival_column": source.arrival or "(the event day)",
                                  "id_column": source.id or "(made from the row)"})


def build_events_assets(config: PipelineConfig) -> dg.AssetsDefinition:
    """The ingest of one source (``config`` is its ingest's: ``Deployment.ingest_of``)."""
    events, quarantine = key(EVENTS.name, config), key(QUARANTINE.name, config)

    @dg.multi_asset(
        name=op_name("ingest_events", config),
        specs=[
            table_spec(EVENTS, config, "ingest", deps=[key(SOURCE_ASSET, config)] if build_source_spec(config) else [],
                       description="Accepted events by arrival day, deduplicated by event_id."),
            table_spec(QUARANTINE, config, "ingest", description="Rejected raw records with the reason."),
        ],
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
    )
    def ingest(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
               spark_launch: SparkLaunchResource):
        first, last = day_range(context)
        days = f"{first} .. {last}"
        tables = root(lakehouse.lakehouse_root, config)
        result = ingest_events.IngestResult.from_report(spark_launch.run(
            context, pyspark, f"ingest_events {days}", "ingest_events",
            ["--landing", lakehouse.landing_root, *job_days(lakehouse.lakehouse_root, first, last)], config,
            lambda spark: ingest_events.ingest(spark, lakehouse.landing_root, tables, first, last,
                                               config).to_report()))
        context.log.info(f"ingested arrival days {days}: {result.input_records} records, {result.accepted} "
                         f"accepted, {result.quarantined} quarantined, {result.duplicates} duplicates, "
                         f"{result.late} late beyond the allowed lateness")
        # Each arrival day's own counts; ``arrival_days`` says which days the counts cover (the
        # ``input_records_reconcile`` check reads them back).
        add_day_metadata(context, events, {day: {
            "dagster/row_count": counts.accepted,
            "arrival_days": f"{day} .. {day}",
            "input_records": counts.input_records,
            "input_files": counts.files,
            "accepted": counts.accepted,
            "quarantined": counts.quarantined,
            "duplicates": counts.duplicates,
            "late_beyond_allowed_lateness": counts.late,
            "reconciles": counts.reconciles,
        } for day, counts in result.by_day.items()})
        add_day_metadata(context, quarantine, {day: {
            "dagster/row_count": counts.quarantined,
            "by_reason": dg.MetadataValue.json(counts.quarantined_by_reason),
        } for day, counts in result.by_day.items()})
        yield dg.MaterializeResult(asset_key=events, metadata={
            "run_arrival_days": days,
            "source": config.source.location if config.source is not None else lakehouse.landing_root,
            "path": dg.MetadataValue.path(EVENTS.path(tables)),
        })
        yield dg.MaterializeResult(asset_key=quarantine, metadata={
            "run_arrival_days": days,
            "path": dg.MetadataValue.path(QUARANTINE.path(tables)),
        })

    return ingest
