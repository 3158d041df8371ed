"""The Definitions load, with the graph, partitions and schedule a user expects in the UI."""

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import pytest

from assets.resources import LakehouseResource
from expectations.catalog import ERROR, WARN, catalog
from jobs.tables import declared_columns
from assets.partitions import partitions_from_environment
from orchestration import automation
from orchestration.automation import build_landing_sensor, folder_fingerprint
from orchestration.definitions import build_definitions, defs
from orchestration.freshness import output_watermark
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig, reads_day_tiles
from windowing_core.deployment import Deployment
from windowing_core.window_spec import DAY_SECONDS, WindowSpec


def test_definitions_load():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"events", "quarantine", "minute_partials", "window_changes", "window_snapshot"} <= keys
    assert defs.resolve_job_def("daily_pipeline") is not None
    assert [s.name for s in defs.schedules] == ["daily_pipeline_schedule", "weekly_vacuum"]
    assert defs.resolve_job_def("vacuum_lakehouse") is not None


def test_dg_finds_the_project_and_loads_its_definitions(tmp_path):
    """``bash run.sh dev`` runs ``dg dev``: pyproject.toml's [tool.dg] makes the repository a dg
    project whose code location is panes' definitions."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PANES_LANDING": str(tmp_path), "DAGSTER_HOME": str(tmp_path),
           "VIRTUAL_ENV": str(Path(sys.executable).parent.parent)}
    listed = subprocess.run([str(Path(sys.executable).parent / "dg"), "list", "defs", "--json"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {"events", "window_changes"} <= {a["asset_key"] for a in json.loads(listed.stdout)["assets"]}


def test_a_table_source_is_an_external_asset_upstream_of_events():
    config = PipelineConfig.from_dict({"source": {"table": "db.clicks", "time": "ts", "arrival": "loaded_at"}})
    defs = build_definitions(config, landing_root="/tmp/landing", lakehouse_root="/tmp/lakehouse")
    graph = defs.resolve_asset_graph()
    source = graph.get(dg.AssetKey("event_source"))
    assert graph.get(dg.AssetKey("events")).parent_keys == {source.key}
    assert source.is_external and not source.is_materializable
    assert source.metadata["source"] == "db.clicks" and source.metadata["arrival_column"] == "loaded_at"
    assert "event_source" not in {k.to_user_string() for k in
                                  defs.resolve_job_def("daily_pipeline").asset_layer.executable_asset_keys}
    tick = defs.resolve_sensor_def("landing_sensor")(dg.build_sensor_context(
        resources={"lakehouse": LakehouseResource(landing_root="/tmp/landing", lakehouse_root="/tmp/lakehouse")}))
    assert "the events come from the table db.clicks" in str(tick)


def test_partitions_below_a_day_are_every_assets_and_checks_and_the_schedules():
    defs = build_definitions(PipelineConfig(partition=900), landing_root="/tmp/landing", lakehouse_root="/tmp/lakehouse")
    graph = defs.resolve_asset_graph()
    for name in ("events", "minute_partials", "window_changes"):
        partitions = graph.get(dg.AssetKey(name)).partitions_def
        assert partitions.cron_schedule == "*/15 * * * *", name
        assert partitions.get_partition_keys()[:2] == ["2025-01-01-00:00", "2025-01-01-00:15"], name
    assert {spec.partitions_def.cron_schedule for checks in defs.asset_checks for spec in checks.check_specs
            if spec.partitions_def is not None} == {"*/15 * * * *"}
    assert defs.resolve_schedule_def("daily_pipeline_schedule").cron_schedule == "*/15 * * * *"


def test_groups_have_their_own_lineage_and_checks_and_share_each_sources_ingest():
    """Two groups over the landing folders and one over a table: one ingest per source, each
    group's assets and checks under its name (key prefix and asset group), its partials reading
    its source's events; the landing sensor ingests the landing folders' source."""
    deployment = Deployment.from_dict({"groups": {
        "views": {}, "big_views": {"where": "value >= 10", "windows": {"s30m": {"gap": "30m"}}},
        "clicked": {"source": {"table": "db.clicks", "time": "ts"}, "key": ["user_id", "country"]}},
        "spine": {"table": "db.labels", "groups": {"views": {}, "clicked": {"key": ["user_id", "country"]}}}})
    defs = build_definitions(deployment, landing_root="/tmp/landing", lakehouse_root="/tmp/lakehouse")
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"events", "quarantine", "clicks/events", "clicks/quarantine", "clicks/event_source"} <= keys
    for group in ("views", "big_views", "clicked"):
        assert {f"{group}/minute_partials", f"{group}/window_changes", f"{group}/window_snapshot"} <= keys
        assert graph.get(dg.AssetKey([group, "window_changes"])).group_name == group
    assert not any(k.startswith(("views/events", "big_views/events")) for k in keys)
    assert "big_views/session_state" in keys and "views/session_state" not in keys
    assert graph.get(dg.AssetKey(["views", "minute_partials"])).parent_keys == {dg.AssetKey("events")}
    assert graph.get(dg.AssetKey(["clicked", "minute_partials"])).parent_keys == {dg.AssetKey(["clicks", "events"])}
    assert graph.get(dg.AssetKey("events")).group_name == "ingest"
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert {("events", "input_records_reconcile"), ("clicks/events", "input_records_reconcile"),
            ("views/minute_partials", "partials_count_accepted_events"),
            ("big_views/window_changes", "output_watermark_within_bound")} <= checks
    assert not any(key.startswith("views/events") for key, _ in checks)
    assert graph.get(dg.AssetKey("spine_values")).parent_keys == {
        dg.AssetKey([g, t]) for g in ("views", "clicked") for t in ("window_changes", "window_snapshot")}
    assert {("spine_values", "values_not_after_row_time"), ("spine_values", "spine_rows_joined_once")} <= checks
    selection = defs.resolve_sensor_def("landing_sensor").targets[0].resolvable_to_job.selection
    assert {k.to_user_string() for k in selection.resolve(graph)} == {"events", "quarantine"}


def test_the_landing_sensor_ingests_each_landing_source_on_its_own(tmp_path):
    """A group over landing folders of its own (``source: {landing: ...}``): the sensor watches
    both roots and asks for each new day of each, with that source's ingest assets only."""
    default, orders = tmp_path / "landing", tmp_path / "orders"
    (default / "2025-01-02").mkdir(parents=True)
    (orders / "2025-01-03").mkdir(parents=True)
    deployment = Deployment.from_dict({"groups": {"views": {}, "bought": {"source": {"landing": str(orders)}}}})
    defs = build_definitions(deployment, landing_root=str(default), lakehouse_root=str(tmp_path / "lake"))
    assert {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} >= {
        "events", "orders/events", "bought/window_changes"}
    assert "orders/event_source" not in {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    sensor = defs.resolve_sensor_def("landing_sensor")
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=defs.resources) as context:
        requests = list(sensor(context))
        cursor = context.cursor
    assert sorted((r.partition_key, tuple(k.to_user_string() for k in r.asset_selection)) for r in requests) == [
        ("2025-01-02", ("events", "quarantine")), ("2025-01-03", ("orders/events", "orders/quarantine"))]
    assert set(json.loads(cursor)) == {str(default), str(orders)}


def ingest_run(**tags: str) -> dg.DagsterRun:
    """A run not yet ended that ingests the days its partition tags name."""
    return dg.DagsterRun(job_name="__ASSET_JOB", status=dg.DagsterRunStatus.STARTED,
                         asset_selection=frozenset({dg.AssetKey("events"), dg.AssetKey("quarantine")}),
                         tags=tags)


def one_day_landing_sensor(tmp_path):
    """The landing sensor of a deployment whose landing holds one arrival day, 2025-01-02."""
    landing = tmp_path / "landing"
    (landing / "2025-01-02").mkdir(parents=True)
    defs = build_definitions(PipelineConfig(), landing_root=str(landing), lakehouse_root=str(tmp_path / "lake"))
    return defs.resolve_sensor_def("landing_sensor"), defs.resources


def test_the_landing_sensor_leaves_alone_the_days_a_run_is_ingesting(tmp_path):
    """A run not yet ended that ingests a range (a backfill's run, or one launched by hand) has
    its days skipped: the sensor would otherwise ingest each of them a second time. The days
    keep their old fingerprint, so a file landing meanwhile is still seen once the run ends."""
    landing = tmp_path / "landing"
    for day in ("2025-01-02", "2025-01-03", "2025-01-04"):
        (landing / day).mkdir(parents=True)
    defs = build_definitions(PipelineConfig(), landing_root=str(landing), lakehouse_root=str(tmp_path / "lake"))
    sensor = defs.resolve_sensor_def("landing_sensor")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_run(ingest_run(**{"dagster/asset_partition_range_start": "2025-01-02",
                                   "dagster/asset_partition_range_end": "2025-01-03"}))
    with dg.build_sensor_context(instance=instance, resources=defs.resources,
                                 cursor=json.dumps({str(landing): {"2025-01-03": "before"}})) as context:
        requests = list(sensor(context))
        cursor = json.loads(context.cursor)[str(landing)]
    assert [r.partition_key for r in requests] == ["2025-01-04"]
    assert set(cursor) == {"2025-01-03", "2025-01-04"} and cursor["2025-01-03"] == "before"


def test_a_run_ending_while_the_landing_sensor_reads_is_not_followed_by_a_second_ingest(tmp_path, monkeypatch):
    """The run ingesting a day writes it and ends while a tick reads: the tick asks which days are
    under way first and which are ingested after, so it sees the day one way or the other."""
    sensor, resources = one_day_landing_sensor(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    run = ingest_run(**{"dagster/partition": "2025-01-02"})
    instance.add_run(run)
    under_way = automation.days_under_way

    def the_run_ends_as_the_tick_reads(*args):
        if instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED:
            for key in ("events", "quarantine"):
                instance.report_runless_asset_event(dg.AssetMaterialization(key, partition="2025-01-02"))
            instance.report_dagster_event(dg.DagsterEvent(dg.DagsterEventType.RUN_SUCCESS.value, run.job_name),
                                          run_id=run.run_id)
        return under_way(*args)

    monkeypatch.setattr(automation, "days_under_way", the_run_ends_as_the_tick_reads)
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = sensor(context)
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.SUCCESS
    assert isinstance(result, dg.SkipReason), [r.partition_key for r in result]


def test_a_run_starting_while_the_landing_sensor_reads_is_not_joined_by_a_second_ingest(tmp_path, monkeypatch):
    """A run ingesting a day is launched while a tick reads which days are ingested: the tick
    asks again which days are under way after that, and leaves the day to the run."""
    sensor, resources = one_day_landing_sensor(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    read = instance.get_materialized_partitions

    def a_run_starts_as_the_tick_reads(*args, **kwargs):
        if not instance.get_runs():
            instance.add_run(ingest_run(**{"dagster/partition": "2025-01-02"}))
        return read(*args, **kwargs)

    monkeypatch.setattr(instance, "get_materialized_partitions", a_run_starts_as_the_tick_reads)
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = sensor(context)
    assert len(instance.get_runs()) == 1
    assert isinstance(result, dg.SkipReason), [r.partition_key for r in result]
    assert "1 partitions are being ingested" in result.skip_message


def test_a_days_fingerprint_changes_when_a_file_lands_in_any_of_its_folders(tmp_path):
    """An hour folder's new or changed file changes its day's fingerprint (the sensor ingests the
    day again); a day of plain files keeps the fingerprint it had before subfolders counted, and a
    link back into the day is walked once."""
    day = tmp_path / "2025-01-02"
    day.mkdir()
    (day / "a.json").write_text("{}\n")
    info = (day / "a.json").stat()
    plain = hashlib.sha256(json.dumps([["a.json", info.st_size, info.st_mtime_ns]]).encode()).hexdigest()[:16]
    assert folder_fingerprint(str(day)) == plain
    (day / "13").mkdir()
    (day / "13" / "loop").symlink_to(day)
    assert folder_fingerprint(str(day)) == plain  # a folder without files adds nothing
    (day / "13" / "b.json").write_text("{}\n")
    landed = folder_fingerprint(str(day))
    os.utime(day / "13" / "b.json", ns=(1, 1))
    assert len({plain, landed, folder_fingerprint(str(day))}) == 3


def test_below_a_day_the_landing_sensor_asks_for_the_part_of_each_hour_folder_and_the_days_last_for_the_rest(
        tmp_path):
    """``partition: 1h``: an hour folder's files are its hour's (``1345`` is 13:00's); a file
    outside the part folders (in the day's folder, or in ``24/``, no hour) is the day's last
    hour's, which the run closing the day reads. A file landing in ``13/`` asks for 13:00 again.
    Folders not named as an arrival day of the partitions ask for nothing."""
    landing = tmp_path / "landing"
    day = landing / "2025-01-02"
    for folder in ("07", "13", "1345", "24"):
        (day / folder).mkdir(parents=True)
        (day / folder / "a.json").write_text("{}\n")
    (day / "late.json").write_text("{}\n")
    # Not arrival days of the partitions: another spelling of the day (ISO week, basic format),
    # a day past the end, a folder of notes
    for folder in ("2025-W01-4/09", "20250102/05", "2025-01-05/10", "notes/11"):
        (landing / folder).mkdir(parents=True)
        (landing / folder / "a.json").write_text("{}\n")
    config = PipelineConfig(partition=3600)
    sensor = build_landing_sensor(
        partitions_from_environment({"PANES_START_DATE": "2025-01-01", "PANES_END_DATE": "2025-01-03"}, 3600),
        (config,))
    resources = {"lakehouse": LakehouseResource(landing_root=str(landing), lakehouse_root=str(tmp_path / "lake"))}

    def tick(cursor=None):
        with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=resources,
                                     cursor=cursor) as context:
            return {r.partition_key: r.run_key for r in sensor(context)}, context.cursor

    first, cursor = tick()
    assert sorted(first) == ["2025-01-02-07:00", "2025-01-02-13:00", "2025-01-02-23:00"]
    (day / "13" / "b.json").write_text("{}\n")
    second, _ = tick(cursor)
    assert {k for k in second if second[k] != first[k]} == {"2025-01-02-13:00"}
    (day / "24" / "b.json").write_text("{}\n")
    third, _ = tick(cursor)
    assert {k for k in third if third[k] != first[k]} == {"2025-01-02-13:00", "2025-01-02-23:00"}


def test_below_a_day_a_file_landing_in_the_hour_under_way_is_ingested_without_waiting_for_its_end(tmp_path):
    """With partitions running to now, the current hour is a partition: its folder is asked for
    as soon as a file lands, and again when another does. A day's partition exists once it ends."""
    now = datetime.now(timezone.utc)
    folder = tmp_path / "landing" / now.date().isoformat() / f"{now.hour:02d}"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text("{}\n")
    environ = {"PANES_START_DATE": (now.date() - timedelta(days=1)).isoformat()}
    resources = {"lakehouse": LakehouseResource(landing_root=str(tmp_path / "landing"),
                                                lakehouse_root=str(tmp_path / "lake"))}

    def tick(seconds, cursor=None):
        sensor = build_landing_sensor(partitions_from_environment(environ, seconds), (PipelineConfig(partition=seconds),))
        with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=resources,
                                     cursor=cursor) as context:
            result = sensor(context)
            return {r.partition_key: r.run_key for r in result} if isinstance(result, list) else {}, context.cursor

    hour = f"{now:%Y-%m-%d-%H}:00"
    first, cursor = tick(3600)
    assert list(first) == [hour]
    (folder / "b.json").write_text("{}\n")
    second, _ = tick(3600, cursor)
    assert list(second) == [hour] and second[hour] != first[hour]
    assert tick(86400)[0] == {}  # today has not ended


def test_switched_from_daily_to_hourly_the_landing_sensor_asks_only_for_what_the_daily_runs_left(tmp_path):
    """``partition: 1d`` then ``1h``: Dagster has the days' history, not the hours'. A day ingested
    daily whose folder is as the daily sensor last saw it asks for nothing, then for the hour of a
    file landing in it; a day whose folder changed after its daily run, or never ingested, asks
    for each of its hours."""
    landing = tmp_path / "landing"
    days = {day: landing / day for day in ("2025-01-02", "2025-01-03", "2025-01-04")}
    for folder in days.values():
        for hour in ("07", "13"):
            (folder / hour).mkdir(parents=True)
            (folder / hour / "a.json").write_text("{}\n")
    instance = dg.DagsterInstance.ephemeral()
    daily_cursor = {}
    for day in ("2025-01-02", "2025-01-03"):  # what the daily deployment ingested, and its sensor saw
        instance.report_runless_asset_event(dg.AssetMaterialization("events", partition=day))
        daily_cursor[day] = folder_fingerprint(str(days[day]))
    (days["2025-01-03"] / "13" / "b.json").write_text("{}\n")  # landed after the daily run
    sensor = build_landing_sensor(
        partitions_from_environment({"PANES_START_DATE": "2025-01-01", "PANES_END_DATE": "2025-01-05"}, 3600),
        (PipelineConfig(partition=3600),))
    resources = {"lakehouse": LakehouseResource(landing_root=str(landing), lakehouse_root=str(tmp_path / "lake"))}

    def tick(cursor):
        with dg.build_sensor_context(instance=instance, resources=resources, cursor=json.dumps(cursor)) as context:
            result = sensor(context)
            requests = [] if isinstance(result, dg.SkipReason) else result
            return sorted(r.partition_key for r in requests), json.loads(context.cursor)

    first, cursor = tick({str(landing): daily_cursor})
    assert first == ["2025-01-03-07:00", "2025-01-03-13:00", "2025-01-04-07:00", "2025-01-04-13:00"]
    for part in first:  # their runs ended
        instance.report_runless_asset_event(dg.AssetMaterialization("events", partition=part))
    second, cursor = tick(cursor)
    assert second == []
    (days["2025-01-02"] / "13" / "b.json").write_text("{}\n")
    third, _ = tick(cursor)
    assert third == ["2025-01-02-13:00"]


def test_a_bad_progress_interval_fails_when_the_definitions_load(monkeypatch):
    from orchestration.definitions import _defs_from_environment

    monkeypatch.setenv("PANES_PROGRESS_SECONDS", "often")
    with pytest.raises(ValueError, match="PANES_PROGRESS_SECONDS must be a number of seconds, not 'often'"):
        _defs_from_environment()


def test_a_run_shares_one_spark_session_across_its_steps():
    """The UI's Materialize (the implicit asset job) and the daily job run their steps in one
    process: a step per process would start a Spark driver per step."""
    for job in (defs.resolve_implicit_global_asset_job_def(), defs.resolve_job_def("daily_pipeline")):
        assert job.executor_def.name == dg.in_process_executor.name, job.name


def test_partition_mappings_follow_lateness_and_window_length():
    config = PipelineConfig(allowed_lateness=3 * DAY_SECONDS, windows=(WindowSpec.of("30d", "30d", "1h"),),
                            aggregations=(aggregation("max"),))  # slides over the day tiles
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    partials = graph.get(dg.AssetKey("minute_partials"))
    events_mapping = partials.partition_mappings[dg.AssetKey("events")]
    assert (events_mapping.start_offset, events_mapping.end_offset) == (0, 3)
    changes = graph.get(dg.AssetKey("window_changes"))
    frames = changes.partition_mappings[dg.AssetKey("minute_partials")]
    assert (frames.start_offset, frames.end_offset) == (-31, 0)
    snapshot = graph.get(dg.AssetKey("window_snapshot"))
    assert snapshot.partition_mappings[dg.AssetKey("daily_partials")] == frames


@pytest.mark.parametrize("aggregations, window, kept", [
    (("count", "sum"), "30d", False),  # invertible: the snapshot carries them
    (("max",), "30d", True),
    (("max",), "1h", False),  # tiles under a day come from the frames the job reads anyway
    (("count", "min"), "1d", True),
])
def test_daily_partials_is_an_asset_with_checks_only_where_a_window_slides_over_it(aggregations, window, kept):
    config = PipelineConfig(windows=(WindowSpec.of(window, window, "1m"),),
                            aggregations=tuple(aggregation(a) for a in aggregations))
    built = build_definitions(config, landing_root="l", lakehouse_root="h")
    graph = built.resolve_asset_graph()
    tiles = dg.AssetKey("daily_partials")
    assert (tiles in graph.get_all_asset_keys()) is kept
    assert (tiles in graph.get(dg.AssetKey("window_changes")).parent_keys) is kept
    checked = {k.asset_key for k in graph.asset_check_keys}
    assert (tiles in checked) is kept
    assert reads_day_tiles(config) is kept


def test_every_asset_backfills_in_a_single_run():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).backfill_policy == dg.BackfillPolicy.single_run(), key


def test_the_freshness_policy_is_on_the_window_assets_only():
    graph = defs.resolve_asset_graph()
    fresh = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).freshness_policy}
    assert fresh == {"window_changes", "window_snapshot"}
    policy = graph.get(dg.AssetKey("window_changes")).freshness_policy
    assert policy.warn_window.to_timedelta() == timedelta(days=2, hours=6)  # lateness 2d + slack 6h
    assert policy.fail_window.to_timedelta() == timedelta(days=3, hours=6)


def test_the_output_watermark_stops_at_the_first_missing_day():
    config = PipelineConfig()  # 7d window sliding every minute
    watermark, missing = output_watermark(config, {"2025-01-27", "2025-01-28", "2025-01-30"})
    assert missing == ["2025-01-29"]
    assert watermark == datetime(2025, 1, 28, 23, 59, tzinfo=timezone.utc)
    watermark, missing = output_watermark(config, {"2025-01-27", "2025-01-28"})
    assert (watermark, missing) == (datetime(2025, 1, 28, 23, 59, tzinfo=timezone.utc), [])
    assert output_watermark(config, set()) == (None, [])


def test_below_a_day_the_output_watermark_stops_at_the_first_missing_part_and_a_daily_key_covers_its_day():
    """``partition: 1h``: the keys are parts (``2025-01-28-13:00``); a day materialised before the
    switch from ``1d`` covers each of its parts."""
    config = PipelineConfig(partition=3600)
    watermark, missing = output_watermark(config, {"2025-01-27", "2025-01-28-00:00", "2025-01-28-01:00",
                                                   "2025-01-28-03:00"})
    assert missing == ["2025-01-28-02:00"]
    assert watermark == datetime(2025, 1, 28, 1, 59, tzinfo=timezone.utc)
    assert output_watermark(config, {"2025-01-28-13:00"}) == (datetime(2025, 1, 28, 13, 59, tzinfo=timezone.utc), [])
    # the partition under way has not seen all its data: its windows do not move the watermark
    under_way = datetime(2025, 1, 28, 13, 20, tzinfo=timezone.utc)
    assert output_watermark(config, {"2025-01-28-12:00", "2025-01-28-13:00"}, now=under_way) == (
        datetime(2025, 1, 28, 12, 59, tzinfo=timezone.utc), [])
    assert output_watermark(config, {"2025-01-28-13:00"}, now=under_way) == (None, [])


@pytest.mark.parametrize("partition, tick, expected", [
    (3600, datetime(2025, 1, 2, 14, tzinfo=timezone.utc), "2025-01-02-13:00"),
    (900, datetime(2025, 1, 3, 0, tzinfo=timezone.utc), "2025-01-02-23:45"),
    (86400, datetime(2025, 1, 3, 1, tzinfo=timezone.utc), "2025-01-02"),
])
def test_the_schedule_runs_each_partition_as_it_ends_not_the_one_under_way(partition, tick, expected):
    """Below a day the partition under way exists (the sensor and late firings keep it current):
    the schedule's tick at a part's end asks for the part that ended, as the daily one asks at
    01:00 for the day before."""
    defs = build_definitions(PipelineConfig(partition=partition), landing_root="l", lakehouse_root="h")
    schedule = defs.resolve_schedule_def("daily_pipeline_schedule")
    assert schedule.cron_schedule == {3600: "0 * * * *", 900: "*/15 * * * *", 86400: "0 1 * * *"}[partition]
    with dg.build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as context:
        requests = schedule.evaluate_tick(context).run_requests
    assert [(r.partition_key, r.run_key) for r in requests] == [(expected, expected)]


def test_automation_fires_every_asset_downstream_of_ingest_and_sensors_start_running():
    graph = defs.resolve_asset_graph()
    automated = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).automation_condition}
    assert automated == {"minute_partials", "window_changes", "window_snapshot"}
    sensors = {s.name: s.default_status for s in defs.sensors}
    assert sensors == {"landing_sensor": dg.DefaultSensorStatus.RUNNING, "late_firings": dg.DefaultSensorStatus.RUNNING}


def test_every_column_of_every_aggregation_is_listed_and_described():
    """The UI lists each table's declared columns, each with what it holds, whatever is configured."""
    from windowing_core.aggregations import AGGREGATIONS

    config = PipelineConfig(windows=(WindowSpec.of("30d", "30d", "1m"),),
                            aggregations=tuple(aggregation(kind, f"my_{kind}") for kind in AGGREGATIONS))
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    for table in ("events", "quarantine", "minute_partials", "daily_partials", "window_changes", "window_snapshot"):
        schema = graph.get(dg.AssetKey(table)).metadata["dagster/column_schema"]
        assert [(c.name, c.type) for c in schema.columns] == declared_columns(table, config), table
        assert all(c.description for c in schema.columns), table
    partials = graph.get(dg.AssetKey("minute_partials")).metadata["dagster/column_schema"]
    described = {c.name: c.description for c in partials.columns}
    assert described["my_var_samp__bb"] == "partial of my_var_samp (var_samp): sum of b * b"


def test_typed_fields_and_their_aggregations_are_columns_of_their_type_in_the_ui():
    """Declared fields are typed columns of events; each aggregation one column of the window
    tables in its own type (a decimal stays a decimal), all listed and described."""
    config = PipelineConfig.from_dict({
        "fields": {"amount": "decimal(12,2)", "latency_ms": "double", "page": "string"},
        "windows": {"1d": {"length": "1d", "slide": "1h"}},
        "aggregations": {"revenue": {"kind": "sum", "field": "amount"}, "avg": {"kind": "mean", "field": "amount"},
                         "slowest": {"kind": "max", "field": "latency_ms"}, "last_page": {"kind": "last", "field": "page"}},
    })
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    columns = {}
    for table in ("events", "window_changes", "window_snapshot"):
        schema = graph.get(dg.AssetKey(table)).metadata["dagster/column_schema"]
        assert [(c.name, c.type) for c in schema.columns] == declared_columns(table, config), table
        assert all(c.description for c in schema.columns), table
        columns[table] = {c.name: c for c in schema.columns}
    assert columns["events"]["amount"].type == "decimal(12,2)"
    assert "amount" in columns["events"]["amount"].description
    assert [(n, columns["window_changes"][n].type) for n in ("revenue", "avg", "slowest", "last_page")] == [
        ("revenue", "decimal(38,2)"), ("avg", "decimal(12,2)"), ("slowest", "double"), ("last_page", "string")]


def test_the_spark_launch_is_a_setting_and_a_bad_one_is_refused():
    from assets.spark_launch import spark_launch_from_environment

    launch = spark_launch_from_environment({"PANES_SPARK_LAUNCH": "pipes", "PANES_SPARK_MASTER": "spark://m:7077",
                                            "PANES_SPARK_SUBMIT_ARGS": "--py-files panes.zip --driver-memory 2g"})
    assert (launch.through_pipes, launch.master, launch.submit_args) == \
        (True, "spark://m:7077", ["--py-files", "panes.zip", "--driver-memory", "2g"])
    assert spark_launch_from_environment({}).through_pipes is False
    with pytest.raises(ValueError, match="PANES_SPARK_LAUNCH must be one of in_process, pipes, not 'yarn'"):
        spark_launch_from_environment({"PANES_SPARK_LAUNCH": "yarn"})
    built = build_definitions(PipelineConfig(), landing_root="l", lakehouse_root="h", spark_launch=launch)
    assert type(built.resources["pyspark"]).__name__ == "LazyPySparkResource", "no driver in the run's process"


def test_session_and_arrival_time_windows_add_their_tables_as_assets_with_their_mappings():
    """Sessions add session_state beside the window tables; time: arrival windows add
    arrival_partials, which window day D reads as written by the partials of D - reach - L .. D
    (an arrival frame of day D is written by the runs of the event days D - L .. D)."""
    config = PipelineConfig.from_dict({"allowed_lateness": "2d", "windows": {
        "visits": {"gap": "30m"}, "landed": {"length": "1d", "time": "arrival"}, "day": {"length": "1d"}}})
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"session_state", "arrival_partials"} <= keys
    changes = graph.get(dg.AssetKey("window_changes"))
    event, arrival = (changes.partition_mappings[dg.AssetKey(t)] for t in ("minute_partials", "arrival_partials"))
    assert (event.start_offset, arrival.start_offset) == (-2, -4)
    plain = build_definitions(PipelineConfig(), landing_root="l", lakehouse_root="h").resolve_asset_graph()
    assert not {"session_state", "arrival_partials"} & {k.to_user_string() for k in plain.get_all_asset_keys()}


def test_a_configuration_of_sessions_alone_loads_and_its_output_watermark_is_the_covered_days_end():
    config = PipelineConfig.from_dict({"windows": {"visits": {"gap": "30m"}}})
    build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    watermark, missing = output_watermark(config, {"2025-01-28", "2025-01-29"})
    assert watermark == datetime(2025, 1, 30, tzinfo=timezone.utc) and missing == []


def test_spine_values_is_an_asset_with_its_blocking_check_only_where_a_spine_is_configured():
    """Spine day D reads the change points of D - 1 .. D (a 1d window ends up to a day before its
    row) and the snapshots of the days before them; without ``spine:`` there is no such asset."""
    windows = {"1h": {"length": "1h", "slide": "10m"}, "daily": {"length": "1d"}, "visits": {"gap": "30m"}}
    config = PipelineConfig.from_dict({"windows": windows, "spine": {"path": "/data/labels", "ts": "labelled_at"}})
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    spine = graph.get(dg.AssetKey("spine_values"))
    changes, snapshot = (spine.partition_mappings[dg.AssetKey(t)] for t in ("window_changes", "window_snapshot"))
    assert ((changes.start_offset, changes.end_offset), (snapshot.start_offset, snapshot.end_offset)) == \
        ((-1, 0), (-2, 0))
    assert spine.partitions_def == graph.get(dg.AssetKey("window_changes")).partitions_def
    checks = {k.name: k for k in graph.asset_check_keys if k.asset_key == dg.AssetKey("spine_values")}
    assert set(checks) == {"values_not_after_row_time", "spine_rows_joined_once"}
    assert all(graph.get_check_spec(k).blocking for k in checks.values())
    assert dg.AssetKey("minute_partials") not in spine.parent_keys
    # read at the instant itself, the 1h window also reads the partials of the day before
    exact = PipelineConfig.from_dict({"windows": windows, "spine": {"path": "/data/labels", "precision": "event"}})
    exact_spine = build_definitions(exact, landing_root="l", lakehouse_root="h").resolve_asset_graph().get(
        dg.AssetKey("spine_values"))
    partials = exact_spine.partition_mappings[dg.AssetKey("minute_partials")]
    assert (partials.start_offset, partials.end_offset, partials.allow_nonexistent_upstream_partitions) == \
        (-1, 0, True)  # the first day reads no day before it
    plain = build_definitions(PipelineConfig(), landing_root="l", lakehouse_root="h").resolve_asset_graph()
    assert dg.AssetKey("spine_values") not in plain.get_all_asset_keys()
    assert not [k for k in plain.asset_check_keys if k.asset_key == dg.AssetKey("spine_values")]


def test_online_values_follows_the_snapshot_under_automation_with_its_blocking_check_only_where_configured():
    config = PipelineConfig.from_dict({"online": {"url": "postgresql://panes@db:5432/features"}})
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    online = graph.get(dg.AssetKey("online_values"))
    assert online.parent_keys == {dg.AssetKey("window_snapshot")}
    assert online.partitions_def == graph.get(dg.AssetKey("window_snapshot")).partitions_def
    assert online.automation_condition is not None and online.pools in (None, set())  # no Spark: no pool slot
    (check,) = [k for k in graph.asset_check_keys if k.asset_key == dg.AssetKey("online_values")]
    assert check.name == "online_matches_snapshot" and graph.get_check_spec(check).blocking
    plain = build_definitions(PipelineConfig(), landing_root="l", lakehouse_root="h").resolve_asset_graph()
    assert dg.AssetKey("online_values") not in plain.get_all_asset_keys()


def test_count_windows_add_count_state_and_read_the_events_of_the_days_a_late_event_renumbers():
    """Window day D of a count window reads the events of arrival days D .. D + L, and is fired by
    the partials of the L + 1 days before it: a late event renumbers its key's later events."""
    config = PipelineConfig.from_dict({"allowed_lateness": "2d", "windows": {"every_10": {"count": 10}}})
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    assert "count_state" in {k.to_user_string() for k in graph.get_all_asset_keys()}
    changes = graph.get(dg.AssetKey("window_changes"))
    frames, events = (changes.partition_mappings[dg.AssetKey(t)] for t in ("minute_partials", "events"))
    assert ((frames.start_offset, frames.end_offset), (events.start_offset, events.end_offset)) == ((-3, 0), (0, 2))
    watermark, missing = output_watermark(config, {"2025-01-28", "2025-01-29"})
    assert watermark == datetime(2025, 1, 30, tzinfo=timezone.utc) and missing == []
    longer = PipelineConfig.from_dict({"allowed_lateness": "2d",
                                       "windows": {"w": {"count": 3}, "7d": {"length": "7d"}}})
    changes = build_definitions(longer, landing_root="l", lakehouse_root="h").resolve_asset_graph().get(
        dg.AssetKey("window_changes"))
    assert changes.partition_mappings[dg.AssetKey("minute_partials")].start_offset == -8  # the 7d reach covers it


def test_every_checks_severity_blocking_flag_and_description_agree():
    """One rule for every check the UI shows (``expectations.catalog``): ERROR blocks, WARN
    reports; the description opens with its severity, and the catalog says the same."""
    config = PipelineConfig.from_dict({
        "windows": {"1h": {"length": "1h", "slide": "10m"}, "visits": {"gap": "30m"}},
        "spine": {"path": "/data/labels", "ts": "labelled_at"},
        "online": {"url": "postgresql://panes@db:5432/features"}})
    graph = build_definitions(config, landing_root="l", lakehouse_root="h").resolve_asset_graph()
    known = {(c.table, c.name): c for c in catalog(config)}
    seen = set()
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        severity = spec.metadata.get("severity")
        assert severity in (ERROR, WARN), (key, spec.metadata)
        assert spec.blocking == (severity == ERROR), key
        assert (spec.description or "").startswith(f"[{severity}] "), (key, spec.description)
        catalogued = known.get((key.asset_key.to_user_string(), key.name))
        if catalogued is not None:
            assert (catalogued.severity, catalogued.blocking) == (severity, spec.blocking), key
        seen.add(severity)
    assert seen == {ERROR, WARN}, "the case must hold checks of both severities"
