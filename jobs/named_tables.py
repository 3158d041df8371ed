"""Read a table a configuration names (``windowing_core.named_table``): a Delta table or Parquet
files at a path, or a table of Spark's catalog."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession

from jobs import errors
from jobs.storage import delta_io


def read(spark: SparkSession, path: str | None, table: str | None, fmt: str | None) -> DataFrame:
    """Its rows; a path's format, where not given, is Delta where the path holds a Delta log,
    else Parquet. A path that does not exist is ``MissingTableError``."""
    if table is not None:
        return spark.table(table)
    fmt = fmt or ("delta" if delta_io.holds_delta_log(path) else "parquet")
    if fmt == "delta":
        return delta_io.read_table(spark, path)
    if "://" not in path and not os.path.exists(path):
        raise errors.MissingTableError(path)
    return spark.read.parquet(path)
