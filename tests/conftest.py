"""One Spark session for the whole test run: starting one costs seconds, so it is shared."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from jobs.spark_session import get_spark

    session = get_spark({
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "4g",  # two test processes: 8 of 24 GiB
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "1",
    })
    yield session
    session.stop()
