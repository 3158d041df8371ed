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
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not re-exported by dagster
    AssetCheckEvaluationTargetMaterializationData,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from expectations import conservation, reconciliation, suites, validation
from expectations.catalog import Check, Outcome, checks_of, spine_checks
from jobs import point_in_time_join, sliding_windows
from jobs.errors import MissingInputError, MissingTableError, SourceError
from jobs.ingest.arrival_parts import Parts, midnight
from jobs.ingest.quarantine import LATE_REASON
from jobs.ingest_events import COUNTS, PART_COUNTS, read_input
from jobs.runtime import progress
from jobs.storage import commits, delta_io
from jobs.tables import (
    DAILY_PARTIALS,
    EVENTS,
    LATE_EVENTS,
    MINUTE_PARTIALS,
    QUARANTINE,
    SPINE_VALUES,
    WINDOW_CHANGES,
    WINDOW_SNAPSHOT,
    Table,
    asset_key,
    day_filter,
    ingest_root,
    op_name,
    root,
    written_together,
)
from jobs.tables import days as day_list
from jobs.windows import window_inputs
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment
from windowing_core.run_interval import part_key, part_keys
from windowing_core.window_spec import DAY_SECONDS

Results = dict[str, dict[date, Outcome]]


@dataclass
class Inputs:
    """What an evaluator needs: Spark, the roots, the configuration, the days and checks asked for."""

    spark: SparkSession
    landing_root: str
    lakehouse_root: str
    config: PipelineConfig | Deployment  # a deployment for its own table: the spine joined to several groups
    days: list[date]
    selected: set[str]
    instance: dg.DagsterInstance | None = None
    until: datetime | None = None
    """Partitions below a day: where the last one judged ends, within its day. The checks judge
    the days as they stand up to it: a row of the last day at or after it is not judged yet."""

    @property
    def first(self) -> date:
        return self.days[0]

    @property
    def last(self) -> date:
        return self.days[-1]

    def through(self, rows: DataFrame, column: str) -> DataFrame:
        """``rows`` before ``until`` by their time ``column`` (all of them for whole days)."""
        return rows if self.until is None else rows.where(F.col(column) < F.lit(self.until))

    def path(self, table: Table) -> str:
        """Where ``table`` is: the configuration's root (``lakehouse_root``), or for the events a
        group reads, its source's ingest root."""
        shared = table in (EVENTS, QUARANTINE)
        return table.path(ingest_root(self.lakehouse_root, self.config) if shared else self.lakehouse_root)

    def read(self, table: Table, column: str, first: date, last: date) -> DataFrame:
        return delta_io.read_table(self.spark, self.path(table), partition_filters=day_filter(column, first, last))

    def tally(self, table: Table, column: str, first: date, last: date, *more: tuple) -> reconciliation.Tally:
        """Rows per day of ``column`` (``more``: further partition filters), from the Delta log's
        file statistics where they answer exactly (no Spark job), else the rows to count (before
        ``until``, by ``arrival_part``: the tables a tally counts are ingest's)."""
        filters = [*day_filter(column, first, last), *more]
        counts = delta_io.partition_row_counts(self.path(table), column, partition_filters=filters)
        if counts is None or self.until is not None:
            return self.through(delta_io.read_table(self.spark, self.path(table), partition_filters=filters),
                                "arrival_part")
        return {date.fromisoformat(d): n for d, n in counts.items()}


# -- evaluators, one per table ------------------------------------------------------------------


def tables_written_whole(inputs: Inputs, table: Table) -> dict[date, Outcome]:
    """Per day: whether the tables ``table``'s job writes together hold one run's rows of it
    (``commits.unfinished_write``); the jobs refuse to go on from torn tables, this says so in
    Dagster, for the days the stopped run wrote."""
    together = written_together(table, inputs.config)
    paths = [t.path(inputs.lakehouse_root) for t in together]
    torn = commits.unfinished_write(paths)
    looked_at = {"tables": ", ".join(t.name for t in together),
                 "table_versions": ", ".join(f"{t.name} {delta_io.table_version(p)}" if delta_io.table_exists(p)
                                             else f"{t.name} none" for t, p in zip(together, paths))}
    return {d: Outcome(False, {"problem": str(torn), "reached": list(torn.reached), "missed": list(torn.missed),
                               **looked_at})
            if torn is not None and torn.holds(d) else Outcome(True, looked_at) for d in inputs.days}


def evaluate_events(inputs: Inputs) -> Results:
    results = ({"tables_written_whole": tables_written_whole(inputs, EVENTS)}
               if "tables_written_whole" in inputs.selected else {})
    if "schema_matches_declared" in inputs.selected:
        events = inputs.through(inputs.read(EVENTS, "arrival_date", inputs.first, inputs.last), "arrival_part")
        results.update(validation.run_suite(events, events, suites.events_suite(inputs.config), inputs.days,
                                            {"schema_matches_declared"}))
    if "input_records_reconcile" not in inputs.selected:
        return results
    below_a_day = inputs.config.partition != DAY_SECONDS
    reports = {d: (parts_report if below_a_day else ingest_report)(inputs, d) for d in inputs.days}
    covered = [d for r in reports.values() if r is not None for d in r.days] + inputs.days
    first, last = min(covered), max(covered)
    try:
        landing = read_input(inputs.spark, inputs.landing_root, inputs.config, first, last)
        if inputs.until is not None:  # the last day's parts before it
            parts = Parts(last, midnight(last), inputs.until - timedelta(microseconds=1))
            landing = read_input(inputs.spark, inputs.landing_root, inputs.config, last, last, parts)
            if first < last:
                landing = read_input(inputs.spark, inputs.landing_root, inputs.config, first,
                                     last - timedelta(days=1)).unionByName(landing)
    except (MissingInputError, MissingTableError, SourceError) as err:  # gone or moved: cannot be recounted
        return {**results, "input_records_reconcile": {
            d: Outcome(False, {"problem": f"cannot recount the input: {err}"}) for d in inputs.days}}
    return {**results, "input_records_reconcile": reconciliation.input_records_reconcile(
        landing,
        inputs.tally(EVENTS, "arrival_date", first, last),
        inputs.tally(QUARANTINE, "arrival_date", first, last),
        inputs.tally(LATE_EVENTS, "arrival_date", first, last, ("reason", "=", LATE_REASON)),
        reports, inputs.days)}


def evaluate_quarantine(inputs: Inputs) -> Results:
    quarantine = inputs.through(inputs.read(QUARANTINE, "arrival_date", inputs.first, inputs.last), "arrival_part")
    results = validation.run_suite(quarantine, quarantine, suites.quarantine_suite(inputs.config), inputs.days,
                                   inputs.selected & {"quarantine_reasons_known"})
    if "quarantine_share_below_limit" in inputs.selected:
        results["quarantine_share_below_limit"] = reconciliation.quarantine_share_below_limit(
            quarantine,
            inputs.tally(EVENTS, "arrival_date", inputs.first, inputs.last),
            inputs.tally(LATE_EVENTS, "arrival_date", inputs.first, inputs.last, ("reason", "=", LATE_REASON)),
            inputs.days)
    return results


def evaluate_minute_partials(inputs: Inputs) -> Results:
    partials = inputs.through(inputs.read(MINUTE_PARTIALS, "event_date", inputs.first, inputs.last), "frame_start")
    suite = suites.minute_partials_suite(inputs.config)
    results = validation.run_suite(partials, suites.prepare_minute_partials(partials, inputs.config), suite,
                                   inputs.days, inputs.selected)
    if "partials_count_accepted_events" in inputs.selected:
        lateness = timedelta(days=inputs.config.allowed_lateness_days)
        results["partials_count_accepted_events"] = reconciliation.partials_count_accepted_events(
            partials,
            inputs.through(inputs.read(EVENTS, "arrival_date", inputs.first, inputs.last + lateness), "event_time"),
            inputs.through(inputs.read(LATE_EVENTS, "event_date", inputs.first, inputs.last), "event_time"),
            inputs.days, inputs.config)
    return results


def evaluate_daily_partials(inputs: Inputs) -> Results:
    tiles = inputs.read(DAILY_PARTIALS, "event_date", inputs.first, inputs.last)
    results = validation.run_suite(tiles, tiles, suites.daily_partials_suite(inputs.config), inputs.days,
                                   inputs.selected)
    if "tiles_match_minute_partials" in inputs.selected:
        results["tiles_match_minute_partials"] = reconciliation.tiles_match_minute_partials(
            tiles, inputs.read(MINUTE_PARTIALS, "event_date", inputs.first, inputs.last), inputs.config,
            inputs.days)
    return results


def of_sliding_windows(changes: DataFrame, config: PipelineConfig) -> DataFrame:
    """The change points of sliding windows: the reconciliations with frames and snapshots do
    not apply to session rows (one final row per session, in no snapshot; the oracle tests
    them, ``windowing_core.sessions``)."""
    return changes.where(changes["window"].isin([w.name for w in config.windows]))


def evaluate_window_changes(inputs: Inputs) -> Results:
    changes = inputs.through(inputs.read(WINDOW_CHANGES, "date", inputs.first, inputs.last), "window_end")
    day_before = inputs.first - timedelta(days=1)
    # Only the windows the job continued: the first change points of the others (none
    # materialised, every key empty, or another definition of the window) are not judged.
    continued = window_inputs.continued_windows(inputs.spark, inputs.lakehouse_root, day_before, inputs.config)
    previous = window_inputs.read_snapshot(inputs.spark, inputs.lakehouse_root, day_before, continued)
    results = validation.run_suite(changes, suites.prepare_window_changes(changes, previous, inputs.config, continued),
                                   suites.window_changes_suite(inputs.config), inputs.days, inputs.selected)
    if "partials_materialised" in inputs.selected:
        results["partials_materialised"] = partials_materialised(inputs)
    if "tables_written_whole" in inputs.selected:
        results["tables_written_whole"] = tables_written_whole(inputs, WINDOW_CHANGES)
    # recomputed from minute frames: the event-time sliding windows (arrival-time windows slide
    # over other frames, sessions are no sliding windows; the oracle tests both)
    event_time = sliding_windows.by_clock(inputs.config, "event")
    if "changes_conserve_frames" in inputs.selected and event_time is None:  # nothing of minute frames
        results["changes_conserve_frames"] = {d: Outcome(True, {"keys_checked": 0}) for d in inputs.days}
    elif "changes_conserve_frames" in inputs.selected:
        reach = timedelta(days=conservation.frames_reach_days(inputs.config))
        frames = delta_io.partition_row_counts(  # exact or None: whether the frames are few enough to collect
            MINUTE_PARTIALS.path(inputs.lakehouse_root), "event_date",
            partition_filters=day_filter("event_date", inputs.first - reach, inputs.last))
        results["changes_conserve_frames"] = conservation.changes_conserve_frames(
            of_sliding_windows(changes, event_time),
            inputs.through(inputs.read(MINUTE_PARTIALS, "event_date", inputs.first - reach, inputs.last), "frame_start"),
            event_time, inputs.days,
            rows=delta_io.row_count(WINDOW_CHANGES.path(inputs.lakehouse_root),  # the sample's estimate
                                    partition_filters=day_filter("date", inputs.first, inputs.last)),
            frame_count=None if frames is None else sum(frames.values()), until=inputs.until)
    return results


def partials_materialised(inputs: Inputs) -> dict[date, Outcome]:
    """Per window day: whether that event day's partials (the frames entering its windows) were
    materialised wherever its events were ingested (``window_inputs.unmaterialised_partials``)."""
    missing = set(window_inputs.unmaterialised_partials(inputs.spark, inputs.lakehouse_root, inputs.days,
                                                          inputs.config))
    path = MINUTE_PARTIALS.path(inputs.lakehouse_root)
    exists = delta_io.table_exists(path)

    def looked_at(day: date) -> dict[str, Any]:  # from the Delta log's statistics: no Spark job
        frames = delta_io.row_count(path, partition_filters=day_filter("event_date", day, day)) if exists else 0
        return {"event_day": day.isoformat(), "minute_partials_frames": frames}

    return {day: Outcome(False, {"problem": f"minute_partials of {day} were never materialised, though "
                                            "events holds events of that day", **looked_at(day)})
            if day in missing else Outcome(True, looked_at(day)) for day in inputs.days}


def evaluate_window_snapshot(inputs: Inputs) -> Results:
    """Below a day, a day's snapshot is written by its last part: a day not ended yet has none
    to judge, and passes saying so."""
    days = inputs.days if inputs.until is None else inputs.days[:-1]
    results: Results = {}
    if days:
        snapshots = inputs.read(WINDOW_SNAPSHOT, "date", days[0] - timedelta(days=1), days[-1])
        current = snapshots.where(snapshots["date"] >= days[0])
        results = validation.run_suite(current, suites.prepare_window_snapshot(current, inputs.config, days),
                                       suites.window_snapshot_suite(inputs.config), days, inputs.selected)
        if "snapshot_matches_last_change" in inputs.selected:
            results["snapshot_matches_last_change"] = reconciliation.snapshot_matches_last_change(
                snapshots, of_sliding_windows(inputs.read(WINDOW_CHANGES, "date", days[0], days[-1]),
                                              inputs.config), inputs.config,
                days)
    for day in inputs.days[len(days):]:
        for name in inputs.selected:
            results.setdefault(name, {})[day] = Outcome(True, {
                "judged": f"nothing yet: the snapshot of {day} is written by its last part, after {inputs.until}"})
    return results


def evaluate_spine_values(inputs: Inputs) -> Results:
    """A group's spine (``inputs.config`` a group's) or the spine joined to several groups (the
    deployment's)."""
    spine = inputs.config.spine
    values = inputs.read(SPINE_VALUES, "date", inputs.first, inputs.last)
    read = point_in_time_join.readings(spine, inputs.config)
    results = validation.run_suite(values, suites.prepare_spine_values(values, spine, read),
                                   suites.spine_values_suite(spine), inputs.days, inputs.selected)
    if "spine_rows_joined_once" in inputs.selected:
        results["spine_rows_joined_once"] = reconciliation.spine_rows_joined_once(
            point_in_time_join.read_spine(inputs.spark, spine, inputs.first, inputs.last), values, spine.ts,
            inputs.days)
    return results


EVALUATORS: dict[str, Callable[[Inputs], Results]] = {
    EVENTS.name: evaluate_events,
    QUARANTINE.name: evaluate_quarantine,
    MINUTE_PARTIALS.name: evaluate_minute_partials,
    DAILY_PARTIALS.name: evaluate_daily_partials,
    WINDOW_CHANGES.name: evaluate_window_changes,
    WINDOW_SNAPSHOT.name: evaluate_window_snapshot,
    SPINE_VALUES.name: evaluate_spine_values,
}


def ingest_report(inputs: Inputs, day: date) -> reconciliation.IngestReport | None:
    """The counts the latest ``events`` materialisation of this arrival day reported."""
    instance, config = inputs.instance, inputs.config
    if instance is None:
        return None
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset_key(EVENTS.name, config)),
                              asset_partitions=[day.isoformat()]),
        limit=1,
    ).records
    if not records:
        return None
    metadata = records[0].asset_materialization.metadata
    try:
        first, last = (date.fromisoformat(d.strip()) for d in metadata["arrival_days"].value.split(".."))
        counts = ("input_records", "accepted", "quarantined", "duplicates", "late_beyond_allowed_lateness")
        return reconciliation.IngestReport(first, last, *(int(metadata[k].value) for k in counts))
    except (KeyError, ValueError):
        return None


def parts_report(inputs: Inputs, day: date) -> reconciliation.IngestReport | None:
    """Below a day: the counts of ``day``'s arrival parts up to ``until``, each the newest an
    ``events`` materialisation reported (``PART_COUNTS``: a run reports every part it read, the
    later parts of the day it redid too, whichever partition it materialised); None where none
    of the day's partitions was materialised."""
    if inputs.instance is None:
        return None
    end = inputs.until or datetime.combine(day + timedelta(days=1), time(), UTC)
    keys = part_keys(day, end, inputs.config.partition)
    records = inputs.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset_key(EVENTS.name, inputs.config)), asset_partitions=keys),
        limit=1000, ascending=False).records
    if not records:
        return None
    newest: dict[str, dict] = {}
    for record in records:
        entry = record.asset_materialization.metadata.get(PART_COUNTS)
        for part, counts in (entry.value if entry is not None else {}).items():
            newest.setdefault(part, counts)
    judged = [c for part, c in newest.items()
              if part.startswith(f"{day} ") and part_key(day, datetime.fromisoformat(part.split(" ")[1]),
                                                        inputs.config.partition) in keys]
    return reconciliation.IngestReport(day, day, *(sum(c[name] for c in judged) for name in COUNTS))


# -- Dagster ------------------------------------------------------------------------------------


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
    day's as it stands up to the last partition judged)."""
    for check in checks:
        for partition in partitions:
            day = date.fromisoformat(partition[:10])
            outcome = results.get(check.name, {}).get(day) or Outcome(False, {"problem": "not evaluated"})
            yield dg.AssetCheckEvaluation(
                asset_key=asset_key, check_name=check.name, passed=outcome.passed,
                metadata=_metadata(outcome), severity=dg.AssetCheckSeverity(check.severity),
                description=_headline(outcome), blocking=check.blocking, partition=partition,
                target_materialization_data=_target(instance, asset_key, partition) if instance else None,
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
        inputs = Inputs(context.resources.pyspark.spark_session, lakehouse.landing_root,
                        root(lakehouse.lakehouse_root, placed), config, days, {c.name for c in selected},
                        context.instance, until)
        judged = f"{days[0]} .. {days[-1]}" + (f" up to {until:%H:%M}" if until is not None else "")
        with progress.reported(inputs.spark, f"{table}_checks {judged}", context.log.info):
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
    return [table_checks(SPINE_VALUES.name, deployment, partitions_def, evaluate_spine_values, pool,
                         spine_checks(deployment.spine))]


def build_asset_checks(config: PipelineConfig, partitions_def: dg.PartitionsDefinition, pool: str | None = None,
                       tables: Collection[str] | None = None) -> list[dg.AssetChecksDefinition]:
    """Every table's checks for this configuration (or only those of ``tables``: a source's
    ingest, a group's own), partitioned like the assets, their steps in ``pool`` (they run Spark
    like the assets: ``assets.spark_work.SPARK_POOL``)."""
    return [table_checks(table, config, partitions_def, evaluate, pool) for table, evaluate in EVALUATORS.items()
            if checks_of(config, table)  # none for a table this configuration does not keep
            and (tables is None or table in tables)]
