"""The checks under Dagster, end to end: per-partition results, blocking, and bad input.

One module-scoped run materialises two demo days with every check, the second day's landing
folder salted with every kind of bad input; the tests read that one run. A second, one-day run
with a deliberately broken partials job shows a blocking check stopping what is downstream.
"""

import gzip
import json

import dagster as dg
import pytest
from pyspark.sql import functions as F

from expectations.catalog import ERROR, WARN, catalog
from jobs.storage import delta_io
from jobs.tables import EVENTS, QUARANTINE
from orchestration.definitions import build_definitions
from orchestration.demo_events import generate_demo_events
from tests.expectations.frames import DAY, NEXT
from windowing_core.aggregations import aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec

FIRST, LAST = DAY, NEXT
CONFIG = PipelineConfig(
    windows=(WindowSpec.of("1d", "1d", "30m"), WindowSpec.of("6h", "6h", emit="final"),
             # the window kinds of issue 28: the checks hold for them too
             WindowSpec.of("all_keys", "1d", "30m", keyed=False), WindowSpec.of("today", "1d", step="2h"),
             WindowSpec.of("odd", "50m", "20m", offset="-8h", emit="final")),
    aggregations=(aggregation("count"), aggregation("sum")),  # the rest are covered by the tables' own tests
    where="value < 5",  # the checks count what a row filter leaves out
)

GOOD_RECORD = {"user_id": "bad-day-user", "timestamp": f"{NEXT}T12:00:00Z", "event_id": "fine-1"}
BAD_LINES = {  # one line each, in bad.json; the reason each must be quarantined with
    "malformed_json": ['{"user_id": "u1", "timestamp": ', "<html>502 Bad Gateway</html>"],
    "missing_key": [json.dumps({"user_id": None, "timestamp": f"{NEXT}T10:00:00Z"}),
                    json.dumps({"timestamp": f"{NEXT}T10:00:00Z", "value": 2})],
    "value_not_numeric": [json.dumps({"user_id": "u1", "timestamp": f"{NEXT}T10:00:00Z", "value": "abc"})],
    "value_not_integer": [json.dumps({"user_id": "u1", "timestamp": f"{NEXT}T10:00:00Z", "value": 2.5})],
    "unparseable_timestamp": [json.dumps({"user_id": "u1", "timestamp": "next tuesday"})],
    "timestamp_out_of_range": [json.dumps({"user_id": "u1", "timestamp": "2999-01-01T00:00:00Z"}),
                               json.dumps({"user_id": "u1", "timestamp": "1969-07-20T20:17:00Z"})],
}
DUPLICATES = [  # the same event_id with different payloads: accepted once, one duplicate
    json.dumps({"user_id": "dup-user", "timestamp": f"{NEXT}T09:00:00Z", "event_id": "dup-1", "value": 1}),
    json.dumps({"user_id": "dup-user", "timestamp": f"{NEXT}T09:00:00Z", "event_id": "dup-1", "value": 5}),
]


def salt_with_bad_input(folder):
    """Every kind of bad input the issue lists, in one arrival day's folder."""
    lines = [line for group in BAD_LINES.values() for line in group] + DUPLICATES
    (folder / "bad.json").write_text("\n".join(lines) + "\n")
    (folder / "empty.json").write_bytes(b"")
    whole = gzip.compress(("\n".join(json.dumps({**GOOD_RECORD, "event_id": f"t{i}"}) for i in range(400))
                           + "\n").encode())
    (folder / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "not-gzip.json.gz").write_bytes(b'{"user_id": "u1"}\n')
    latin1 = json.dumps({**GOOD_RECORD, "user_id": "jos\u00e9", "event_id": "l1"}, ensure_ascii=False)
    (folder / "latin1.json").write_bytes((latin1 + "\n").encode("latin-1"))
    utf16 = "\n".join(json.dumps({**GOOD_RECORD, "event_id": f"w{i}"}) for i in range(2)) + "\n"
    (folder / "utf16.json").write_bytes(utf16.encode("utf-16"))


def resources_for(root):
    return build_definitions(CONFIG, landing_root=str(root / "landing"),
                             lakehouse_root=str(root / "lakehouse"), spark_master="local[2]")


def run_range(defs, first, last, instance):
    return defs.resolve_job_def("daily_pipeline").execute_in_process(
        instance=instance, raise_on_error=False,
        tags={"dagster/asset_partition_range_start": first.isoformat(),
              "dagster/asset_partition_range_end": last.isoformat()})


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    root = tmp_path_factory.mktemp("checks")
    generate_demo_events(root / "landing", start=FIRST, days=2, events_per_day=1000, keys=40, seed=11)
    salt_with_bad_input(root / "landing" / NEXT.isoformat())
    return root


@pytest.fixture(scope="module")
def materialised(landing, spark):
    instance = dg.DagsterInstance.ephemeral()
    defs = resources_for(landing)
    result = run_range(defs, FIRST, LAST, instance)
    return defs, result, instance


def evaluations(result):
    return {(e.asset_key.to_user_string(), e.check_name, e.partition): e
            for e in result.get_asset_check_evaluations()}


def test_every_check_is_defined_next_to_its_asset(materialised):
    defs, _, _ = materialised
    graph = defs.resolve_asset_graph()
    defined = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert {(c.table, c.name) for c in catalog(CONFIG)} <= defined
    for check in catalog(CONFIG):
        spec = graph.get_check_spec(dg.AssetCheckKey(dg.AssetKey(check.table), check.name))
        assert spec.blocking == (check.severity == ERROR), check
        assert spec.partitions_def is not None, check
    for key in graph.asset_check_keys:  # one rule: a check's severity, its description and blocking agree
        spec = graph.get_check_spec(key)
        severity = spec.metadata.get("severity")
        assert severity in (ERROR, WARN) and spec.description.startswith(f"[{severity}] "), (key, spec.description)
        assert spec.blocking == (severity == ERROR), key


def test_a_range_run_evaluates_every_check_for_every_partition_and_error_checks_pass(materialised):
    _, result, _ = materialised
    found = evaluations(result)
    for check in catalog(CONFIG):
        for day in (FIRST, LAST):
            evaluation = found[(check.table, check.name, day.isoformat())]
            assert evaluation.metadata, f"{check.name} on {day} says nothing of what it looked at"
            if check.severity == ERROR:
                assert evaluation.passed, (check.table, check.name, day, evaluation.metadata)
        assert found[("minute_partials", "partials_count_accepted_events", day.isoformat())].metadata[
            "filtered_out"].value > 0
    assert result.success


def test_evaluations_are_recorded_per_partition_in_the_instance(materialised):
    _, _, instance = materialised
    key = dg.AssetCheckKey(dg.AssetKey("window_changes"), "changes_conserve_frames")
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    assert {(r.partition, r.status.value) for r in history} == {(FIRST.isoformat(), "SUCCEEDED"),
                                                                (LAST.isoformat(), "SUCCEEDED")}
    targets = [r.event.dagster_event.event_specific_data.target_materialization_data for r in history]
    assert all(t is not None for t in targets)  # each day's result points at that day's materialisation


def test_a_failing_warn_check_reports_but_does_not_block(materialised):
    _, result, _ = materialised
    found = evaluations(result)
    warned = found[("quarantine", "quarantine_share_below_limit", LAST.isoformat())]
    assert not warned.passed and warned.severity == dg.AssetCheckSeverity.WARN
    by_reason = warned.metadata["by_reason"].value
    assert {"truncated_gzip", "unreadable_file", "bad_encoding", *BAD_LINES} <= set(by_reason)
    assert found[("quarantine", "quarantine_share_below_limit", FIRST.isoformat())].passed
    materialised_days = {m.partition for m in result.get_asset_materialization_events()
                         if m.asset_key == dg.AssetKey("window_changes")}
    assert materialised_days == {FIRST.isoformat(), LAST.isoformat()}


def test_bad_input_every_record_ends_in_exactly_one_table_with_a_reason(materialised, landing, spark):
    _, result, _ = materialised
    lake = str(landing / "lakehouse")
    day = [("arrival_date", "in", [LAST.isoformat()])]
    quarantine = delta_io.read_table(spark, QUARANTINE.path(lake), partition_filters=day)
    per_file = {(r["file"], r["reason"]): r["n"] for r in quarantine.groupBy(
        F.regexp_extract("source_file", r"([^/]+)$", 1).alias("file"), "reason").count()
        .withColumnRenamed("count", "n").collect()}
    from_bad_json = {reason: n for (file, reason), n in per_file.items() if file == "bad.json"}
    assert from_bad_json == {reason: len(lines) for reason, lines in BAD_LINES.items()}
    assert per_file[("truncated.json.gz", "truncated_gzip")] == 1  # the file is one record
    assert per_file[("not-gzip.json.gz", "unreadable_file")] == 1
    assert per_file[("latin1.json", "bad_encoding")] == 1
    assert per_file[("utf16.json", "bad_encoding")] == 3  # split on its 0x0A bytes: 2 lines and a stray NUL
    assert not [f for f, _ in per_file if f == "empty.json"]
    truncated = quarantine.where(F.col("reason") == "truncated_gzip").first()
    assert truncated["raw"] is None  # no line of a truncated file is trusted

    events = delta_io.read_table(spark, EVENTS.path(lake), partition_filters=day)
    assert events.where(F.col("event_id") == "dup-1").count() == 1  # the duplicate payload counted once
    assert events.where(F.col("source_file").rlike("(truncated|utf16|latin1)")).count() == 0

    report = {m.asset_key.to_user_string(): m.metadata
              for m in result.asset_materializations_for_node("ingest_events")
              if m.partition == LAST.isoformat()}["events"]
    assert report["reconciles"].value is True
    assert report["duplicates"].value >= 1
    reconciled = evaluations(result)[("events", "input_records_reconcile", LAST.isoformat())]
    assert reconciled.passed, reconciled.metadata


def test_a_failing_blocking_check_stops_downstream_assets_in_the_same_run(landing, spark, monkeypatch,
                                                                          tmp_path):
    """A partials job that double counts: its ERROR check fails, and the windows never run."""
    import jobs.minute_partials as partials_job

    original = partials_job.to_partials
    def double_counting(events, config):
        return original(events, config).withColumn("event_count", F.col("event_count") * 2)

    monkeypatch.setattr(partials_job, "to_partials", double_counting)
    root = tmp_path
    (root / "landing").symlink_to(landing / "landing")
    defs = resources_for(root)
    result = run_range(defs, FIRST, FIRST, dg.DagsterInstance.ephemeral())

    assert not result.success
    found = evaluations(result)
    failed = found[("minute_partials", "partials_count_accepted_events", FIRST.isoformat())]
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR and failed.blocking
    assert failed.metadata["difference"].value > 0
    assert found[("events", "input_records_reconcile", FIRST.isoformat())].passed
    materialised_assets = {m.asset_key.to_user_string() for m in result.get_asset_materialization_events()}
    assert "minute_partials" in materialised_assets
    assert not materialised_assets & {"window_changes", "window_snapshot"}
    assert not [k for k in found if k[0] in ("window_changes", "window_snapshot")]


def test_checks_without_a_partition_range_cover_one_day(materialised, landing):
    """A check run alone for one partition, as from the UI, evaluates that day only."""
    defs, _, instance = materialised
    keys = [dg.AssetCheckKey(dg.AssetKey(c.table), c.name) for c in catalog(CONFIG)
            if c.table == "window_snapshot"]
    job = dg.define_asset_job("window_checks", selection=dg.AssetSelection.checks(*keys))
    resolved = dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def("window_checks")
    result = resolved.execute_in_process(instance=instance, tags={"dagster/partition": LAST.isoformat()},
                                         raise_on_error=False)
    assert result.success
    assert {e.partition for e in result.get_asset_check_evaluations()} == {LAST.isoformat()}
    errors = [e for e in result.get_asset_check_evaluations() if e.severity == dg.AssetCheckSeverity.ERROR]
    assert errors and all(e.passed for e in errors)
