"""The jobs on a real Spark cluster give the tables a local run gives.

A standalone master and one worker run on loopback from the pyspark package alone, and the
jobs go to them with spark-submit and ``--py-files``, as on any cluster: driver and executors
are separate JVMs, the Python workers import panes from the shipped archive, and the Delta
writes run on the executors and commit on the driver.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import zipfile
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pyspark
import pytest

from jobs import delta_io, ingest_events, minute_partials, sliding_windows
from jobs.tables import EVENTS, MINUTE_PARTIALS, QUARANTINE, WINDOW_CHANGES, WINDOW_SNAPSHOT
from tests.landing import ensure_days, random_landing
from windowing_core.config import PipelineConfig

REPO = Path(__file__).resolve().parents[2]
SPARK_HOME = os.path.dirname(pyspark.__file__)
FIRST, EVENT_DAYS = date(2025, 1, 28), 3
LAST_ARRIVAL = FIRST + timedelta(days=EVENT_DAYS + 2)
STARTUP_SECONDS = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path, ready: str) -> subprocess.Popen:
    process = subprocess.Popen([f"{SPARK_HOME}/bin/spark-class", *args], stdout=log.open("w"),
                               stderr=subprocess.STDOUT, env={**os.environ, "SPARK_HOME": SPARK_HOME})
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
    port = _free_port()
    master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(_free_port())], root / "master.log", "New state: ALIVE")
    try:
        worker = _start(["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
                         "--cores", "2", "--memory", "2g", "--work-dir", str(root / "work"),
                         "--webui-port", str(_free_port())], root / "worker.log", "Successfully registered")
    except BaseException:
        master.kill()
        raise
    archive = root / "panes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for package in ("jobs", "windowing_core"):
            for source in (REPO / package).glob("*.py"):
                z.write(source, f"{package}/{source.name}")
    yield f"spark://127.0.0.1:{port}", archive
    for process in (worker, master):
        process.terminate()
        process.wait(timeout=30)


def submit(cluster, job: str, *args: str) -> subprocess.CompletedProcess:
    master, archive = cluster
    python = sys.executable
    done = subprocess.run(
        [f"{SPARK_HOME}/bin/spark-submit", "--master", master, "--py-files", str(archive),
         "--driver-memory", "1g", "--conf", "spark.executor.memory=1g", "--conf", "spark.ui.enabled=false",
         str(REPO / "jobs" / f"{job}.py"), *args],
        capture_output=True, text=True, timeout=600, cwd=archive.parent,
        env={**os.environ, "SPARK_HOME": SPARK_HOME, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python})
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def tables(spark, lakehouse: str) -> dict[str, Counter]:
    return {t.name: Counter(tuple(r) for r in delta_io.read_table(spark, t.path(lakehouse)).collect())
            for t in (EVENTS, QUARANTINE, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT)}


def test_the_daily_jobs_on_a_standalone_cluster_equal_a_local_run(spark, tmp_path, cluster):
    landing = tmp_path / "landing"
    random_landing(landing, 13, FIRST, EVENT_DAYS)
    ensure_days(landing, FIRST, LAST_ARRIVAL)
    last_event_day = FIRST + timedelta(days=EVENT_DAYS - 1)
    on_cluster, local = str(tmp_path / "on-cluster"), str(tmp_path / "local")
    days = ["--date", FIRST.isoformat(), "--until"]

    submit(cluster, "ingest_events", "--landing", str(landing), "--lakehouse", on_cluster, *days,
           LAST_ARRIVAL.isoformat())
    submit(cluster, "minute_partials", "--lakehouse", on_cluster, *days, last_event_day.isoformat())
    done = submit(cluster, "sliding_windows", "--lakehouse", on_cluster, *days, LAST_ARRIVAL.isoformat())
    assert "baseline: 7d bootstrap" in done.stdout
    # spark-submit's Python runner merges the job's stderr, where its progress goes, into stdout
    assert f"jobs.sliding_windows {FIRST} .. {LAST_ARRIVAL}: done in " in done.stdout

    config = PipelineConfig()
    ingest_events.ingest(spark, str(landing), local, FIRST, LAST_ARRIVAL, config)
    minute_partials.run(spark, local, FIRST, last_event_day, config)
    sliding_windows.run(spark, local, FIRST, LAST_ARRIVAL, config)
    expected = tables(spark, local)
    assert expected[WINDOW_CHANGES.name], "the case must produce change points"
    assert tables(spark, on_cluster) == expected
