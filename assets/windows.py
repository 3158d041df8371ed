"""``window_changes`` and ``window_snapshot``: every configured window, by day of window end; with
session or count windows, also ``session_state`` or ``count_state`` (what they carry from day to
day)."""

from datetime import date, datetime, time, timedelta, timezone

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata, rows_by_day
from assets.keys import key, table_spec
from assets.partitions import (
    arrivals_of_event_day, frames_of_window_day, partitions_of, reach_days, runs,
)
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from assets.spark_work import SPARK_POOL
from jobs import sliding_windows, tables
from jobs.runtime import compilers
from jobs.storage import delta_io
from jobs.tables import (
    ARRIVAL_PARTIALS,
    COUNT_STATE,
    DAILY_PARTIALS,
    EVENTS,
    MINUTE_PARTIALS,
    SESSION_STATE,
    WINDOW_CHANGES,
    WINDOW_SNAPSHOT,
    op_name,
    window_tables,
)
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig, reads_day_tiles
from windowing_core.run_interval import midnight, partition_start
from windowing_core.window_spec import DAY_SECONDS


def closes(end: datetime, config: PipelineConfig) -> datetime:
    """When no event before ``end`` can still arrive in time: ``end`` plus the allowed lateness,
    counted from the end of ``end``'s day where the lateness counts arrival dates."""
    if config.lateness_by_date and end.time() != time():
        end = datetime.combine(end.date() + timedelta(days=1), time(), timezone.utc)
    return end + timedelta(seconds=config.allowed_lateness)


def finality(lakehouse_root: str, ends: dict, config: PipelineConfig) -> tuple[dict, dict]:
    """The watermark when the run wrote, and per partition (by its end, in ``ends``) whether it is
    final: every event that may still change it is behind the watermark plus the allowed
    lateness. Otherwise it is provisional and will late-fire."""
    newest = delta_io.column_max(EVENTS.path(tables.ingest_root(lakehouse_root, config)), "event_time")
    watermark = None if newest is None else newest - timedelta(seconds=config.max_out_of_orderness)
    by_partition = {}
    for partition, end in ends.items():
        closing = closes(end, config)
        by_partition[partition] = {"final": watermark is not None and watermark >= closing,
                                   "final_once_watermark_passes": closing.isoformat()}
    return {"watermark_at_run": "none (no events)" if watermark is None else watermark.isoformat()}, by_partition


def build_window_assets(config: PipelineConfig) -> dg.AssetsDefinition:
    # A late event renumbers its key's later events: count windows re-fire the L + 1 days after it.
    extra = max(0, config.allowed_lateness_days + 1 - reach_days(config)) if config.counts else 0
    reach = frames_of_window_day(config, extra_days=extra)
    frames = [dg.AssetDep(key(t.name, config), partition_mapping=reach)
              for t in (MINUTE_PARTIALS, *([DAILY_PARTIALS] if reads_day_tiles(config) else []))]
    if config.places_by_arrival:  # arrival frames of day D were written by the partials of D - L .. D
        frames.append(dg.AssetDep(key(ARRIVAL_PARTIALS.name, config), partition_mapping=frames_of_window_day(
            config, extra_days=config.allowed_lateness_days)))
    if config.counts:  # count windows read the accepted events themselves
        frames.append(dg.AssetDep(key(EVENTS.name, config), partition_mapping=arrivals_of_event_day(config)))
    windows = "; ".join(w.describe() for w in (*config.windows, *config.sessions, *config.counts))
    carried = [table_spec(SESSION_STATE, config, "windows", deps=frames,
                          description="Per session window and day, each key's session still open at the "
                                      "day's end: what the next day's sessions continue from.")
               ] if config.sessions else []
    carried += [table_spec(COUNT_STATE, config, "windows", deps=frames,
                           description="Per count window and day, each key's events a window still to fire "
                                       "holds, with their numbers: what the next day's count windows continue from.")
                ] if config.counts else []

    # The snapshot of day D continues from the snapshot of D - 1, but that edge is not declared:
    # Dagster's automation then also requests the day before every late firing (measured in
    # Dagster 1.13), and it is not needed: a late firing or a backfill is one range run that
    # starts from a snapshot its late days cannot reach, and without one the job bootstraps.
    @dg.multi_asset(
        name=op_name("sliding_windows", config),
        specs=[
            table_spec(WINDOW_CHANGES, config, "windows", deps=frames,
                       description=f"Change points of every window ({windows}), by day of window_end."),
            table_spec(WINDOW_SNAPSHOT, config, "windows", deps=frames,
                       description="Each key's state per window as of the day's last window end."),
            *carried,
        ],
        partitions_def=partitions_of(config),
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
    )
    def every_window_kind(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
                          spark_launch: SparkLaunchResource):
        root = tables.root(lakehouse.lakehouse_root, config)
        planned = runs(context)
        results = [spark_launch.run(context, pyspark, f"sliding_windows {run}", "sliding_windows",
                                    run.argv(lakehouse.lakehouse_root), config,
                                    lambda spark, run=run: sliding_windows.run(spark, root, run.first, run.last,
                                                                               config, interval=run.interval),
                                    lambda run=run: compilers.events_of_the_days(root, config, run.first, run.last,
                                                                                   run.interval))
                   for run in planned]
        result = results[-1]  # one run, but for parts of days: one per part, the last the newest

        def total(table: str) -> int:
            return sum(r[table]["rows_written"] for r in results)

        window_days = day_list(planned[0].first, planned[-1].last)
        # a day's rows are final when its last event may no longer arrive; below a day, the
        # change points of a part when the events before its end may not (its snapshot: its day's)
        ends = {day: midnight(day) + timedelta(days=1) for day in window_days}
        if config.partition < DAY_SECONDS:
            ends.update({p: partition_start(p, config.partition) + timedelta(seconds=config.partition)
                         for p in context.partition_keys})
        run_wide, final = finality(root, ends, config)
        shared = {"run_window_end_days": "; ".join(str(run) for run in planned), "windows": windows,
                  "baseline": results[0]["baseline"] if len(results) == 1 else [r["baseline"] for r in results],
                  **run_wide}
        for table in window_tables(config):
            if config.partition == DAY_SECONDS:  # a day's counts are a partition's only where it is one
                add_day_metadata(context, key(table.name, config), {
                    day: {"dagster/row_count": rows, **final[day]}
                    for day, rows in rows_by_day(table.path(root), "date", window_days).items()})
                continue
            for partition in context.partition_keys:
                own = final[partition] if table == WINDOW_CHANGES else final[date.fromisoformat(partition[:10])]
                context.add_asset_metadata(own, asset_key=key(table.name, config), partition_key=partition)
        if config.places_by_arrival:
            shared["arrival_time_windows"] = (
                f"{', '.join(w.name for w in (*config.arrival_windows, *config.arrival_sessions))}: never late; "
                "final once their arrival day is ingested and the partials of the event days it reaches have run"
                + (" (a session by arrival time: once the arrival day holding its end is)"
                   if config.arrival_sessions else ""))
        yield dg.MaterializeResult(asset_key=key(WINDOW_CHANGES.name, config), metadata={
            "rows_written_in_run": total("changes"), **shared,
            "path": dg.MetadataValue.path(WINDOW_CHANGES.path(root)),
        })
        yield dg.MaterializeResult(asset_key=key(WINDOW_SNAPSHOT.name, config), metadata={
            "rows_written_in_run": total("snapshots"), **shared,
            "path": dg.MetadataValue.path(WINDOW_SNAPSHOT.path(root)),
        })
        if config.sessions:
            marks = {clock: "none (no frames)" if mark is None else
                     datetime.fromtimestamp(mark / 1_000_000, timezone.utc).isoformat()
                     for clock, mark in result["session_watermark"].items()}
            yield dg.MaterializeResult(asset_key=key(SESSION_STATE.name, config), metadata={
                "rows_written_in_run": total("session_state"), **shared,
                # sessions ending at or before it are closed (one final row each in window_changes);
                # by arrival time it is the newest arrival: such a session is final once it passes
                **({"session_watermark": marks["event"]} if "event" in marks else {}),
                **({"session_watermark_by_arrival": marks["arrival"]} if "arrival" in marks else {}),
                "path": dg.MetadataValue.path(SESSION_STATE.path(root)),
            })
        if config.counts:
            yield dg.MaterializeResult(asset_key=key(COUNT_STATE.name, config), metadata={
                "rows_written_in_run": total("count_state"), **shared,
                "path": dg.MetadataValue.path(COUNT_STATE.path(root)),
            })

    return every_window_kind
