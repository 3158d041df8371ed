"""Dagster end to end: materialise partitions into a temporary lakehouse and check the tables."""

import dataclasses
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta

import dagster as dg
import pytest
from dagster_pyspark import PySparkResource
from pyspark.sql import functions as F

from assets import build_assets
from assets.online_values import ONLINE_VALUES
from assets.partitions import daily_partitions, partitions_of
from assets.resources import LakehouseResource
from assets.spark_launch import SparkLaunchResource
from expectations.asset_checks import build_asset_checks
from expectations.online_check import CHECK, build_online_check
from jobs import errors, online_values
from jobs.storage import delta_io, delta_write
from jobs.tables import (
    ALL_TABLES, EVENTS, LATE_EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns,
)
from tests.landing import ensure_days, random_landing, with_row_expressions
from tests.postgres_server import new_database, server_or_skip
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.online import OnlineSpec
from windowing_core.source import SourceSpec
from windowing_core.window_spec import WindowSpec

FIRST = date(2025, 1, 28)
LAST = FIRST + timedelta(days=6)
# The filter leaves out the events whose value is 0 (about 1 in 20)
CONFIG = PipelineConfig(windows=(WindowSpec.of("2d", "2d", "5m"),), where="value <> 0")


@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("e2e")
    landing = random_landing(root / "landing", 21, FIRST, 3)
    ensure_days(root / "landing", FIRST, LAST)
    return root, landing


def resources(root):
    return {
        "pyspark": PySparkResource(spark_config={"spark.master": "local[2]"}),
        "lakehouse": LakehouseResource(landing_root=str(root / "landing"), lakehouse_root=str(root / "lakehouse")),
        "spark_launch": SparkLaunchResource(),
    }


@pytest.fixture(scope="module")
def online():
    """The range run's configuration with an online store of its own."""
    with server_or_skip() as (host, port, user):
        url = f"postgresql://{user}@{host}:{port}/{new_database(host, port, user, 'features')}"
        yield dataclasses.replace(CONFIG, online=OnlineSpec(url))


@pytest.fixture(scope="module")
def range_run(lakehouse, online, spark):
    """One run over the whole range, as a single-run backfill launches it, the online store's
    load and its blocking check included."""
    root, _ = lakehouse
    instance = dg.DagsterInstance.ephemeral()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PANES_PROGRESS_SECONDS", "0.2")
        result = dg.materialize(
            [*build_assets(online), build_online_check(online, ONLINE_VALUES, daily_partitions)],
            resources=resources(root), instance=instance,
            tags={"dagster/asset_partition_range_start": FIRST.isoformat(),
                  "dagster/asset_partition_range_end": LAST.isoformat()},
        )
    return result, instance


def test_a_range_backfill_run_materialises_every_asset_and_matches_the_oracle(lakehouse, range_run, spark):
    root, landing = lakehouse
    result, instance = range_run
    assert result.success
    events = shown_by_day(result, "ingest_events", "events")
    assert sum(m["input_records"].value for m in events.values()) == landing.lines
    assert all(m["reconciles"].value for m in events.values())
    assert sum(m["dagster/row_count"].value for m in shown_by_day(result, "ingest_events", "quarantine").values()) \
        == landing.malformed

    log = [entry.user_message for entry in instance.all_logs(result.run_id)]
    days = f"{FIRST} .. {LAST}"
    for step in ("ingest_events", "partials", "sliding_windows"):
        assert f"{step} {days}: started" in log
        assert any(line.startswith(f"{step} {days}: done in ") for line in log), step
    assert any(" s in, Spark jobs: " in line for line in log), "no progress while the work ran"

    lake = str(root / "lakehouse")
    changes = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_CHANGES.path(lake))
                     .select("key", "window", "window_end", "count", "sum").collect())
    events = with_row_expressions(spark, landing.events, CONFIG)
    expected = sorted((r.key, r.window, r.window_end.replace(tzinfo=None), *r.values)
                      for r in reference.window_changes(events, CONFIG, FIRST, LAST))
    assert changes == expected
    assert reference.filtered_out(events, CONFIG), "the filter must leave events out"
    partial_days = {r[0] for r in delta_io.read_table(spark, MINUTE_PARTIALS.path(lake))
                    .select("event_date").distinct().collect()}
    assert partial_days == {FIRST, FIRST + timedelta(days=1), FIRST + timedelta(days=2)}


def test_the_online_store_holds_the_snapshot_of_the_last_day_loaded(lakehouse, online, range_run, spark):
    """The range run loads its last day (its windows are empty by then: the store is too) and
    checks every day; a day with values, materialised alone into a fresh store, is served as
    the snapshot holds it."""
    root, _ = lakehouse
    result, _ = range_run
    lake = str(root / "lakehouse")
    loaded = result.asset_materializations_for_node(ONLINE_VALUES)
    assert {m.partition for m in loaded} == {(FIRST + timedelta(days=i)).isoformat()
                                             for i in range((LAST - FIRST).days + 1)}
    assert {m.metadata["loaded_day"].value for m in loaded} == {LAST.isoformat()}
    assert {m.metadata["dagster/row_count"].value for m in loaded} == {delta_io.row_count(
        WINDOW_SNAPSHOT.path(lake), partition_filters=[("date", "=", LAST)])}
    checked = {e.partition: e for e in result.get_asset_check_evaluations() if e.check_name == CHECK}
    assert set(checked) == {(FIRST + timedelta(days=i)).isoformat() for i in range((LAST - FIRST).days + 1)}
    assert all(e.passed for e in checked.values())

    day = FIRST + timedelta(days=2)
    host_port_db = online.online.url.rsplit("/", 1)[0]
    fresh = dataclasses.replace(online, online=OnlineSpec(f"{host_port_db}/postgres", table="fresh_values"))
    alone = dg.materialize([*build_assets(fresh), build_online_check(fresh, ONLINE_VALUES, daily_partitions)],
                           selection=[ONLINE_VALUES], partition_key=day.isoformat(), resources=resources(root))
    assert alone.success
    snapshot = sorted(tuple(r) for r in delta_io.read_table(spark, WINDOW_SNAPSHOT.path(lake), partition_filters=[
        ("date", "=", day)]).select("key", "window", "as_of", "event_count", "count", "sum").collect())
    assert snapshot, f"the snapshot of {day} is empty: nothing to compare"
    served = sorted((r["key"], r["window"], r["as_of"].replace(tzinfo=None), r["event_count"], r["count"], r["sum"])
                    for key in sorted({key for key, *_ in snapshot})
                    for r in online_values.lookup(fresh.online, fresh, key))
    assert served == snapshot
    (evaluation,) = alone.get_asset_check_evaluations()
    assert evaluation.passed and evaluation.metadata["equal_rows"].value == len(snapshot)


def shown_by_day(result, node, asset) -> dict[str, dict]:
    """Each day's materialisation metadata of ``asset`` in the run, by partition."""
    return {m.partition: m.metadata for m in result.asset_materializations_for_node(node)
            if m.asset_key.to_user_string() == asset}


def test_a_range_run_records_each_days_own_counts(lakehouse, range_run, spark):
    """One run over the whole range: each day's ``dagster/row_count`` is the rows of that day's
    partition, counted here by Spark from the data, not the range's total."""
    lake = str(lakehouse[0] / "lakehouse")
    result, _ = range_run
    every_day = {(FIRST + timedelta(days=i)).isoformat() for i in range((LAST - FIRST).days + 1)}
    for node, table, column in [("ingest_events", EVENTS, "arrival_date"), ("ingest_events", QUARANTINE, "arrival_date"),
                                ("partials", MINUTE_PARTIALS, "event_date"),
                                ("sliding_windows", WINDOW_CHANGES, "date"), ("sliding_windows", WINDOW_SNAPSHOT, "date")]:
        stored = Counter({r[0].isoformat(): r[1] for r in delta_io.read_table(spark, table.path(lake))
                          .groupBy(column).count().collect()})
        shown = {day: m["dagster/row_count"].value for day, m in shown_by_day(result, node, table.name).items()}
        assert set(shown) == every_day, table.name
        assert shown == {day: stored[day] for day in every_day}, table.name
    events = shown_by_day(result, "ingest_events", "events")
    assert len({m["dagster/row_count"].value for m in events.values()}) > 1, "every day shows the same count"
    assert len({m["input_records"].value for m in events.values()}) > 1
    assert events[FIRST.isoformat()]["arrival_days"].value == f"{FIRST} .. {FIRST}"

    # each window day's own finality, by the watermark of the events when the run wrote
    newest = delta_io.read_table(spark, EVENTS.path(lake)).agg(F.max("event_time")).first()[0]
    watermark = newest.replace(tzinfo=UTC) - timedelta(seconds=CONFIG.max_out_of_orderness)
    for table in (WINDOW_CHANGES, WINDOW_SNAPSHOT):
        shown = shown_by_day(result, "sliding_windows", table.name)
        for day, m in shown.items():
            closes = datetime.combine(date.fromisoformat(day) + timedelta(days=1 + CONFIG.allowed_lateness_days),
                                      time(), UTC)
            assert m["final_once_watermark_passes"].value == closes.isoformat(), (table.name, day)
            assert m["final"].value == (watermark >= closes), (table.name, day)
            assert m["run_window_end_days"].value == f"{FIRST} .. {LAST}"  # the run's, named so
        assert len({m["final_once_watermark_passes"].value for m in shown.values()}) == len(shown)


def test_each_asset_page_lists_its_tables_columns(lakehouse, spark):
    """The column schema the UI shows is what the table holds, column for column (after the run
    above), and each column says what it means."""
    lake = str(lakehouse[0] / "lakehouse")
    specs = [spec for assets in build_assets(CONFIG) for spec in assets.specs]
    assert {s.key.to_user_string() for s in specs} == {t.name for t in ALL_TABLES} - {"late_events", "daily_partials", "spine_values",
                                                                                  "session_state", "count_state", "arrival_partials",
                                                                                  "interval_state"}
    for spec in specs:
        schema = spec.metadata["dagster/column_schema"]
        shown = [(c.name, c.type) for c in schema.columns]
        stored = [(f.name, f.dataType.simpleString())
                  for f in delta_io.read_table(spark, f"{lake}/{spec.key.to_user_string()}").schema.fields]
        assert shown == stored, spec.key
        assert all(c.description for c in schema.columns), spec.key
    late = delta_io.read_table(spark, LATE_EVENTS.path(lake)).schema  # a table, not an asset
    assert [(f.name, f.dataType.simpleString()) for f in late.fields] == declared_columns(LATE_EVENTS.name, CONFIG)


def test_materialising_a_partition_twice_gives_identical_tables(lakehouse, spark):
    root, _ = lakehouse
    lake = str(root / "lakehouse")
    day = (FIRST + timedelta(days=1)).isoformat()

    def contents():
        return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lake)).collect())
                for t in (EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)}

    before = contents()
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(2):
        result = dg.materialize(build_assets(CONFIG), resources=resources(root), instance=instance,
                                partition_key=day)
        assert result.success
        assert contents() == before
    snapshot_metadata = [m for m in result.asset_materializations_for_node("sliding_windows")
                         if m.asset_key.to_user_string() == "window_snapshot"][0].metadata
    assert snapshot_metadata["baseline"].value == {"2d": "snapshot"}
    assert snapshot_metadata["run_window_end_days"].value == f"{day} .. {day}"


def test_a_day_materialised_as_hourly_partitions_gives_the_tables_of_its_daily_run(lakehouse, spark):
    """``partition: 1h``: the day's hours in three runs (a range of 13 hours, one hour, the rest),
    each a part run of every job (``assets.partitions.runs_of``), leave the daily run's tables;
    every ERROR check passes on every hour, judging the day up to the run's last hour."""
    root, _ = lakehouse
    lake = str(root / "lakehouse")
    day = FIRST + timedelta(days=1)

    def contents():
        return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lake)).collect())
                for t in (EVENTS, QUARANTINE, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)}

    daily = dg.materialize(build_assets(CONFIG), resources=resources(root), partition_key=day.isoformat())
    before = contents()
    hourly = dataclasses.replace(CONFIG, partition=3600)
    instance = dg.DagsterInstance.ephemeral()
    checks = build_asset_checks(hourly, partitions_of(hourly))
    for first, last in ((0, 12), (13, 13), (14, 23)):
        result = dg.materialize([*build_assets(hourly), *checks], resources=resources(root), instance=instance,
                                tags={"dagster/asset_partition_range_start": f"{day}-{first:02d}:00",
                                      "dagster/asset_partition_range_end": f"{day}-{last:02d}:00"})
        assert result.success
        log = [entry.user_message for entry in instance.all_logs(result.run_id)]
        until = f"{day + timedelta(days=1)}T00:00:00" if last == 23 else f"{day}T{last + 1:02d}:00:00"
        assert f"sliding_windows {day}T{first:02d}:00:00 .. {until}: started" in log
        judged = f"{day} .. {day}" + ("" if last == 23 else f" up to {last + 1:02d}:00")
        assert f"events_checks {judged}: started" in log
        assert any(m.endswith("a small input, Spark's expressions evaluated without generated code")
                   for m in log if m.startswith(f"sliding_windows {day}T{first:02d}:00:00"))
        evaluations = result.get_asset_check_evaluations()
        failed = [(e.asset_key.to_user_string(), e.check_name, e.partition) for e in evaluations
                  if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]
        assert not failed  # (WARN ones may: the values are signed, so sums_non_negative warns)
        assert {e.partition for e in evaluations} == {f"{day}-{h:02d}:00" for h in range(first, last + 1)}
    # the run closing the day judges it whole: the parts' newest counts add up to the daily run's
    reported = {e.metadata["reported"].value["input_records"] for e in evaluations
                if e.check_name == "input_records_reconcile"}
    assert reported == {shown_by_day(daily, "ingest_events", "events")[day.isoformat()]["input_records"].value}
    assert contents() == before
    windows = [m for m in result.asset_materializations_for_node("sliding_windows")
               if m.asset_key.to_user_string() == "window_changes"]
    assert sorted(m.partition for m in windows) == [f"{day}-{h:02d}:00" for h in range(14, 24)]
    assert {m.metadata["final_once_watermark_passes"].value for m in windows} == {
        f"{day + timedelta(days=1 + CONFIG.allowed_lateness_days)}T00:00:00+00:00"}  # each hour's, its day's
    # a lateness below a day closes each hour's change points 30 hours after the hour; its snapshot
    # stays the day's
    by_the_hour = dataclasses.replace(hourly, allowed_lateness=30 * 3600)
    result = dg.materialize(build_assets(by_the_hour), resources=resources(root), instance=instance,
                            selection=dg.AssetSelection.assets("window_changes", "window_snapshot"),
                            tags={"dagster/asset_partition_range_start": f"{day}-20:00",
                                  "dagster/asset_partition_range_end": f"{day}-23:00"})
    closing = {m.asset_key.to_user_string(): {m.partition: m.metadata["final_once_watermark_passes"].value}
               for m in result.asset_materializations_for_node("sliding_windows") if m.partition.endswith("21:00")}
    assert closing == {"window_changes": {f"{day}-21:00": f"{day + timedelta(days=2)}T04:00:00+00:00"},
                       "window_snapshot": {f"{day}-21:00": f"{day + timedelta(days=2)}T06:00:00+00:00"}}
    assert contents() == before


def test_a_table_source_materialised_as_hourly_partitions_reconciles_each_part(tmp_path, spark):
    """``partition: 1h`` over a table source: each run ingests the rows that arrived in its hours
    (an id repeated in a later hour is a duplicate of the earlier copy), reports their counts
    per hour, and its events checks recount the table's rows up to its end: every ERROR check
    passes, and the day holds each id once, in the hour it first arrived."""
    day = FIRST + timedelta(days=1)
    start = datetime.combine(day, time(), UTC)
    rows = [(f"u{i % 7}", start + timedelta(minutes=7 * i), i % 5, f"id{i % 150}",
             start + timedelta(minutes=7 * i + 3)) for i in range(200)]  # ids 0..49 again from 17:30
    table = str(tmp_path / "clicks")
    spark.createDataFrame(rows, "user_id string, ts timestamp, value bigint, click_id string, loaded_at timestamp"
                          ).write.parquet(table)
    source = SourceSpec(path=table, time="ts", arrival="loaded_at", id="click_id")
    hourly = dataclasses.replace(CONFIG, source=source, partition=3600)
    lake = tmp_path / "lakehouse"
    instance = dg.DagsterInstance.ephemeral()
    ingest = dg.AssetSelection.assets("events", "quarantine")
    checks = [c for c in build_asset_checks(hourly, partitions_of(hourly))
              if any(k.asset_key.to_user_string() == "events" for k in c.check_keys)]
    for first, last in ((0, 16), (17, 23)):
        result = dg.materialize([*build_assets(hourly), *checks], resources=resources(tmp_path),
                                instance=instance, selection=ingest,
                                tags={"dagster/asset_partition_range_start": f"{day}-{first:02d}:00",
                                      "dagster/asset_partition_range_end": f"{day}-{last:02d}:00"})
        assert result.success
        evaluations = result.get_asset_check_evaluations()
        assert {e.check_name for e in evaluations} >= {"input_records_reconcile"}
        assert all(e.passed for e in evaluations), [e.metadata for e in evaluations if not e.passed]
        reported = next(e for e in evaluations if e.check_name == "input_records_reconcile").metadata
        assert reported["reported"].value["input_records"] == sum(r[4] < start + timedelta(hours=last + 1)
                                                                  for r in rows)
    events = delta_io.read_table(spark, EVENTS.path(str(lake))).select("event_id", "arrival_part").collect()
    first_hour = {f"id{i}": datetime.combine(day, time((7 * i + 3) // 60)) for i in range(150)}
    assert {r.event_id: r.arrival_part for r in events} == first_hour


@pytest.mark.parametrize("overtaken, attempts, succeeds", [(1, 2, True), (3, 3, False)])
def test_a_step_another_run_overtook_is_run_again(lakehouse, spark, monkeypatch, overtaken, attempts, succeeds):
    """Another run replaced the same days while the step ran, so its commit was refused
    (``ConcurrentWriteError``): Dagster runs the step again, up to twice more."""
    root, _ = lakehouse
    commits = []
    write = delta_write.replace_partitions_routed

    def overtaken_at_first(*args, **kwargs):
        commits.append(1)
        if len(commits) <= overtaken:
            raise errors.ConcurrentWriteError("window_changes: partitions ['date=...'] replaced meanwhile")
        return write(*args, **kwargs)

    monkeypatch.setattr(delta_write, "replace_partitions_routed", overtaken_at_first)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(build_assets(CONFIG), resources=resources(root), instance=instance,
                            partition_key=(FIRST + timedelta(days=2)).isoformat(),
                            selection=[WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name], raise_on_error=False)
    assert result.success is succeeds
    assert len(commits) == attempts
    retries = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert len(retries) == min(overtaken, attempts - 1)
    log = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert any("replaced meanwhile; running the step again on the newer tables" in line for line in log)
