"""What a window kind carries from one day to the next, and whether the next day may continue it.

Session and count windows keep a state table (``session_state``, ``count_state``): per window,
key and day, what a window still open at the day's end holds. Beside those rows, each run writes
one row with a null key per window and day, a mark saying "this day's state of this window was
materialised, under this definition" (even when no key holds anything). The next day continues
a window only from a day so marked with the window's current definition; any other window (the
first run, a day skipped, a window redefined) is bootstrapped from every earlier day, which is
exact either way. The mechanism is the same for both kinds; only the definition's columns differ.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.storage import delta_io, delta_write
from jobs.tables import TABLE_COLUMN, Table, day_filter, declared_columns
from jobs.tables import days as day_list
from jobs.windows.window_grid import Spec, Windows
from windowing_core.config import PipelineConfig

Definition = dict[str, Callable[[Spec], int | str | None]]
"""A state table's definition columns, each with how a window's spec gives its value."""


def definition_columns(windows: Windows, definition: Definition) -> list[Column]:
    """What a state row says of its window's definition, for the next day to check."""
    return [windows.param(value).alias(name) for name, value in definition.items()]


def day_marks(spark: SparkSession, table: Table, windows: Windows, definition: Definition, first: date, last: date,
              *also: Column) -> DataFrame:
    """One null-key row of ``table`` per window and day of ``first .. last`` (with ``also``)."""
    marks = spark.createDataFrame([(name, day) for name in windows.names for day in day_list(first, last)],
                                  "window string, date date")
    return marks.select(F.lit(None).cast("string").alias("key"), "window", *also,
                        *definition_columns(windows, definition), "date", F.lit(table.name).alias(TABLE_COLUMN))


def continued_state(spark: SparkSession, lakehouse: str, table: Table, windows: Windows, definition: Definition,
                    first: date) -> tuple[DataFrame | None, set[str]]:
    """The keys' state rows at the end of ``first - 1`` of the windows whose mark that day
    carries their current definition, and those windows' names (none: every window bootstraps)."""
    day = first - timedelta(days=1)
    path = table.path(lakehouse)
    # a table written before one of the definition's columns existed marks nothing as continuable
    if not delta_io.table_exists(path) or not set(definition) <= set(delta_io.table_columns(path)):
        return None, set()
    state = delta_io.read_table(spark, path, partition_filters=day_filter("date", day, day)).where(
        windows.filter())
    held = {tuple(r) for r in state.where(F.col("key").isNull()).select("window", *definition).distinct().collect()}
    continued = {s.name for s in windows.specs
                 if (s.name, *(value(s) for value in definition.values())) in held}
    if not continued:
        return None, set()
    return state.where(F.col("key").isNotNull() & F.col("window").isin(sorted(continued))), continued


def state_target(table: Table, lakehouse: str, first: date, last: date, config: PipelineConfig) -> delta_write.Target:
    """The state table's partitions of days ``first .. last``, as one run replaces them."""
    return delta_write.Target(table.path(lakehouse), [c for c, _ in declared_columns(table.name, config)],
                              list(table.partition_by), day_filter("date", first, last))
