"""The Definitions ``bash run.sh dev`` (``dg dev``, by pyproject.toml's [tool.dg]) and workspace.yaml load.

Environment variables, all optional, with laptop defaults:

- ``PANES_LANDING``: landing folder (default ``./landing``)
- ``PANES_LAKEHOUSE``: lakehouse root for the Delta tables (default ``./lakehouse``), a folder or
  an ``s3a://bucket/prefix`` (with ``AWS_ENDPOINT_URL``, ``AWS_REGION`` and credentials as the
  AWS CLI reads them)
- ``PANES_CONFIG``: pipeline configuration YAML (default: one 7d window, count and sum)
- ``PANES_SPARK_MASTER``: Spark master (default ``local[*]``)
- ``SPARK_REMOTE``: a Spark Connect server (``sc://host:15002``) to run on instead of a master
- ``PANES_START_DATE``: the first daily partition, the first day with data (default 2025-01-01);
  ``bash run.sh demo`` writes its first day here into ``.env``, which ``dg dev`` reads
- ``PANES_END_DATE``: the last daily partition (default: none, the partitions run to today)
- ``PANES_SPARK_LAUNCH``: ``in_process`` (default: each run's process holds a Spark driver) or
  ``pipes`` (each asset launches spark-submit of its job through Dagster Pipes; see
  ``assets/spark_launch.py``), with ``PANES_SPARK_SUBMIT_ARGS`` for spark-submit
- ``PANES_PROGRESS_SECONDS``: how often a running step logs its Spark progress (default 30)
"""

from __future__ import annotations

import os

import dagster as dg
from dagster_pyspark import LazyPySparkResource, PySparkResource

from assets import build_assets
from assets.online_values import ONLINE_VALUES
from assets.partitions import daily_partitions, partitions_of
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource, spark_launch_from_environment
from assets.spark_work import SPARK_POOL
from expectations.asset_checks import build_asset_checks, build_joined_spine_checks
from expectations.online_check import build_online_check
from jobs.runtime import progress
from jobs.runtime.spark_session import SPARK_DEFAULTS, connect_config, local_python, with_jvm_packages
from jobs.tables import GROUP_TABLES, INGEST_ASSETS
from orchestration.automation import automation_sensor, build_landing_sensor, with_late_firings
from orchestration.freshness import build_watermark_check, with_freshness
from orchestration.maintenance import build_vacuum
from orchestration.schedule import build_pipeline_schedule
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment


def spark_config(master: str | None = None, roots: tuple[str, ...] = ()) -> dict[str, str]:
    """The Spark session's settings: a Spark Connect server's where ``SPARK_REMOTE`` names one
    (and no master is asked for), else a master's, ``PANES_SPARK_MASTER`` by default, with the
    jars for the ``roots`` it reads and writes."""
    remote = os.environ.get("SPARK_REMOTE")
    if remote and master is None:
        return connect_config(remote)
    return with_jvm_packages(local_python(
        {**SPARK_DEFAULTS, "spark.master": master or os.environ.get("PANES_SPARK_MASTER", "local[*]")}), roots)


def build_definitions(configured: PipelineConfig | Deployment, *, landing_root: str, lakehouse_root: str,
                      spark_master: str | None = None,
                      spark_launch: SparkLaunchResource | None = None) -> dg.Definitions:
    """Every group's assets and checks (one configuration: one group without a name), each
    source's ingest once, one job, schedule and set of sensors over all of them."""
    deployment = Deployment.of(configured)
    partitions = partitions_of(deployment.groups[0])  # every group's (``windowing_core.deployment``)
    spark_launch = spark_launch or spark_launch_from_environment(os.environ)
    # Through Pipes the assets' Spark drivers run in spark-submit's processes: the run's own
    # session starts only if a check asks for it.
    session = LazyPySparkResource if spark_launch.through_pipes else PySparkResource
    assets = with_late_firings(build_assets(deployment))
    for group in deployment.groups:
        assets = with_freshness(assets, group)
    checks = [*(check for ingest in deployment.ingests for check in build_asset_checks(
                  ingest, partitions, pool=SPARK_POOL, tables=INGEST_ASSETS)),
              *(check for group in deployment.groups for check in (
                  *build_asset_checks(group, partitions, pool=SPARK_POOL, tables=GROUP_TABLES),
                  build_watermark_check(group), build_online_check(group, ONLINE_VALUES, daily_partitions))
                if check is not None),
              *build_joined_spine_checks(deployment, daily_partitions, pool=SPARK_POOL)]
    vacuum_job, vacuum_schedule = build_vacuum(deployment.folders)
    daily_job = dg.define_asset_job("daily_pipeline", selection=dg.AssetSelection.all(),
                                    description="Every asset for one partition (a day, or partition: below "
                                                "one): ingest, partials, windows.")
    return dg.Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=[daily_job, vacuum_job],
        # A run's steps share its process and so one Spark session: Dagster's default, a process
        # per step, starts a Spark driver per step. On a laptop that made a three-step run of the
        # CLI test 84 s against 38 s, each check step 20 to 26 s against 2 s.
        executor=dg.in_process_executor,
        schedules=[build_pipeline_schedule(daily_job, partitions), vacuum_schedule],
        sensors=[build_landing_sensor(partitions, deployment.ingests), automation_sensor],
        resources={
            "pyspark": session(spark_config=spark_config(spark_master, (landing_root, lakehouse_root))),
            "spark_launch": spark_launch,
            "lakehouse": LakehouseResource(landing_root=landing_root, lakehouse_root=lakehouse_root),
        },
    )


def _root(location: str) -> str:
    """A folder made absolute (runs start in other working directories); a URI as it is."""
    return location if "://" in location else os.path.abspath(location)


def _defs_from_environment() -> dg.Definitions:
    progress.every_seconds()  # a bad PANES_PROGRESS_SECONDS fails here, not in every step
    return build_definitions(
        Deployment.load(os.environ.get("PANES_CONFIG") or None),
        landing_root=os.path.abspath(os.environ.get("PANES_LANDING", "landing")),
        lakehouse_root=_root(os.environ.get("PANES_LAKEHOUSE", "lakehouse")),
    )


defs = _defs_from_environment()
