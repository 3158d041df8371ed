"""One Spark session for the whole test run: starting one costs seconds, so it is shared."""

from __future__ import annotations

import pytest

from jobs.runtime.compilers import INTERPRETED

# The tests' data is tiny, and their plans are large: compiling generated code for a query (Janino,
# then the JIT compiling the classes made) costs more than the rows it runs over. With Spark's
# interpreted evaluation (``factoryMode`` is the setting Spark's own tests use to run both ways),
# 8 tests (arrival windows, point-in-time reads, a pipeline case) took 227 instead of 276
# core-seconds, 141 s instead of 174 s (2026-11-28, one process, alternating). The product runs
# generated code but on a tiny input run alone (``jobs.runtime.compilers``): the algebra's own
# tests run it (``generated_code``), as does one pipeline case with every kind and every test
# whose jobs run under a JVM started for them (Spark Connect, a cluster, Pipes), comparing their
# tables with this session's.
GENERATED = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


@pytest.fixture(scope="session")
def spark():
    from jobs.runtime.spark_session import get_spark

    session = get_spark({
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "4g",  # two test processes: 8 of 24 GiB
        # Adaptive execution re-plans a query at each shuffle, for data the tests keep tiny: a
        # daily windows run with Chronon's kinds (pipeline oracle seed 8) took 48-58 s with it and
        # 36 s without, a range run with every kind (seed 2) 26.8 s and 23.8 s (one JVM, interleaved).
        "spark.sql.adaptive.enabled": "false",
        "spark.databricks.delta.snapshotPartitions": "1",
        # A test process lives for hundreds of runs: what Spark and Delta keep of past queries
        # and tables (1,000 SQL executions, 10,000 tables by default) filled a 4g heap.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.ui.retainedTasks": "2000",
        "spark.databricks.delta.delta.log.cacheSize": "50",
        **INTERPRETED,
    }, roots=["s3a://"])  # tests/jobs/test_beyond_one_machine.py reads its S3 tables in this session
    yield session
    session.stop()


@pytest.fixture
def generated_code(spark):
    """The session evaluating with generated code, as every job outside the tests does, for one test."""
    for key, value in GENERATED.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)


HEAVY = (
    # a cluster, a Spark Connect server and S3 started once for the module: the file is one unit
    "tests/jobs/test_beyond_one_machine.py",
    # minutes each: every case on its own
    "tests/jobs/test_pipeline_against_oracle.py::test_every_table_equals_the_oracle[",
    "tests/jobs/windows/test_session_windows.py::test_sessions_equal_the_oracle_as_arrivals_land[",
    "tests/jobs/test_late_firing_against_oracle.py::test_late_firings_equal_the_oracle_in_daily_and_range_runs[",
    "tests/jobs/windows/test_arrival_windows.py::test_arrival_windows_equal_the_oracle_beside_event_time_windows[",
    "tests/jobs/test_killed_jobs.py::",
    "tests/jobs/storage/test_concurrent_writers.py::",
    "tests/assets/test_session_assets.py::",
    "tests/jobs/test_point_in_time_join.py::test_every_joined_value_equals_the_oracle_as_of_its_row",
)
"""Work the two test processes of ``run.sh test`` hand out first, longest first (``unit_of``)."""


def unit_of(nodeid: str) -> tuple[int, str]:
    """A test's place in ``HEAVY`` (``len(HEAVY)`` if it is not heavy), and its unit of work: its
    file, so that module fixtures are built once, except for a heavy case, which is a unit of
    its own. A file of slow property cases would otherwise run alone on one process long after
    the other finished."""
    for rank, prefix in enumerate(HEAVY):
        if nodeid.startswith(prefix):
            return rank, nodeid if "::" in prefix else nodeid.split("::")[0]
    return len(HEAVY), nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """The order in which the units are handed out: the longest work first keeps both processes
    busy to the end."""
    items.sort(key=lambda item: unit_of(item.nodeid)[0])


def pytest_xdist_make_scheduler(config, log):
    """``unit_of`` as the test processes' units of work (xdist's ``loadfile`` with heavy cases
    split off; its ``loadgroup`` marks no longer reach pytest 9's node ids)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)[1]

    return ByUnit(config, log)
