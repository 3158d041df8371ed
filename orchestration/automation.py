"""Late firings: new and late arrivals re-materialise exactly what they can change.

Flink re-fires a window when a late event lands within the allowed lateness. Here the unit is
a daily partition: a landing folder that appears or changes is ingested by ``landing_sensor``;
declarative automation then re-materialises the event days whose partials read that arrival
day (D .. D + L map back to it), and from those the window days whose windows reach them. The
partition mappings say which partitions those are, so nothing else runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Collection, Sequence
from datetime import date

import dagster as dg

from assets.keys import key
from assets.resources import LakehouseResource
from jobs.ingest.arrival_parts import day_end, folder_time
from jobs.tables import EVENTS, INGEST_ASSETS, QUARANTINE
from orchestration.backfill import UNDER_WAY as backfill_under_way
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import part_key
from windowing_core.window_spec import DAY_SECONDS


def late_firing() -> dg.AutomationCondition:
    """Run a partition when a partition it reads was updated, once nothing upstream is running.

    Unlike ``eager()`` it is not limited to the latest day: late data changes old days. A dep
    that will be requested in the same tick counts as updated, so one evaluation requests the
    partials and the windows of a late arrival together, and they run as one range run.

    A dep's update counts only if it is newer than the partition's own: windows re-run by hand
    after their partials, in a run of their own, do not fire again, while partials re-run after
    the windows fire them, even when both ran since the last tick. ``since`` compares the
    materialisations' timestamps only where each side is a bare ``newly_updated`` (``&`` and
    ``|`` drop them), so it is not ``any_deps_updated().since_last_handled()``, whose reset
    would win a tie and leave such windows stale. (Dagster fetches the timestamps for up to 100
    partitions of an asset updated in one tick, ``DAGSTER_MAX_PARTITIONS_FOR_DA_TIMESTAMP_FETCH``;
    past that they read as the tick's time, so more than 100 window days re-run in one tick
    count as newer than their partials.)

    A partition whose checks are still running waits for them: a tick reads the assets' records
    when it starts and what is in progress later, so to a tick during which a run writes the
    windows they look older than their partials and no longer in progress, while that run's
    checks of them still are (``tests/orchestration/test_late_firing_race.py``).
    """
    updated = dg.AutomationCondition.newly_updated()
    newer_than_own = dg.AutomationCondition.any_deps_match(updated).since(updated)
    will_be_requested = dg.AutomationCondition.any_deps_match(dg.AutomationCondition.will_be_requested())
    checking = dg.AutomationCondition.any_checks_match(dg.AutomationCondition.in_progress()).with_label(
        "its checks are running")
    return (
        dg.AutomationCondition.any_deps_updated()
        & (newer_than_own | will_be_requested)
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
        & ~checking
        & upstream_blocking_checks_passed()
    ).with_label("late firing: a partition it reads was updated after it")


def upstream_blocking_checks_passed() -> dg.AutomationCondition:
    """No partition this partition reads has a failed blocking check on its latest data.

    Within a run Dagster skips what follows a failed blocking check, but each tick is evaluated
    on its own: without this a window day would fire on partials that failed their check.
    Dagster's ``all_deps_blocking_checks_passed()`` is not enough for mapped partitions: in
    Dagster 1.13 a dep matches when *any* of its mapped partitions does, so a window day that
    reads one failed and one passing partials day would still fire. The negation of ``any``
    holds only when *every* partition read is clear: ``~any_deps_match(failed)``.

    A dep partition that is requested in the same tick does not block: its checks run again in
    that run, and a blocking failure there stops the downstream steps of the run itself. Once
    the data is repaired and its checks pass (or the partition is materialised again and not
    yet checked), the partitions reading it fire again, as their deps are newer than they are.
    """
    failed = dg.AutomationCondition.any_checks_match(dg.AutomationCondition.check_failed(),
                                                     blocking_only=True).with_label("a blocking check failed")
    blocked = failed & ~dg.AutomationCondition.will_be_requested()
    return (~dg.AutomationCondition.any_deps_match(blocked)).with_label(
        "every partition it reads passed its blocking checks")


def with_late_firings(assets: list[dg.AssetsDefinition]) -> list[dg.AssetsDefinition]:
    """Every asset downstream of ingest re-fires on updates; ingest itself follows the landing."""
    return [a.map_asset_specs(lambda spec: spec if spec.key.path[-1] in INGEST_ASSETS
                              else spec.replace_attributes(automation_condition=late_firing()))
            if isinstance(a, dg.AssetsDefinition) else a for a in assets]


automation_sensor = dg.AutomationConditionSensorDefinition(
    "late_firings", target=dg.AssetSelection.all(), default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Evaluates the late-firing conditions: re-materialises what new arrivals change.",
)


def folder_fingerprint(folder: str, leave_out: Collection[str] = ()) -> str:
    """Paths, sizes and modification times of every file under a landing folder, its hour folders
    and other subfolders too (ingest reads them all; links are followed, each folder once), but
    the subfolders ``leave_out`` names: changes when a file lands anywhere in it. A file directly
    in the folder is spelled by its name alone, as before subfolders counted, so a cursor of such
    folders still matches."""
    return _digest(json.dumps(sorted(_files(folder, leave_out))))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _files(folder: str, leave_out: Collection[str] = ()) -> list[tuple[str, int, int]]:
    entries, seen = [], set()
    for path, folders, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(path)
        if real in seen:  # a link back into the folder: ingest quarantines it, and reads it once
            folders.clear()
            continue
        seen.add(real)
        if path == folder:
            folders[:] = [f for f in folders if f not in leave_out]
        for name in files:
            try:
                info = os.stat(os.path.join(path, name))
            except OSError:  # a dangling link: ingest counts it too
                continue
            entries.append((os.path.relpath(os.path.join(path, name), folder), info.st_size, info.st_mtime_ns))
    return entries


def landing_partitions(folder: str, day: date, seconds: int) -> dict[str, str]:
    """The partitions of ``seconds`` an arrival day's folder holds files of, each with the
    fingerprint of its files: the day's own key for daily partitions; below a day, the key of the
    part holding each hour folder's time (``jobs.ingest.arrival_parts``), and the day's last part
    for the files outside them, which the run closing the day reads."""
    if seconds == DAY_SECONDS:
        return {day.isoformat(): folder_fingerprint(folder)}
    parts: dict[str, list[str]] = {}
    for name in sorted(os.listdir(folder)):
        time = folder_time(day, name) if os.path.isdir(os.path.join(folder, name)) else None
        if time is not None:
            parts.setdefault(part_key(day, time, seconds), []).append(name)
    fingerprints = {k: _digest("".join(folder_fingerprint(os.path.join(folder, n)) for n in names))
                    for k, names in parts.items()}
    rest = _files(folder, leave_out={n for names in parts.values() for n in names})
    if rest:  # files outside the part folders: the day's last part reads them
        last = part_key(day, day_end(day), seconds)
        fingerprints[last] = _digest(fingerprints.get(last, "") + json.dumps(sorted(rest)))
    return fingerprints


def ingested_by_a_daily_run(folder: str, day: date, seconds: int, before: dict[str, str],
                            ingested: Collection[str]) -> Callable[[str], bool]:
    """Below a day, whether a part of ``day`` counts as ingested by the run of a daily deployment
    before the switch to parts: Dagster keeps history per partition key, so the parts have none
    of their own. A part counts where the day's own key was materialised and either the cursor has
    seen the part since the switch (so a change to it is a new fingerprint), or the day's folder is
    as the daily sensor last saw it (its cursor's fingerprint of the day still matches)."""
    day_key = day.isoformat()
    if seconds == DAY_SECONDS or day_key not in ingested:
        return lambda name: False
    unchanged = functools.cache(lambda: before.get(day_key) == folder_fingerprint(folder))
    return lambda name: name in before or unchanged()


def build_landing_sensor(partitions: dg.TimeWindowPartitionsDefinition,
                         ingests: Sequence[PipelineConfig] = (PipelineConfig(),)) -> dg.SensorDefinition:
    """Ingests an arrival day of each source of landing folders (the default ones, and any a
    group names, ``source: {landing: ...}``) when its folder appears or changes, one run per
    source and day; below a day, the part of each hour folder that appears or changes
    (``landing_partitions``). Where every source is a table there is no folder to watch: the
    schedule ingests each partition as it ends, and the sensor says so on every tick."""
    landings = [i for i in ingests if i.source is None or not i.source.is_table]
    tables = [i.source.location for i in ingests if i.source is not None and i.source.is_table]
    targets = [[key(name, i) for name in (EVENTS.name, QUARANTINE.name)]
               for i in (landings or ingests[:1])]

    @dg.sensor(
        name="landing_sensor",
        target=dg.AssetSelection.assets(*(k for keys in targets for k in keys)),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Ingests an arrival day when its landing folder appears or a file in it changes.",
    )
    def landing_sensor(context: dg.SensorEvaluationContext, lakehouse: LakehouseResource):
        if not landings:
            return dg.SkipReason(f"the events come from the table{'s' * (len(tables) > 1)} {', '.join(tables)}: "
                                 "the schedule ingests each partition as it ends")
        seen = json.loads(context.cursor) if context.cursor else {}
        if seen and all(isinstance(v, str) for v in seen.values()):  # one landing root's, as cursors were
            seen = {lakehouse.landing_root: seen}
        # Not the partition under way (it has not ended); asked key by key, not listed: fifteen
        # minutes since 2020 are 200,000 keys a tick.
        first, last = partitions.get_first_partition_window(), partitions.get_last_partition_window()
        days = (first.start.date(), last.start.date()) if first and last else None
        now, requests, missing, waiting = {}, [], [], set()
        for ingest, keys in zip(landings, targets):
            root = ingest.source.landing if ingest.source is not None else lakehouse.landing_root
            if not os.path.isdir(root):
                missing.append(root)
                continue
            before, now[root] = seen.get(root, {}), {}
            # what is under way both before and after what is ingested: a run that ends, or
            # starts, between the reads is seen one way or the other, never as neither (which
            # would have its days ingested a second time)
            ending = days_under_way(context.instance, keys[0], partitions)
            ingested = context.instance.get_materialized_partitions(keys[0])
            starting = days_under_way(context.instance, keys[0], partitions)
            under_way = None if ending is None or starting is None else ending | starting
            for day in sorted(os.listdir(root)):
                when = _date_of(day)
                if not (days and when and days[0] <= when <= days[1] and os.path.isdir(os.path.join(root, day))):
                    continue
                folder = os.path.join(root, day)
                by_day = ingested_by_a_daily_run(folder, when, ingest.partition, before, ingested)
                for name, fingerprint in landing_partitions(folder, when, ingest.partition).items():
                    if not partitions.has_partition_key(name):
                        continue
                    if under_way is None or name in under_way:  # looked at again once that run ends
                        waiting.add(name)
                        if name in before:
                            now[root][name] = before[name]
                        continue
                    now[root][name] = fingerprint
                    if (name in before and before[name] != fingerprint) or not (name in ingested or by_day(name)):
                        prefix = "" if ingest.ingest_at is None else f"{ingest.ingest_at}:"
                        requests.append(dg.RunRequest(run_key=f"{prefix}{name}:{fingerprint}", partition_key=name,
                                                      asset_selection=keys))
        context.update_cursor(json.dumps(now))
        if requests:
            return requests
        return dg.SkipReason("; ".join([*(f"no landing folder at {r}" for r in missing),
                                        *([f"{len(waiting)} partitions are being ingested by a run or backfill"]
                                          if waiting else []),
                                        *(["no new or changed landing folders"] if len(missing) < len(landings)
                                          else [])]))

    return landing_sensor


def _date_of(folder: str) -> date | None:
    """The arrival day a landing folder's name says (``YYYY-MM-DD``), else None."""
    try:
        day = date.fromisoformat(folder)
    except ValueError:
        return None
    return day if day.isoformat() == folder else None  # not 20250102 or 2025-W01-1, which it also reads


_RUNS_UNDER_WAY = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
              dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def days_under_way(instance: dg.DagsterInstance, asset_key: dg.AssetKey,
                   partitions: dg.TimeWindowPartitionsDefinition) -> set[str] | None:
    """The days of ``asset_key`` that a run not yet ended will materialise; None while a backfill
    that may is under way (its runs are launched in turn: any day may be next).

    The sensor leaves those days alone, or a backfill launched from the UI over days not yet
    ingested would have each of them ingested twice, the second time by a run of the sensor's.
    A backfill of a job (``daily_pipeline``, every asset) names no assets: it counts as one of
    ingest. Dagster 1.13 has no public filter of backfills by status, so the newest 50 are read.
    """
    for backfill in instance.get_backfills(limit=50):
        if backfill.status.value in backfill_under_way and (
                backfill.asset_selection is None or asset_key in backfill.asset_selection):
            return None
    days: set[str] = set()
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_RUNS_UNDER_WAY)):
        if run.asset_selection is not None and asset_key not in run.asset_selection:
            continue
        tags = run.tags
        if "dagster/partition" in tags:
            days.add(tags["dagster/partition"])
        elif "dagster/asset_partition_range_start" in tags:
            days.update(partitions.get_partition_keys_in_range(dg.PartitionKeyRange(
                tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"])))
    return days
