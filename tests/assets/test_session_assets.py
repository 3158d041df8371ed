"""Dagster materialises session and count windows with the other windows, and every check holds
for them."""

import dataclasses
from collections import Counter
from datetime import date, timedelta

import dagster as dg
from dagster_pyspark import PySparkResource

from assets import build_assets
from assets.partitions import partitions_of
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from expectations.asset_checks import build_asset_checks
from jobs.storage import delta_io
from jobs.tables import COUNT_STATE, SESSION_STATE, WINDOW_CHANGES
from orchestration.definitions import build_definitions
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig
from windowing_core.count_windows import CountSpec
from windowing_core.reference import accepted_events, count_rows, session_rows
from windowing_core.sessions import SessionSpec
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
LAST = FIRST + timedelta(days=3)
CONFIG = PipelineConfig(windows=(WindowSpec.of("1h", "1h", "10m"),),
                        sessions=(SessionSpec.of("visits", "2h"), SessionSpec.of("live", "1h", emit="changes"),
                                  SessionSpec.of("arrived", "2h", time="arrival")),
                        counts=(CountSpec("last_5", 5, 2),))


def test_a_range_run_materialises_sessions_beside_sliding_windows_and_their_checks_pass(tmp_path, spark):
    landing = random_landing(tmp_path / "landing", 41, FIRST, 3, events_per_day=25, ties=0.3)
    ensure_days(tmp_path / "landing", FIRST, LAST + timedelta(days=2))
    lake = str(tmp_path / "lake")
    defs = build_definitions(CONFIG, landing_root=str(tmp_path / "landing"), lakehouse_root=lake,
                             spark_master="local[2]")
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(),
                                    tags={"dagster/asset_partition_range_start": FIRST.isoformat(),
                                          "dagster/asset_partition_range_end": LAST.isoformat()})
    assert result.success
    state = [m for m in result.asset_materializations_for_node("sliding_windows")
             if m.asset_key.to_user_string() == SESSION_STATE.name]
    assert state and {"session_watermark", "session_watermark_by_arrival", "arrival_time_windows"} <= set(
        state[0].metadata)
    assert [m for m in result.asset_materializations_for_node("sliding_windows")
            if m.asset_key.to_user_string() == COUNT_STATE.name]
    evaluations = result.get_asset_check_evaluations()
    window_checks = {e.check_name for e in evaluations if e.asset_key.to_user_string() == WINDOW_CHANGES.name}
    assert {"window_ends_on_grid", "window_length_matches_spec", "no_repeated_change_points",
            "changes_conserve_frames", "windows_declared"} <= window_checks
    failed = [(e.asset_key.to_user_string(), e.check_name, e.partition, e.description)
              for e in evaluations if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]
    assert failed == []  # warnings may fire: random_landing has malformed lines and negative values

    landed = [e for e in landing.events if e.arrival_date <= LAST]
    expected = sorted((r.key, r.window, r.window_start.replace(tzinfo=None), r.window_end.replace(tzinfo=None),
                       *r.values)
                      for r in [*session_rows(landed, CONFIG, FIRST, LAST), *count_rows(landed, CONFIG, FIRST, LAST)])
    rows = delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).where("window != '1h'")
    assert sorted(tuple(r) for r in rows.select("key", "window", "window_start", "window_end", "count", "sum")
                  .collect()) == expected
    assert {r[1] for r in expected} == {"visits", "live", "arrived", "last_5"}, "every window must write rows"
    instants = Counter((e.key, e.event_time) for e in accepted_events(landed, CONFIG))
    assert max(instants.values()) > 1, "the case must hold events of one key at one instant"


def test_a_day_of_sessions_and_count_windows_materialised_as_hourly_partitions_keeps_its_daily_tables(
        tmp_path, spark):
    """``partition: 1h``: a day materialised again as hourly ranges (13 hours, one hour, the rest)
    leaves its sessions', counts' and state tables as its daily run wrote them, and every ERROR
    check passes on every hour."""
    config = dataclasses.replace(CONFIG, sessions=CONFIG.sessions[:2])  # arrival time runs by days
    random_landing(tmp_path / "landing", 41, FIRST, 2, events_per_day=25, ties=0.3)
    ensure_days(tmp_path / "landing", FIRST, FIRST + timedelta(days=3))
    lake = str(tmp_path / "lake")
    resources = {"pyspark": PySparkResource(spark_config={"spark.master": "local[2]"}),
                 "lakehouse": LakehouseResource(landing_root=str(tmp_path / "landing"), lakehouse_root=lake),
                 "spark_launch": SparkLaunchResource()}
    day = FIRST + timedelta(days=1)
    assert dg.materialize(build_assets(config), resources=resources,
                          tags={"dagster/asset_partition_range_start": FIRST.isoformat(),
                                "dagster/asset_partition_range_end": day.isoformat()}).success

    def contents():
        return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lake)).collect())
                for t in (WINDOW_CHANGES, SESSION_STATE, COUNT_STATE)}

    before = contents()
    hourly = dataclasses.replace(config, partition=3600)
    checks = build_asset_checks(hourly, partitions_of(hourly))
    instance = dg.DagsterInstance.ephemeral()
    for first, last in ((0, 12), (13, 13), (14, 23)):
        result = dg.materialize([*build_assets(hourly), *checks], resources=resources, instance=instance,
                                tags={"dagster/asset_partition_range_start": f"{day}-{first:02d}:00",
                                      "dagster/asset_partition_range_end": f"{day}-{last:02d}:00"})
        assert result.success
        failed = [(e.asset_key.to_user_string(), e.check_name, e.partition)
                  for e in result.get_asset_check_evaluations()
                  if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]
        assert failed == []
        state = [m for m in result.asset_materializations_for_node("sliding_windows")
                 if m.asset_key.to_user_string() == SESSION_STATE.name]
        # only the part closing the day writes the day's state
        assert {m.metadata["rows_written_in_run"].value > 0 for m in state} == {last == 23}
    assert contents() == before
    written = delta_io.read_table(spark, WINDOW_CHANGES.path(lake)).where(f"date = '{day}'")
    assert {r.window for r in written.select("window").distinct().collect()} >= {"visits", "live", "last_5"}
