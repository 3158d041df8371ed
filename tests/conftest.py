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
        # A test process lives for hundreds of runs: what Spark and Delta keep of past queries
        # and tables (1,000 SQL executions, 10,000 tables by default) filled a 4g heap.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.ui.retainedTasks": "2000",
        "spark.databricks.delta.delta.log.cacheSize": "50",
    })
    yield session
    session.stop()



def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: minutes of work; started first by `run.sh test`, each case on "
                                       "its own (or the whole module, where the mark is the module's)")


def _heavy_unit(item) -> str | None:
    for node, _ in item.iter_markers_with_node("heavy"):
        return node.nodeid
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Units of work for the two test processes (``--dist loadgroup``, run.sh): a file, so that
    its module fixtures are built once; but a file of slow property cases would run alone on one
    process long after the other finished. So each case of a ``heavy`` test is a unit of its
    own, and heavy units are handed out first: the longest work first keeps both processes busy
    to the end."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_heavy_unit(item) or item.nodeid.split("::")[0]))
    items.sort(key=lambda item: _heavy_unit(item) is None)
