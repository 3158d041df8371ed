"""Beyond one machine, the jobs give the tables a local run gives.

On a standalone cluster: a master and one worker run on loopback from the pyspark package
alone, and the jobs go to them with spark-submit and ``--py-files``, as on any cluster: driver
and executors are separate JVMs, the Python workers import panes from the shipped archive, and
the Delta writes run on the executors and commit on the driver. Through Spark Connect: the jobs
run as their own command lines, and Dagster materialises every asset and check, with
``SPARK_REMOTE`` pointing at a Connect server, so the client holds no JVM and every query, the
Python data source's writes included, runs there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pyspark
import pytest

from jobs.ingest import landing_files
from jobs.runtime import jvm_packages
from jobs.runtime.spark_session import STATIC_SQL, SPARK_DEFAULTS
from jobs.storage import delta_io
from jobs.tables import EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from tests.postgres_server import free_port
from expectations.catalog import ERROR, catalog
from windowing_core.config import PipelineConfig

REPO = Path(__file__).resolve().parents[2]
SPARK_HOME = os.path.dirname(pyspark.__file__)
FIRST, EVENT_DAYS = date(2025, 1, 28), 3
LAST_ARRIVAL = FIRST + timedelta(days=EVENT_DAYS + 2)
LAST_EVENT_DAY = FIRST + timedelta(days=EVENT_DAYS - 1)
STARTUP_SECONDS = 120
# Delta's jars as a user passes them where every node holds the same files (else: --jars)
JARS = ["--driver-class-path", jvm_packages.class_path(), "--conf", f"spark.executor.extraClassPath={jvm_packages.class_path()}"]
DELTA_SQL = [arg for key in STATIC_SQL for arg in ("--conf", f"{key}={SPARK_DEFAULTS[key]}")]


def _start(args: list[str], log: Path, ready: str, launcher: str = "spark-class") -> subprocess.Popen:
    python = sys.executable
    process = subprocess.Popen([f"{SPARK_HOME}/bin/{launcher}", *args], stdout=log.open("w"),
                               stderr=subprocess.STDOUT, cwd=log.parent,
                               env={**os.environ, "SPARK_HOME": SPARK_HOME, "PYSPARK_PYTHON": python})
    deadline = time.monotonic() + STARTUP_SECONDS
    while ready not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"{args[0]} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    return process


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    port = free_port()
    master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(free_port())], root / "master.log", "New state: ALIVE")
    try:
        worker = _start(["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
                         "--cores", "2", "--memory", "2g", "--work-dir", str(root / "work"),
                         "--webui-port", str(free_port())], root / "worker.log", "Successfully registered")
    except BaseException:
        master.kill()
        raise
    archive = root / "panes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for package in ("jobs", "windowing_core"):
            for source in (REPO / package).rglob("*.py"):
                z.write(source, source.relative_to(REPO))
    yield f"spark://127.0.0.1:{port}", archive
    for process in (worker, master):
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("connect")
    port = free_port()
    server = _start(["--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
                     "--driver-memory", "1g", "--conf", f"spark.connect.grpc.binding.port={port}",
                     "--conf", "spark.ui.enabled=false", *JARS, *DELTA_SQL, "spark-internal"],
                    root / "server.log", "Spark Connect server started", launcher="spark-submit")
    yield f"sc://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=30)


def tables(spark, lakehouse: str) -> dict[str, Counter]:
    return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
            for t in (EVENTS, QUARANTINE, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)}


def materialise_in_dagster(landing: Path, lakehouse: str, launch, session):
    """Every asset over the range in this process, with Dagster's own ``materialize``: the run's
    result and the user messages of its log."""
    import dagster as dg

    from assets import build_assets
    from assets.resources import LakehouseResource

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        build_assets(PipelineConfig()), instance=instance,
        resources={"pyspark": session(spark_config={"spark.master": "local[2]"}), "spark_launch": launch,
                   "lakehouse": LakehouseResource(landing_root=str(landing), lakehouse_root=lakehouse)},
        tags={"dagster/asset_partition_range_start": FIRST.isoformat(),
              "dagster/asset_partition_range_end": LAST_ARRIVAL.isoformat()})
    assert result.success
    return result, [e.user_message for e in instance.all_logs(result.run_id)]


@pytest.fixture(scope="module")
def local_run(spark, tmp_path_factory):
    """A landing folder, the tables every asset makes of it in this process (the tests' local
    session), and that run's result."""
    from dagster_pyspark import PySparkResource

    from assets.spark_launch import SparkLaunchResource

    root = tmp_path_factory.mktemp("local")
    landing = root / "landing"
    random_landing(landing, 13, FIRST, EVENT_DAYS)
    ensure_days(landing, FIRST, LAST_ARRIVAL)
    lakehouse = str(root / "lakehouse")
    result, _ = materialise_in_dagster(landing, lakehouse, SparkLaunchResource(), PySparkResource)
    expected = tables(spark, lakehouse)
    assert expected[WINDOW_CHANGES.name], "the case must produce change points"
    return landing, expected, result


def job_arguments(landing: Path, lakehouse: str) -> dict[str, list[str]]:
    def days(last: date) -> list[str]:
        return ["--lakehouse", lakehouse, "--date", FIRST.isoformat(), "--until", last.isoformat()]

    return {"ingest_events": ["--landing", str(landing), *days(LAST_ARRIVAL)],
            "minute_partials": days(LAST_EVENT_DAY), "sliding_windows": days(LAST_ARRIVAL)}


def test_the_daily_jobs_through_spark_connect_equal_a_local_run(spark, tmp_path, connect_server, local_run):
    landing, expected, _ = local_run
    through_connect = str(tmp_path / "through-connect")
    for job, args in job_arguments(landing, through_connect).items():
        done = subprocess.run([sys.executable, "-m", f"jobs.{job}", *args], capture_output=True, text=True,
                              timeout=600, cwd=REPO, env={**os.environ, "SPARK_REMOTE": connect_server})
        assert done.returncode == 0, done.stderr[-4000:]
        started = [line for line in done.stderr.splitlines() if line.startswith(f"jobs.{job} {FIRST} .. ")]
        assert started and started[0].endswith(": started"), started  # a Connect client: no Spark UI of its own
    assert "baseline: 7d bootstrap" in done.stdout
    assert tables(spark, through_connect) == expected


def materialise_every_asset_and_check(env: dict[str, str], timeout: int) -> None:
    """``dagster asset materialize`` of every asset over the range, as a user runs it: the run
    succeeds and no blocking check fails."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "asset", "materialize", "-m", "orchestration.definitions",
         "--select", "*", "--partition-range", f"{FIRST}...{LAST_ARRIVAL}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    assert " - RUN_SUCCESS - " in done.stderr
    evaluations = [line for line in done.stderr.splitlines() if " - ASSET_CHECK_EVALUATION - " in line]
    blocking = {f"'{c.name}' on '{c.table}'" for c in catalog(PipelineConfig()) if c.severity == ERROR}
    failed = [line for line in evaluations if not line.endswith(" passed.")]
    assert evaluations and not [line for line in failed if any(check in line for check in blocking)], failed[:5]


def test_dagster_materialises_every_asset_and_check_through_spark_connect(spark, tmp_path, connect_server,
                                                                           local_run):
    """``dagster asset materialize`` of every asset over the range, its checks included, as a
    user runs it with ``SPARK_REMOTE`` set: the Definitions' Spark resource is a Connect client."""
    landing, expected, _ = local_run
    lakehouse = tmp_path / "lakehouse"
    (tmp_path / "home").mkdir()
    env = {**os.environ, "SPARK_REMOTE": connect_server, "PANES_LANDING": str(landing),
           "PANES_LAKEHOUSE": str(lakehouse), "DAGSTER_HOME": str(tmp_path / "home")}
    materialise_every_asset_and_check(env, timeout=600)
    assert tables(spark, str(lakehouse)) == expected


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory):
    """A real S3 API on loopback (moto's server), with one bucket, ``panes``. In a process of its
    own: delta-rs holds the GIL while it waits for an answer, so a server thread in this process
    could not give one."""
    import boto3

    port, log = free_port(), tmp_path_factory.mktemp("s3") / "moto.log"
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            client.create_bucket(Bucket="panes")
            break
        except Exception:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"moto's S3 server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
    yield endpoint
    server.terminate()
    server.wait(timeout=30)


def test_dagster_on_a_cluster_with_tables_on_s3_equals_a_local_run(spark, tmp_path, monkeypatch, cluster,
                                                                    s3_endpoint, local_run):
    """Every asset and check, materialised by ``dagster asset materialize`` with the Spark
    driver's executors on the standalone cluster and ``PANES_LAKEHOUSE`` on S3: configured only
    through the standard ``AWS_*`` variables, as a user on a real cluster would."""
    landing, expected, _ = local_run
    aws = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    for name, value in aws.items():
        monkeypatch.setenv(name, value)
    lakehouse, (master, _) = "s3a://panes/lakehouse", cluster
    (tmp_path / "home").mkdir()
    env = {**os.environ, "PANES_SPARK_MASTER": master, "PANES_LANDING": str(landing), "PANES_LAKEHOUSE": lakehouse,
           "DAGSTER_HOME": str(tmp_path / "home"), "PYSPARK_PYTHON": sys.executable}
    materialise_every_asset_and_check(env, timeout=1800)

    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # this session started before the AWS_* above
    for key, value in {"fs.s3a.endpoint": s3_endpoint, "fs.s3a.path.style.access": "true",
                       "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.endpoint.region": "us-east-1",
                       "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing"}.items():
        hadoop.set(key, value)
    assert tables(spark, lakehouse) == expected
    for table in (EVENTS, QUARANTINE, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT):
        (last,) = delta_io.open_table(table.path(lakehouse)).history(limit=1)
        assert last["engineInfo"].startswith("Apache-Spark/4.2.0 Delta-Lake/4.4.0"), (table.name, last)


def materialised(result) -> dict[tuple[str, str], dict]:
    """Each asset's and day's materialisation metadata, by value."""
    return {(m.asset_key.to_user_string(), m.partition): {k: v.value for k, v in m.metadata.items()}
            for node in ("ingest_events", "partials", "sliding_windows")
            for m in result.asset_materializations_for_node(node)}


def test_dagster_pipes_on_a_standalone_cluster_gives_the_tables_and_metadata_of_an_in_process_run(
        spark, tmp_path, cluster, local_run):
    """``PANES_SPARK_LAUNCH=pipes``: each asset launches spark-submit of its job on the cluster
    through Dagster Pipes, and the job reports its result back. The range run then leaves the
    tables, and records the metadata for every asset and day, that the same run in-process
    (``local_run``) does. Only ``path`` (another lakehouse) and ``files_written`` (how many files
    Spark's tasks wrote, which follows the sessions' parallelism, not the data) may differ."""
    from dagster_pyspark import LazyPySparkResource

    from assets.spark_launch import SparkLaunchResource

    landing, expected, in_process_run = local_run
    master, archive = cluster
    through_pipes = SparkLaunchResource(launch="pipes", master=master, submit_args=[
        "--py-files", str(archive), "--driver-memory", "1g", "--conf", "spark.executor.memory=1g",
        "--conf", "spark.ui.enabled=false"])
    lakehouse = str(tmp_path / "pipes")
    result, log = materialise_in_dagster(landing, lakehouse, through_pipes, LazyPySparkResource)
    assert tables(spark, lakehouse) == expected

    def comparable(result):
        return {key: {k: v for k, v in metadata.items() if k not in ("path", "files_written")}
                for key, metadata in materialised(result).items()}

    pipes, in_process = comparable(result), comparable(in_process_run)
    assert len(pipes) == 5 * ((LAST_ARRIVAL - FIRST).days + 1)  # events, quarantine, partials, windows x2
    assert pipes == in_process
    # the drivers' progress came back through Pipes into the run's log
    for job, days in [("ingest_events", LAST_ARRIVAL), ("minute_partials", LAST_ARRIVAL)]:
        assert any(line.startswith(f"jobs.{job} {FIRST} .. {days}: done in ") for line in log), job
    assert any(line.startswith("launching through Dagster Pipes: ") for line in log)


def test_hidden_files_in_a_landing_folder_on_s3_are_listed_as_spark_spells_their_paths(s3_endpoint, monkeypatch):
    """Spark's listing skips ``_*`` and ``.*`` files on S3 as anywhere: ingest must find them
    there too (one ``hidden_file`` record each), through the same ``AWS_*`` settings."""
    import boto3

    for name, value in {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    day = "hidden/landing/2025-01-27"
    for key, body in {"a.json": b"{}\n", "_inflight.json": b"{}\n", ".swap": b"x", "_SUCCESS": b"",
                      "_tmp/b.json": b"{}\n", "sub/c.json": b"{}\n"}.items():
        client.put_object(Bucket="panes", Key=f"{day}/{key}", Body=body)

    hidden = landing_files.hidden_files(f"s3a://panes/{day}")
    assert [(raw, path, reason) for raw, path, _, reason in hidden] == [
        (None, f"s3a://panes/{day}/{name}", "hidden_file") for name in (".swap", "_inflight.json", "_tmp/b.json")]
