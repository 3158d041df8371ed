"""The production instance (instance/dagster-postgres.yaml) against a real PostgreSQL server
of the module's own (``tests/postgres_server.py``)."""

import shutil
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.scheduler.instigation import InstigatorType, TickData, TickStatus

from tests.postgres_server import new_database, server_or_skip

SHIPPED = Path(__file__).parents[2] / "instance" / "dagster-postgres.yaml"


@pytest.fixture(scope="module")
def postgres():
    with server_or_skip() as server:
        yield server


@pytest.fixture
def instance_home(postgres, tmp_path, monkeypatch):
    """A DAGSTER_HOME holding the shipped PostgreSQL dagster.yaml, its variables set, and a
    database of its own."""
    host, port, user = postgres
    database = new_database(host, port, user, "dagster")
    for name, value in {"DAGSTER_PG_HOST": host, "DAGSTER_PG_PORT": str(port), "DAGSTER_PG_USERNAME": user,
                        "DAGSTER_PG_PASSWORD": "", "DAGSTER_PG_DB": database}.items():
        monkeypatch.setenv(name, value)
    shutil.copy(SHIPPED, tmp_path / "dagster.yaml")
    return tmp_path


def test_runs_events_backfills_and_sensor_ticks_are_kept_in_postgres(instance_home):
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

    @dg.asset(partitions_def=dg.DailyPartitionsDefinition(start_date="2025-01-27"))
    def day_of_events() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={"dagster/row_count": 3})

    with dg.DagsterInstance.from_config(str(instance_home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        result = dg.materialize([day_of_events], instance=instance, partition_key="2025-01-28")
        assert result.success
        graph = dg.Definitions(assets=[day_of_events]).resolve_asset_graph()
        instance.add_backfill(PartitionBackfill.from_asset_partitions(
            backfill_id="panesbackfill", asset_graph=graph, partition_names=["2025-01-27", "2025-01-28"],
            asset_selection=[day_of_events.key], backfill_timestamp=time.time(), tags={},
            dynamic_partitions_store=instance, all_partitions=False, title="demo days", description=None,
            run_config=None))
        instance.create_tick(TickData(
            instigator_origin_id="landing_sensor_origin", instigator_name="landing_sensor",
            instigator_type=InstigatorType.SENSOR, status=TickStatus.SKIPPED, timestamp=time.time(),
            skip_reason="no new or changed landing folders", selector_id="landing_sensor_selector"))

    # a second instance, as the webserver or the daemon opens it, reads them back from the server
    with dg.DagsterInstance.from_config(str(instance_home)) as instance:
        (run,) = instance.get_runs()
        assert run.run_id == result.run_id and run.status == dg.DagsterRunStatus.SUCCESS
        (record,) = instance.fetch_materializations(day_of_events.key, limit=10).records
        assert record.partition_key == "2025-01-28"
        assert record.asset_materialization.metadata["dagster/row_count"].value == 3
        (backfill,) = instance.get_backfills()
        assert (backfill.backfill_id, backfill.status, backfill.title) == \
            ("panesbackfill", BulkActionStatus.REQUESTED, "demo days")
        (tick,) = instance.get_ticks("landing_sensor_origin", "landing_sensor_selector")
        assert (tick.status, tick.skip_reason) == (TickStatus.SKIPPED, "no new or changed landing folders")
