"""panes' Spark defaults reach the JVM they are meant for."""

from __future__ import annotations


def test_the_driver_jvm_collects_garbage_with_the_throughput_collector(spark):
    """``SPARK_DEFAULTS`` asks for the parallel collector (bench/README, item 14). The option is
    read only when the JVM starts, so this checks the running JVM, not the configuration."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names


def test_the_delta_jars_are_on_the_class_path(spark):
    """delta-spark writes every table: its classes load in the session's JVM."""
    assert spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable("io.delta.tables.DeltaTable")
    assert spark.conf.get("spark.sql.extensions") == "io.delta.sql.DeltaSparkSessionExtension"
