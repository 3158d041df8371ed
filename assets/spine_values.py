"""``spine_values``: the configured spine's rows with each window's values as of their ts, by day of ts.

An asset only where the configuration names a spine (``spine:``). Day D joins the spine rows
whose ts falls on D (``jobs.point_in_time_join``), after the window days they read.
"""

from collections.abc import Callable

import dagster as dg
from dagster_pyspark import PySparkResource

from assets.day_metadata import add_day_metadata, rows_by_day
from assets.keys import key
from assets.partitions import Run, daily_partitions, day_range, partials_of_spine_day, windows_of_spine_day
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from assets.spark_work import SPARK_POOL
from jobs import point_in_time_join, tables
from jobs.as_of.reading import Reading
from jobs.tables import MINUTE_PARTIALS, SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT, asset_group
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment
from windowing_core.spine import SpineSpec


def build_spine_values_asset(config: PipelineConfig) -> dg.AssetsDefinition | None:
    """A group's own spine (``spine:`` in its configuration), under its key prefix."""
    spine = config.spine
    if spine is None:
        return None
    (_, reading), = point_in_time_join.readings(spine, config)
    return _spine_asset(key(SPINE_VALUES.name, config), asset_group(SPINE_VALUES.name, "serving", config), spine,
                        _window_deps(config, reading), f"key {', '.join(spine.key_columns)}",
                        ", ".join(w.name for w in reading.windows), config, lambda lakehouse: tables.root(lakehouse, config))


def build_joined_spine_asset(deployment: Deployment) -> dg.AssetsDefinition | None:
    """The spine joined to several groups (``spine:`` beside ``groups:``), after each group's
    window tables; its table at the lakehouse root."""
    spine = deployment.spine
    if spine is None:
        return None
    read = [reading for _, reading in point_in_time_join.readings(spine, deployment)]
    deps = [dep for g, reading in zip(spine.groups, read) for dep in _window_deps(deployment.group(g.name), reading)]
    keys = "; ".join(f"{g.name} by {', '.join(g.key)}" for g in spine.groups)
    windows = ", ".join(f"{g.name}.{w.name}" for g, reading in zip(spine.groups, read) for w in reading.windows)
    return _spine_asset(dg.AssetKey(SPINE_VALUES.name), "serving", spine, deps, keys, windows, deployment,
                        lambda lakehouse: lakehouse)


def _window_deps(config: PipelineConfig, reading: Reading) -> list[dg.AssetDep]:
    """The window tables of the days a spine day reads; with windows read at the instant itself
    (``precision: event``), also the partials of the days those windows reach."""
    deps = [dg.AssetDep(key(table.name, config), partition_mapping=windows_of_spine_day(config, snapshot=snapshot))
            for table, snapshot in ((WINDOW_CHANGES, False), (WINDOW_SNAPSHOT, True))]
    if reading.exact:
        deps.append(dg.AssetDep(key(MINUTE_PARTIALS.name, config),
                                partition_mapping=partials_of_spine_day(reading.exact)))
    return deps


def _spine_asset(asset_key: dg.AssetKey, group: str, spine: SpineSpec, deps: list[dg.AssetDep], keys: str,
                 windows: str, config: PipelineConfig | Deployment,
                 root_of: Callable[[str], str]) -> dg.AssetsDefinition:
    bound = "before" if spine.exclusive else "at or before"

    @dg.asset(
        key=asset_key,
        group_name=group,
        kinds={"spark", "delta"},
        deps=deps,
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
        description=f"Each row of the spine {spine.source} ({keys}, ts {spine.ts}) with the values of "
                    f"{windows} as of its ts ({_as_of(spine, bound)}), by day of ts.",
    )
    def spine_values(context: dg.AssetExecutionContext, pyspark: PySparkResource, lakehouse: LakehouseResource,
                     spark_launch: SparkLaunchResource) -> dg.MaterializeResult:
        first, last = day_range(context)
        root = root_of(lakehouse.lakehouse_root)
        result = spark_launch.run(
            context, pyspark, f"spine_values {first} .. {last}", "point_in_time_join",
            Run(first, last).argv(lakehouse.lakehouse_root),
            config, lambda spark: point_in_time_join.run(spark, root, SPINE_VALUES.path(root), spine, config,
                                                         first, last))
        add_day_metadata(context, asset_key, {
            day: {"dagster/row_count": rows}
            for day, rows in rows_by_day(SPINE_VALUES.path(root), "date", day_list(first, last)).items()})
        return dg.MaterializeResult(metadata={
            "rows_written_in_run": result["rows_written"],
            "spine": spine.source,
            "windows": windows,
            "exclusive": spine.exclusive,
            "precision": spine.precision,
            "spine_days": f"{first} .. {last}",
            "path": dg.MetadataValue.path(SPINE_VALUES.path(root)),
        })

    return spine_values


def _as_of(spine: SpineSpec, bound: str) -> str:
    if spine.precision == "event":
        return f"sliding and cumulating windows exactly as of ts, the others their latest change point {bound} it"
    return f"their latest change point {bound} it"
