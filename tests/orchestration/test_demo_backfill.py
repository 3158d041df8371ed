"""The demo's range as a user launches it from the UI: a backfill of daily_pipeline, its one run in the code location."""

import os
import shutil
import time
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from bench.demo_timeline import timeline
from orchestration import demo
from orchestration.backfill import BACKFILL_TAG

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo_environment(tmp_path, monkeypatch):
    """A fresh instance and working folder; the variables the demo sets are restored after."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "instance" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.chdir(tmp_path)
    for name in ("PANES_START_DATE", "PANES_END_DATE", "PANES_CONFIG", "PANES_LANDING", "PANES_LAKEHOUSE"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("PANES_SPARK_MASTER", "local[2]")
    (tmp_path / "defaults.yaml").write_text("# the defaults: one 7-day window, count and sum\n{}\n")
    return tmp_path


def test_the_demo_launches_one_backfill_whose_one_run_belongs_to_the_code_location(demo_environment):
    started = time.time()
    code = demo.main(["--days", "2", "--events-per-day", "200", "--keys", "20", "--config", "defaults.yaml"])
    ended = time.time()
    assert code == 0
    instance = dg.DagsterInstance.get()
    runs = instance.get_runs()
    # one run: a range is one run, and the landing sensor left the days the backfill ingests alone
    assert len(runs) == 1, [(r.run_id, r.tags) for r in runs]
    run = runs[0]
    assert run.status == dg.DagsterRunStatus.SUCCESS
    # launched in the code location: the UI's run lists and timeline find it by this origin
    assert run.remote_job_origin is not None and run.remote_job_origin.location_name == "panes"
    assert run.tags["dagster/code_location"] == "panes"
    first, last = "2025-01-27", run.tags["dagster/asset_partition_range_end"]
    assert (run.tags["dagster/asset_partition_range_start"], date.fromisoformat(last) > date(2025, 1, 28)) \
        == (first, True), "the demo's arrival days run past its event days"
    backfill = instance.get_backfill(run.tags[BACKFILL_TAG])
    assert backfill is not None and backfill.status.value == "COMPLETED_SUCCESS"
    assert run.job_name == "daily_pipeline", "the job's page lists it"
    lake = demo_environment / "lakehouse"
    arrival_days = sorted(p.name for p in (lake / "events").iterdir() if p.name.startswith("arrival_date="))
    assert arrival_days == [f"arrival_date=2025-01-{d}" for d in range(27, int(last[-2:]) + 1)]
    # the demo read its check results back from that run (exit 0: every ERROR check passed every day)
    checks = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
    days = {r.event_log_entry.dagster_event.event_specific_data.partition for r in checks}
    assert {p.name.removeprefix("arrival_date=") for p in (lake / "events").iterdir()
            if p.name.startswith("arrival_date=")} <= days
    # the benchmark's timeline of it: the instance's marks in the order the demo makes them
    parts, events = timeline(Path(os.environ["DAGSTER_HOME"]), started, ended)
    assert all(p.seconds >= 0 for p in parts), [(p.what, p.seconds) for p in parts]
    assert events["ASSET_CHECK_EVALUATION"] == len(checks)
    assert f"the {len(instance.get_run_step_stats(run.run_id))} steps" in parts[3].what
