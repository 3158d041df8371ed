"""``events`` and ``quarantine``: one arrival day of landing files (or of a table source's rows),
accepted or rejected."""

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata
from assets.keys import key, table_spec
from assets.partitions import partitions_of, runs
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from assets.spark_work import SPARK_POOL
from jobs import ingest_events
from jobs.ingest_events import COUNTS, PART_COUNTS
from jobs.tables import EVENTS, QUARANTINE, SOURCE_ASSET, op_name, root
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import part_key
from windowing_core.window_spec import DAY_SECONDS


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
        partitions_def=partitions_of(config),
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
    )
    def ingest(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
               spark_launch: SparkLaunchResource):
        tables = root(lakehouse.lakehouse_root, config)
        planned, results = runs(context), []
        for run in planned:
            result = ingest_events.IngestResult.from_report(spark_launch.run(
                context, pyspark, f"ingest_events {run}", "ingest_events",
                ["--landing", lakehouse.landing_root, *run.argv(lakehouse.lakehouse_root)], config,
                lambda spark, run=run: ingest_events.ingest(spark, lakehouse.landing_root, tables, run.first,
                                                            run.last, config, run.interval).to_report(),
                lambda run=run: ingest_events.input_size(lakehouse.landing_root, config, run.first, run.last)))
            context.log.info(f"ingested arrival {result.parts or f'days {run}'}: {result.input_records} records, "
                             f"{result.accepted} accepted, {result.quarantined} quarantined, {result.duplicates} "
                             f"duplicates, {result.late} late beyond the allowed lateness")
            results.append(result)
        if config.partition == DAY_SECONDS:
            # Each arrival day's own counts; ``arrival_days`` says which days the counts cover
            # (the ``input_records_reconcile`` check reads them back).
            by_day = {day: counts for result in results for day, counts in result.by_day.items()}
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
            } for day, counts in by_day.items()})
            add_day_metadata(context, quarantine, {day: {
                "dagster/row_count": counts.quarantined,
                "by_reason": dg.MetadataValue.json(counts.quarantined_by_reason),
            } for day, counts in by_day.items()})
        read = "; ".join(result.parts or f"{run}" for result, run in zip(results, planned))
        below_a_day = {}
        if config.partition != DAY_SECONDS:
            # Each part's counts, of every part the run read (later parts it redid included): the
            # ``input_records_reconcile`` check of a partition sums the newest of each of its parts.
            parts = {part: counts for result in results for part, counts in result.by_part.items()}
            below_a_day = {PART_COUNTS: dg.MetadataValue.json(
                {f"{day} {part.isoformat()}": {name: getattr(c, name) for name in COUNTS}
                 for (day, part), c in sorted(parts.items())})}
            by_key: dict[str, list] = {}
            for (day, part), counts in parts.items():
                by_key.setdefault(part_key(day, part, config.partition), []).append(counts)
            for partition in set(by_key) & set(context.partition_keys):
                context.add_asset_metadata({
                    "dagster/row_count": sum(c.accepted for c in by_key[partition]),
                    **{name: sum(getattr(c, name) for c in by_key[partition]) for name in COUNTS},
                }, asset_key=events, partition_key=partition)
        yield dg.MaterializeResult(asset_key=events, metadata={
            "run_arrival_days": read, **below_a_day,
            "source": config.source.location if config.source is not None else lakehouse.landing_root,
            "path": dg.MetadataValue.path(EVENTS.path(tables)),
        })
        yield dg.MaterializeResult(asset_key=quarantine, metadata={
            "run_arrival_days": read,
            "path": dg.MetadataValue.path(QUARANTINE.path(tables)),
        })

    return ingest
