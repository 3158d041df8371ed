"""Dagster materialises spine_values after the windows it reads, and its blocking checks pass."""

from datetime import date, datetime, timedelta, timezone

import dagster as dg

from jobs.storage import delta_io
from jobs.tables import SPINE_VALUES
from orchestration.definitions import build_definitions
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig
from windowing_core.spine import SpineSpec
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
LAST = FIRST + timedelta(days=1)


def test_spine_values_materialise_per_day_of_ts_and_their_checks_pass(tmp_path, spark):
    random_landing(tmp_path / "landing", 7, FIRST, 2, events_per_day=20)
    ensure_days(tmp_path / "landing", FIRST, LAST + timedelta(days=2))
    midnight = datetime(FIRST.year, FIRST.month, FIRST.day, tzinfo=timezone.utc)
    moments = [midnight + timedelta(hours=h, milliseconds=ms) for h in (0, 5, 12, 23, 30, 36, 47) for ms in (0, 1)]
    spine = str(tmp_path / "spine")
    spark.createDataFrame([(f"k{i % 4}", t, i % 2 == 0) for i, t in enumerate(moments)],
                          "user_id string, ts timestamp, label boolean").write.format("delta").save(spine)
    config = PipelineConfig(windows=(WindowSpec.of("1h", "1h", "10m"),), spine=SpineSpec(path=spine))
    lake = str(tmp_path / "lake")
    defs = build_definitions(config, landing_root=str(tmp_path / "landing"), lakehouse_root=lake,
                             spark_master="local[2]")
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        tags={"dagster/asset_partition_range_start": FIRST.isoformat(),
              "dagster/asset_partition_range_end": LAST.isoformat()})
    assert result.success
    evaluations = [e for e in result.get_asset_check_evaluations() if e.asset_key == dg.AssetKey(SPINE_VALUES.name)]
    assert {(e.check_name, e.partition, e.passed) for e in evaluations} == {
        (check, day.isoformat(), True) for check in ("values_not_after_row_time", "spine_rows_joined_once")
        for day in (FIRST, LAST)}
    rows = delta_io.read_table(spark, SPINE_VALUES.path(lake))
    assert rows.count() == len(moments)
    assert {r.date for r in rows.select("date").distinct().collect()} == {FIRST, LAST}
    assert rows.where("`1h__event_count` > 0").count(), "the spine must find values"
