"""Dagster materialises session and count windows with the other windows, and every check holds
for them."""

from collections import Counter
from datetime import date, timedelta

import dagster as dg

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
