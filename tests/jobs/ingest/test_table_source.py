"""A table of events as the source (``source:``): its rows through the whole pipeline equal the
oracle's, with the landing lines' rules, and what does not fit is quarantined with a reason."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

import dagster as dg
import pytest

from jobs import cli, ingest_events, minute_partials, sliding_windows
from jobs.tables import EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES
from orchestration.definitions import build_definitions
from tests.jobs.test_pipeline_against_oracle import (
    EVENT_DAYS,
    FIRST,
    SOME_TYPED_AGGREGATIONS,
    TYPED_FIELDS,
    _rows,
    assert_rows_equal,
    expected_changes,
)
from tests.landing import random_landing
from windowing_core import reference
from windowing_core.config import PipelineConfig
from windowing_core.source import SourceSpec
from windowing_core.window_spec import WindowSpec

SCHEMA = ("user_id string, ts timestamp, click_id string, loaded_at timestamp, amount decimal(12,2), "
          "latency double, clicks bigint, page string, ok boolean, unrelated string")
BAD_ROWS = [  # one of each: its reason
    ((None, "2025-01-28 10:00:00", "bad-1", "2025-01-28 11:00:00"), "missing_key"),
    (("k1", None, "bad-2", "2025-01-28 11:00:00"), "missing_timestamp"),
    (("k1", "2025-01-29 10:00:00", "bad-3", "2025-01-28 11:00:00"), "timestamp_out_of_range"),  # after its arrival
]


def table_rows(events):
    """One row per landed record, arriving on its landing day (a copy re-sent on a later day
    carries its first arrival_time: its row's arrival is moved to the day it landed). Of the
    copies of one id on one arrival day with different values only the oracle's winner stays
    (a table has no file order to break that tie; the tie-break itself is the landing tests')."""
    events = [replace(e, arrival_time=datetime.combine(e.arrival_date, e.arrival_time.timetz()))
              for e in events]
    winners = {}
    for e in sorted(events, key=lambda e: (e.source_file, e.raw)):
        winners.setdefault((e.arrival_date, e.event_id), e)
    kept = [e for e in events if winners[(e.arrival_date, e.event_id)].raw == e.raw]
    rows = [(e.key, e.event_time, json.loads(e.raw).get("event_id"), e.arrival_time,
             *(e.field(name) for name, _ in TYPED_FIELDS), "ignored") for e in kept]
    return kept, rows


def test_a_table_source_goes_through_the_pipeline_as_the_oracle_says(spark, tmp_path):
    """Parquet files without a Delta log (a Delta table or a catalog table is read as the spine's
    are: ``jobs.named_tables``)."""
    landing = random_landing(tmp_path / "landing", 31, FIRST, EVENT_DAYS, fields=dict(TYPED_FIELDS))
    events, rows = table_rows(landing.events)
    bad = [(k, t and datetime.fromisoformat(t), i, datetime.fromisoformat(a), None, None, None, None, None, "x")
           for (k, t, i, a), _ in BAD_ROWS]
    source = tmp_path / "clicks"
    spark.createDataFrame(rows + bad, SCHEMA).write.parquet(str(source))
    config = PipelineConfig(
        windows=(WindowSpec.of("1d", "1d", "10m"), WindowSpec.of("3h", "3h", "1h", emit="final")),
        aggregations=SOME_TYPED_AGGREGATIONS, fields=TYPED_FIELDS,
        source=SourceSpec(path=str(source), time="ts", arrival="loaded_at", id="click_id"))
    lakehouse = str(tmp_path / "lakehouse")
    last_arrival = FIRST + timedelta(days=EVENT_DAYS - 1 + 3)
    window_days = (FIRST, FIRST + timedelta(days=EVENT_DAYS + 1))

    ingest = ingest_events.ingest(spark, None, lakehouse, FIRST, last_arrival, config)
    minute_partials.run(spark, lakehouse, FIRST, FIRST + timedelta(days=EVENT_DAYS - 1), config)
    sliding_windows.run(spark, lakehouse, *window_days, config)

    read = [e for e in events if e.arrival_date <= last_arrival]
    assert ingest.reconciles and ingest.input_records == len(read) + len(BAD_ROWS)
    quarantined = _rows(spark, QUARANTINE.path(lakehouse), "raw", "reason", "source_file")
    assert sorted(reason for _, reason, _ in quarantined) == sorted(reason for _, reason in BAD_ROWS)
    assert {s for *_, s in quarantined} == {str(source)}

    partials = _rows(spark, MINUTE_PARTIALS.path(lakehouse), "key", "frame_start", "event_count",
                     *[a.name for a in config.aggregations], config=config)
    expected = sorted((key, frame.replace(tzinfo=None), count, *values)
                      for day in range(EVENT_DAYS)
                      for (key, frame), (count, values) in reference.minute_partials(
                          events, config, FIRST + timedelta(days=day)).items())
    assert_rows_equal(partials, expected, config, lead=3)
    changes = _rows(spark, WINDOW_CHANGES.path(lakehouse), "key", "window", "window_end",
                    *[a.name for a in config.aggregations])
    assert_rows_equal(changes, expected_changes(events, config, *window_days), config, lead=3)


def test_each_column_is_checked_against_its_declared_type_as_a_json_value_would_be(spark, tmp_path):
    """A double column feeding a long field: 4.0 is the long 4, 1.5 is quarantined; a whole-number
    key is text; the arrival is a date column the table is partitioned by. Materialised through
    Dagster, whose checks recount the day's input records from the table."""
    source = str(tmp_path / "clicks")
    spark.createDataFrame([(7, "2025-01-28 10:00:00", 4.0, "2025-01-28"), (8, "2025-01-28 10:01:00", 1.5, "2025-01-28"),
                           (9, "2025-01-29 10:02:00", 2.0, "2025-01-29")],
                          "user_id bigint, ts string, clicks double, day string").selectExpr(
        "user_id", "cast(ts as timestamp) as ts", "clicks", "cast(day as date) as day").write.partitionBy(
        "day").parquet(source)
    config = PipelineConfig.from_dict({"fields": {"clicks": "long"},
                                       "source": {"path": source, "time": "ts", "arrival": "day"}})
    lakehouse = str(tmp_path / "lakehouse")
    # Through Dagster, as a user materialises it: ingest of the day, and the checks of events and
    # quarantine, which recount the input from the table
    defs = build_definitions(config, landing_root=str(tmp_path / "no-landing"), lakehouse_root=lakehouse,
                             spark_master="local[2]")
    run = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        asset_selection=[dg.AssetKey(EVENTS.name), dg.AssetKey(QUARANTINE.name)], partition_key=FIRST.isoformat(),
        instance=dg.DagsterInstance.ephemeral())
    assert run.success
    checks = {e.check_name: e for e in run.get_asset_check_evaluations()}
    assert checks["input_records_reconcile"].passed, checks["input_records_reconcile"].metadata
    assert checks["input_records_reconcile"].metadata["this_day"].value["input_records"] == 2  # not the 29th
    assert all(e.passed for e in checks.values() if e.severity == dg.AssetCheckSeverity.ERROR)
    assert _rows(spark, EVENTS.path(lakehouse), "key", "clicks") == [("7", 4)]
    assert _rows(spark, QUARANTINE.path(lakehouse), "reason") == [("clicks_not_integer",)]


@pytest.fixture(scope="module")
def small_table(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("source") / "clicks"
    spark.createDataFrame([("k1", "2025-01-28T10:00:00Z")], "user_id string, ts string").write.parquet(str(path))
    return str(path)


@pytest.mark.parametrize("source, fields, code, message", [
    ({"time": "ts", "arrival": "ts_arrived"}, None, cli.EXIT_BAD_ARGUMENTS,
     "bad configuration: source: {path} has no column ts_arrived (its columns: user_id, ts)"),
    ({"time": "ts"}, {"amount": "long"}, cli.EXIT_BAD_ARGUMENTS,
     "bad configuration: source: {path} has no column amount (its columns: user_id, ts)"),
    ({"time": "ts"}, None, cli.EXIT_BAD_ARGUMENTS,
     "bad configuration: source.time: column 'ts' of {path} is string, not a timestamp or a date "
     "(name an arrival column to read it as text)"),
    ({"time": "ts", "path": "/nowhere/clicks"}, None, cli.EXIT_MISSING_INPUT,
     "source: no table at /nowhere/clicks"),
])
def test_a_source_the_ingest_cannot_read_is_one_line(small_table, tmp_path, capsys, source, fields, code, message):
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"source": {"path": small_table, **source},
                                  **({"fields": fields, "value_field": "amount"} if fields else {})}))
    argv = ["--lakehouse", str(tmp_path / "lake"), "--date", "2025-01-28", "--config", str(config)]
    assert ingest_events.main(argv) == code
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        f": error: {message.format(path=source.get('path', small_table))}")
