"""The catalog's checks as Dagster asset checks: one multi-check per table, evaluated per day.

The checks are partitioned like their assets, and every result is recorded against its daily
partition. A run over one partition (the daily schedule, a click in the UI) evaluates that day.
A single-run backfill over a range evaluates the range at once (one Great Expectations batch,
one Spark job per reconciliation) and still records one evaluation per check and day: Dagster
plans a range check once per partition, and ``AssetCheckResult`` could only speak for the
range, so each day's ``AssetCheckEvaluation`` is emitted directly.

ERROR checks are ``blocking``: a failure fails the step, and Dagster does not start anything
downstream of the checked asset in the same run. WARN checks report only.

The resources come by key (``pyspark``, ``lakehouse``), as the assets use them. (No ``from
__future__ import annotations`` here: Dagster reads the check function's annotations at
definition time.)
"""

import warnings
from collections.abc import Callable, Collection, Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not re-exported by dagster
    AssetCheckEvaluationTargetMaterializationData,
)

from expectations import spine_values
from expectations.catalog import EVALUATORS, Check, Outcome, checks_of
from expectations.inputs import Inputs, Results
from jobs.runtime import compilers, progress
from jobs.tables import SPINE_VALUES, asset_key, op_name, root
from jobs.tables import days as day_list
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment


def _judged(context: dg.AssetCheckExecutionContext) -> tuple[list[date], datetime | None]:
    """The days of the partitions the checks judge, and, where the last ends within its day, that end."""
    window = context.partition_time_window
    end = window.end.astimezone(UTC)
    within = end != datetime.combine(end.date(), time(), UTC)
    return day_list(window.start.date(), (end - timedelta(microseconds=1)).date()), end if within else None


def _metadata(outcome: Outcome) -> dict[str, Any]:
    return {k: dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v
            for k, v in outcome.metadata.items()}


def _headline(outcome: Outcome) -> str | None:
    if outcome.passed:
        return None
    m = outcome.metadata
    if "share" in m:
        return f"{m['share']:.1%} of the day's records quarantined (limit {m['limit']:.0%})"
    for key in ("problem", "problems"):
        if key in m:
            return m[key] if isinstance(m[key], str) else "; ".join(m[key])
    for key in ("unexpected_rows", "mismatches", "keys_differing", "difference"):
        if key in m:
            return f"{key.replace('_', ' ')}: {m[key]}"
    return None


def _target(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str):
    """The materialisation a partition's evaluation judged, so the UI shows the check next to it."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1).records
    if not records:
        return None
    record = records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp)


def evaluations(checks: list[Check], results: Results, partitions: list[str], asset_key: dg.AssetKey,
                instance: dg.DagsterInstance | None) -> Iterator[dg.AssetCheckEvaluation]:
    """One evaluation per check and partition: its day's outcome (a day's, or below a day, the
    day's as it stands up to the last partition judged). Each partition's materialisation is
    looked up once for all its checks: a lookup costs a query of the instance."""
    targets = {p: _target(instance, asset_key, p) if instance else None for p in partitions}
    for check in checks:
        for partition in partitions:
            day = date.fromisoformat(partition[:10])
            outcome = results.get(check.name, {}).get(day) or Outcome(False, {"problem": "not evaluated"})
            yield dg.AssetCheckEvaluation(
                asset_key=asset_key, check_name=check.name, passed=outcome.passed,
                metadata=_metadata(outcome), severity=dg.AssetCheckSeverity(check.severity),
                description=_headline(outcome), blocking=check.blocking, partition=partition,
                target_materialization_data=targets[partition],
            )


def table_checks(table: str, config: PipelineConfig | Deployment, partitions_def: dg.PartitionsDefinition,
                 evaluate: Callable[[Inputs], Results], pool: str | None = None,
                 checks: list[Check] | None = None) -> dg.AssetChecksDefinition:
    """The checks of one table (``checks``, by default the catalog's for it) as one step. A
    deployment's own table (the spine joined to several groups) is at the lakehouse root,
    under a bare key."""
    checks = checks if checks is not None else checks_of(config, table)
    placed = config if isinstance(config, PipelineConfig) else PipelineConfig()
    checked = dg.AssetKey(asset_key(table, placed))
    with warnings.catch_warnings():  # partitioned checks are a preview in Dagster 1.13
        warnings.simplefilter("ignore", dg.PreviewWarning)
        specs = [dg.AssetCheckSpec(c.name, asset=checked, description=f"[{c.severity}] {c.guards}",
                                   blocking=c.blocking, partitions_def=partitions_def,
                                   metadata={"severity": c.severity})
                 for c in checks]

    @dg.multi_asset_check(name=op_name(f"{table}_checks", placed), specs=specs, can_subset=True, pool=pool,
                          required_resource_keys={"pyspark", "lakehouse"},
                          description=f"Data-quality checks on {table}, per daily partition.")
    def run_checks(context: dg.AssetCheckExecutionContext):
        selected = [c for c in checks
                    if dg.AssetCheckKey(checked, c.name) in context.selected_asset_check_keys]
        days, until = _judged(context)
        lakehouse = context.resources.lakehouse
        group_root = root(lakehouse.lakehouse_root, placed)
        inputs = Inputs(context.resources.pyspark.spark_session, lakehouse.landing_root, group_root, config, days,
                        {c.name for c in selected}, context.instance, until)
        judged = f"{days[0]} .. {days[-1]}" + (f" up to {until:%H:%M}" if until is not None else "")
        size = compilers.events_of_the_days(group_root, placed, days[0], days[-1])  # as the jobs weigh theirs
        with progress.reported(inputs.spark, f"{table}_checks {judged}", context.log.info), \
                compilers.expressions_for(inputs.spark, **size):
            results = evaluate(inputs)
        yield from evaluations(selected, results, context.partition_keys, checked, context.instance)
        assets_def = context.op_execution_context.assets_def
        for c in selected:  # the outputs downstream steps wait on (blocking checks)
            yield dg.Output(None, output_name=assets_def.get_output_name_for_asset_check_key(
                dg.AssetCheckKey(checked, c.name)))

    return run_checks


def build_joined_spine_checks(deployment: Deployment, partitions_def: dg.PartitionsDefinition,
                              pool: str | None = None) -> list[dg.AssetChecksDefinition]:
    """The checks of the spine joined to several groups, where one is configured."""
    if deployment.spine is None:
        return []
    return [table_checks(SPINE_VALUES.name, deployment, partitions_def, spine_values.evaluate, pool,
                         spine_values.checks(deployment.spine))]


def build_asset_checks(config: PipelineConfig, partitions_def: dg.PartitionsDefinition, pool: str | None = None,
                       tables: Collection[str] | None = None) -> list[dg.AssetChecksDefinition]:
    """Every table's checks for this configuration (or only those of ``tables``: a source's
    ingest, a group's own), partitioned like the assets, their steps in ``pool`` (they run Spark
    like the assets: ``assets.spark_work.SPARK_POOL``)."""
    return [table_checks(table, config, partitions_def, evaluate, pool) for table, evaluate in EVALUATORS.items()
            if checks_of(config, table)  # none for a table this configuration does not keep
            and (tables is None or table in tables)]
