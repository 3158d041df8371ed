"""panes' Spark defaults reach the JVM they are meant for."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from jobs.runtime import class_archive
from jobs.runtime.spark_session import with_jvm_packages


def test_the_driver_jvm_collects_garbage_with_the_throughput_collector(spark):
    """``SPARK_DEFAULTS`` asks for the parallel collector (docs/lessons.md). The option is
    read only when the JVM starts, so this checks the running JVM, not the configuration."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names


def test_the_delta_jars_are_on_the_class_path(spark):
    """delta-spark writes every table: its classes load in the session's JVM."""
    assert spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable("io.delta.tables.DeltaTable")
    assert spark.conf.get("spark.sql.extensions") == "io.delta.sql.DeltaSparkSessionExtension"


_UI_ADDRESS = """
import sys
from jobs.runtime.spark_session import get_spark
spark = get_spark({"spark.master": "local[1]", "spark.ui.port": "0"})
port = int(spark.sparkContext.uiWebUrl.rsplit(":", 1)[1])
listening = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for row in open(table).read().splitlines()[1:]:
        local, state = row.split()[1], row.split()[3]
        address, hex_port = local.rsplit(":", 1)
        if int(hex_port, 16) == port and state == "0A":  # LISTEN
            listening.add(address)
print(spark.sparkContext.uiWebUrl, sorted(listening))
spark.stop()
"""


def _ui_listens_on(env: dict[str, str]) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "PYSPARK_GATEWAY_PORT")}
    done = subprocess.run([sys.executable, "-c", _UI_ADDRESS], capture_output=True, text=True, timeout=300,
                          env={**environment, "PYTHONPATH": os.getcwd(), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def a_job_started_alone(tmp_path_factory):
    """A process starting its session as a job run alone does, every JVM of it logging where
    each class came from: the UI line it prints, and the class loading logs."""
    logs = tmp_path_factory.mktemp("class_load")
    line = _ui_listens_on({"JAVA_TOOL_OPTIONS": f"-Xlog:class+load=info:file={logs}/%p.log"})
    return line, "".join(p.read_text() for p in logs.glob("*.log"))


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, also IPv4-mapped in tcp6
ANY = {"00000000", "00000000000000000000000000000000"}  # 0.0.0.0 and ::


def test_the_spark_ui_listens_on_loopback_unless_opened(a_job_started_alone):
    """Issue 30, item 15: every job's UI listened on all interfaces (``*:4040``), unauthenticated.
    The listening sockets of the UI's port, as /proc/net/tcp{,6} write their addresses."""
    def addresses(line: str) -> set[str]:
        return set(ast.literal_eval(line.split(" ", 1)[1]))

    closed = addresses(a_job_started_alone[0])
    assert closed and closed <= LOOPBACK, f"the UI must listen on 127.0.0.1 alone, not {closed}"
    assert addresses(_ui_listens_on({"SPARK_LOCAL_IP": "0.0.0.0"})) & ANY


def test_py4j_looks_each_static_member_up_once(spark):
    """``jobs.runtime.py4j_lookups``: the second ``F.sum("x")`` makes two round trips, calls of ``col``
    and ``sum``, and no lookup of the class or its members (six round trips without the memo)."""
    from pyspark.sql import functions as F

    client = spark.sparkContext._gateway._gateway_client
    sent = []
    original = client.send_command
    client.send_command = lambda command, *args, **kwargs: sent.append(command) or original(command, *args, **kwargs)
    try:
        F.sum("x")
        sent.clear()
        column = F.sum("x")
        calls = [c for c in sent if not c.startswith("m\nd\n")]  # not the garbage collector's
    finally:
        del client.send_command
    assert [c.split("\n")[1:3] for c in calls] == [["z:org.apache.spark.sql.functions", "col"],
                                                   ["z:org.apache.spark.sql.functions", "sum"]], calls
    assert str(column) == "Column<'sum(x)'>"


def test_the_s3_connector_loads_only_for_a_root_on_s3():
    """Its AWS SDK bundle slows every JVM's start: a session over local folders goes without it."""
    def class_path(*roots):
        return with_jvm_packages({}, roots)["spark.driver.extraClassPath"]

    assert "delta-spark" in class_path("/data/landing", "lakehouse") and "hadoop-aws" not in class_path("lakehouse")
    assert "hadoop-aws" in class_path("/data/landing", "s3a://bucket/lakehouse")
    assert class_path("s3a://b/l") == with_jvm_packages({}, ["s3a://b/l"])["spark.executor.extraClassPath"]


def test_a_job_started_alone_loads_spark_and_delta_from_the_class_archive(a_job_started_alone):
    """``run.sh setup`` archives the classes a driver loads (``jobs.runtime.class_archive``) and the
    driver's JVM maps them: Java logs the source of every class, and an archived one as the
    shared objects file's ("top": the dynamic archive over the JDK's own)."""
    extra = with_jvm_packages({})["spark.driver.extraClassPath"]
    assert class_archive.java_options(extra), "no class archive: `bash run.sh setup` builds it"
    log = a_job_started_alone[1]
    for name in ("org.apache.spark.SparkContext", "io.delta.sql.DeltaSparkSessionExtension"):
        loaded = [line for line in log.splitlines() if f" {name} source:" in line]
        assert loaded and all("shared objects file (top)" in line for line in loaded), loaded or name

