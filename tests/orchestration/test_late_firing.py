"""A late file lands after the windows exist: automation re-runs exactly what it can change."""

import json
from datetime import date, timedelta

import dagster as dg
import pytest

from jobs import minute_partials as minute_partials_job
from jobs.storage import delta_io, delta_write
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES, day_filter
from orchestration.definitions import build_definitions
from tests.landing import ensure_days, random_landing
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.reference import Event
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

FIRST = date(2025, 1, 28)
LAST = FIRST + timedelta(days=5)
CONFIG = PipelineConfig(windows=(WindowSpec.of("1d", "1d", "1h"),), allowed_lateness=2 * DAY_SECONDS)


def day(offset):
    return (FIRST + timedelta(days=offset)).isoformat()


def days(first, last):
    return {day(i) for i in range(first, last + 1)}


def materialize(defs, instance, selection, first, last, must_succeed=True):
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(s) for s in selection],
                                    tags={"dagster/asset_partition_range_start": first,
                                          "dagster/asset_partition_range_end": last},
                                    raise_on_error=must_succeed)
    assert result.success or not must_succeed
    return result.success


@pytest.fixture(scope="module")
def setup(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("late")
    landing = random_landing(root / "landing", 31, FIRST, 3, max_delay_days=1)
    ensure_days(root / "landing", FIRST, LAST)
    defs = build_definitions(CONFIG, landing_root=str(root / "landing"), lakehouse_root=str(root / "lake"),
                             spark_master="local[2]")
    instance = dg.DagsterInstance.ephemeral()
    materialize(defs, instance, ["events", "quarantine"], day(0), day(5))
    materialize(defs, instance, ["minute_partials"], day(0), day(5))
    materialize(defs, instance, ["window_changes", "window_snapshot"], day(0), day(5))
    return root, landing, defs, instance


def test_a_late_file_fires_exactly_the_affected_partitions(setup, spark):
    root, landing, defs, instance = setup
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    requests, sensor_cursor = sensor_tick(defs, instance, None)
    assert requests == [], "every landing folder is ingested already"

    # a file lands in arrival day 3 with events of day 2 (1 day late) and day 1 (2 days late)
    late = [("k9", "2025-01-30T23:30:00Z", 5, "late-1"), ("k9", "2025-01-29T12:00:00Z", 7, "late-2")]
    lines = [json.dumps({"user_id": k, "timestamp": t, "value": v, "event_id": i, "arrival_time": "2025-01-31T08:00:00Z"})
             for k, t, v, i in late]
    (root / "landing" / day(3) / "late.json").write_text("\n".join(lines) + "\n")
    requests, _ = sensor_tick(defs, instance, sensor_cursor)
    assert [r.partition_key for r in requests] == [day(3)]
    materialize(defs, instance, ["events", "quarantine"], day(3), day(3))

    # Arrival day 3 is read by the partials of event days 1, 2, 3 (D .. D + 2 map back to it);
    # window day D reads partials of D - 2 .. D, so event days 1..3 reach window days 1..5.
    # Both are requested in the same tick: a window's deps that will be requested count as updated.
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert result.get_requested_partitions(dg.AssetKey("minute_partials")) == days(1, 3)
    assert result.get_requested_partitions(dg.AssetKey("window_changes")) == days(1, 5)
    assert result.get_requested_partitions(dg.AssetKey("window_snapshot")) == days(1, 5)
    assert result.get_requested_partitions(dg.AssetKey("events")) == set()
    materialize(defs, instance, ["minute_partials"], day(1), day(3))
    materialize(defs, instance, ["window_changes", "window_snapshot"], day(1), day(5))

    # the late arrival has been handled: nothing fires again, though the windows ran in a run
    # of their own after the partials' run
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {}

    every_event = landing.events + [
        Event(k, reference.datetime.fromisoformat(t.replace("Z", "+00:00")), v, i, FIRST + timedelta(days=3),
              "late.json", line, reference.datetime.fromisoformat("2025-01-31T08:00:00+00:00"), n + 1)
        for n, ((k, t, v, i), line) in enumerate(zip(late, lines))]
    changes = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_CHANGES.path(str(root / "lake")))
                     .select("key", "window", "window_end", "count", "sum").collect())
    expected = sorted((r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
                      for r in reference.window_changes(every_event, CONFIG, FIRST, LAST))
    assert changes == expected
    assert any(r[0] == "k9" for r in changes)


def test_partials_rerun_alone_fires_the_windows_they_feed(setup):
    """Once the first test's late firing is handled, a manual re-run of one day's partials
    makes the windows reading it stale: those fire, once, and again only if the partials
    change after them, even when both ran since the last evaluation."""
    _, _, defs, instance = setup
    stale = {"window_changes": days(4, 6), "window_snapshot": days(4, 6)}
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    materialize(defs, instance, ["minute_partials"], day(4), day(4))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert requested(defs, result) == stale
    materialize(defs, instance, ["window_changes", "window_snapshot"], day(4), day(6))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {}

    # both since the last evaluation, the windows first: the partials' update is the newer
    materialize(defs, instance, ["window_changes", "window_snapshot"], day(4), day(6))
    materialize(defs, instance, ["minute_partials"], day(4), day(4))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == stale


def test_a_failed_blocking_check_holds_back_the_window_days_that_read_the_bad_day(setup, spark, monkeypatch):
    """A late file fires partials days 2 .. 4; a bug writes day 3 twice over, and its blocking
    checks fail. The next ticks fire only the window days that read none of it (2 and 6: window
    day D reads partials D - 2 .. D); once day 3 is repaired and passes, 3 .. 5 fire too."""
    root, landing, defs, instance = setup
    lake = str(root / "lake")
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    _, sensor_cursor = sensor_tick(defs, instance, None)
    line = json.dumps({"user_id": "k8", "timestamp": "2025-01-31T10:00:00Z", "value": 3, "event_id": "late-3",
                       "arrival_time": "2025-02-01T09:00:00Z"})
    (root / "landing" / day(4) / "late.json").write_text(line + "\n")
    requests, _ = sensor_tick(defs, instance, sensor_cursor)
    assert [r.partition_key for r in requests] == [day(4)]
    materialize(defs, instance, ["events", "quarantine"], day(4), day(4))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert requested(defs, result)["minute_partials"] == days(2, 4)

    bad = FIRST + timedelta(days=3)
    write = minute_partials_job.run

    def run_writing_day_3_twice(spark_session, lakehouse, first, last, config, **options):
        written = write(spark_session, lakehouse, first, last, config, **options)
        if first <= bad <= last:
            path, only = MINUTE_PARTIALS.path(lakehouse), day_filter("event_date", bad, bad)
            rows = delta_io.read_table(spark_session, path, partition_filters=only)
            doubled = spark_session.createDataFrame(rows.collect() * 2, rows.schema)
            delta_write.replace_partitions(doubled, path, partition_by=["event_date"], partition_filters=only)
        return written

    monkeypatch.setattr(minute_partials_job, "run", run_writing_day_3_twice)
    assert not materialize(defs, instance, ["minute_partials"], day(2), day(4), must_succeed=False)
    monkeypatch.undo()
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {"window_changes": {day(2), day(6)}, "window_snapshot": {day(2), day(6)}}
    for d in (2, 6):
        materialize(defs, instance, ["window_changes", "window_snapshot"], day(d), day(d))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {}, "window days 3 .. 5 stay held back"

    materialize(defs, instance, ["minute_partials"], day(3), day(3))  # repaired; its checks pass
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(defs, result) == {"window_changes": days(3, 5), "window_snapshot": days(3, 5)}
    materialize(defs, instance, ["window_changes", "window_snapshot"], day(3), day(5))
    k8 = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_CHANGES.path(lake))
                .where("key = 'k8'").select("window", "window_end", "count", "sum").collect())
    event = Event("k8", reference.datetime.fromisoformat("2025-01-31T10:00:00+00:00"), 3, "late-3",
                  FIRST + timedelta(days=4), "late.json", line,
                  reference.datetime.fromisoformat("2025-02-01T09:00:00+00:00"), 1)
    assert k8 == sorted((r.window, r.window_end.replace(tzinfo=None), *r.values)
                        for r in reference.window_changes([event], CONFIG, FIRST, LAST))


def requested(defs, result) -> dict[str, set[str]]:
    """Requested partitions by asset, leaving out assets with none."""
    by_asset = {key.to_user_string(): result.get_requested_partitions(key)
                for key in defs.resolve_asset_graph().get_all_asset_keys()}
    return {name: parts for name, parts in by_asset.items() if parts}


def sensor_tick(defs, instance, cursor):
    sensor = defs.resolve_sensor_def("landing_sensor")
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources) as context:
        result = sensor(context)
        return ([] if isinstance(result, dg.SkipReason) else list(result)), context.cursor
