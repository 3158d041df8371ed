"""The production instance (instance/dagster-postgres.yaml) against a real PostgreSQL server.

The test starts its own server: Debian's ``postgresql`` package (``.ci/run`` installs it where
it is missing), a cluster made by ``initdb`` in a temporary folder, listening on a free loopback
port. PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.scheduler.instigation import InstigatorType, TickData, TickStatus

SHIPPED = Path(__file__).parents[2] / "instance" / "dagster-postgres.yaml"


def postgres_bin() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: on PATH, or in Debian's versioned folder."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of its own: (host, port, user); stopped and removed afterwards."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql)")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="panes-pg-"))
    if os.geteuid() == 0:  # the server refuses root
        try:
            postgres_user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        os.chown(folder, postgres_user.pw_uid, postgres_user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port, user = folder / "data", free_port(), "panes"

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, text=True, cwd=folder)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60",
        "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start")
    try:
        yield "127.0.0.1", port, user
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def instance_home(postgres, tmp_path, monkeypatch):
    """A DAGSTER_HOME holding the shipped PostgreSQL dagster.yaml, its variables set, and a
    database of its own."""
    import psycopg2

    host, port, user = postgres
    database = f"dagster_{int(time.time() * 1000)}"
    connection = psycopg2.connect(host=host, port=port, user=user, dbname="postgres")
    try:
        connection.autocommit = True  # CREATE DATABASE runs outside a transaction
        connection.cursor().execute(f"CREATE DATABASE {database}")
    finally:
        connection.close()
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
