"""panes' Spark defaults reach the JVM they are meant for."""

from __future__ import annotations


def test_the_driver_jvm_collects_garbage_with_the_throughput_collector(spark):
    """``SPARK_DEFAULTS`` asks for the parallel collector (bench/README, item 14). The option is
    read only when the JVM starts, so this checks the running JVM, not the configuration."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names


def test_arrow_batches_for_the_delta_writer_are_bounded_by_rows_alone(spark):
    """Below Int.MaxValue Spark measures an Arrow batch's bytes after every row it hands to a
    Python writer; panes bounds batches by rows instead (bench/README, "Arrow batches")."""
    assert spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch") == str(2**31 - 1)
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "100000"
