"""What a table's evaluator reads: Spark, the roots, the configuration, the days and checks asked for.

Counts per day come from the Delta log's file statistics where they answer exactly (no Spark job),
else from the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime

import dagster as dg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from expectations.check import Outcome
from jobs.runtime.side_by_side import side_by_side
from jobs.storage import delta_io
from jobs.tables import EVENTS, QUARANTINE, Table, day_filter, ingest_root
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment

Results = dict[str, dict[date, Outcome]]
"""An evaluator's answer: each check's outcome per day."""

Tally = DataFrame | Mapping[date, int]
"""A table's rows to count per day, or the counts themselves (``Inputs.tally`` reads them from
the Delta log where its statistics answer exactly, and no Spark job is needed)."""


SUITE = "Great Expectations suite"
"""The label, in Spark's UI, of the jobs validating a table's Great Expectations suite."""


def side_by_side_results(spark: SparkSession, calls: dict[str, Callable[[], Results]]) -> Results:
    """The checks of ``calls`` run side by side (``jobs.runtime.side_by_side``), their results as
    one: a table's suite beside the checks that recompute it, which share nothing but the reads.
    On a small day most of each is fixed latency the other fills. Each is labelled in Spark's UI
    by its key (``SUITE``, or the check it evaluates)."""
    return {name: by_day for found in side_by_side(spark, calls) for name, by_day in found.items()}


def rows_per_day(frame: Tally, day_column: str, reason: str | None = None) -> dict[date, int]:
    """Rows per day; ``reason`` keeps only late_events' slice of that reason (counts given as a
    mapping are of that slice already)."""
    if not isinstance(frame, DataFrame):
        return dict(frame)
    if reason is not None:
        frame = frame.where(F.col("reason") == reason)
    return {r[0]: r[1] for r in frame.groupBy(day_column).count().collect()}


@dataclass
class Inputs:
    """What an evaluator needs: Spark, the roots, the configuration, the days and checks asked for."""

    spark: SparkSession
    landing_root: str
    lakehouse_root: str
    config: PipelineConfig | Deployment  # a deployment for its own table: the spine joined to several groups
    days: list[date]
    selected: set[str]
    instance: dg.DagsterInstance | None = None
    until: datetime | None = None
    """Partitions below a day: where the last one judged ends, within its day. The checks judge
    the days as they stand up to it: a row of the last day at or after it is not judged yet."""

    @property
    def first(self) -> date:
        return self.days[0]

    @property
    def last(self) -> date:
        return self.days[-1]

    def through(self, rows: DataFrame, column: str) -> DataFrame:
        """``rows`` before ``until`` by their time ``column`` (all of them for whole days)."""
        return rows if self.until is None else rows.where(F.col(column) < F.lit(self.until))

    def path(self, table: Table) -> str:
        """Where ``table`` is: the configuration's root (``lakehouse_root``), or for the events a
        group reads, its source's ingest root."""
        shared = table in (EVENTS, QUARANTINE)
        return table.path(ingest_root(self.lakehouse_root, self.config) if shared else self.lakehouse_root)

    def read(self, table: Table, column: str, first: date, last: date) -> DataFrame:
        return delta_io.read_table(self.spark, self.path(table), partition_filters=day_filter(column, first, last))

    def tally(self, table: Table, column: str, first: date, last: date, *more: tuple) -> Tally:
        """Rows per day of ``column`` (``more``: further partition filters), from the Delta log's
        file statistics where they answer exactly (no Spark job), else the rows to count (before
        ``until``, by ``arrival_part``: the tables a tally counts are ingest's)."""
        filters = [*day_filter(column, first, last), *more]
        counts = delta_io.partition_row_counts(self.path(table), column, partition_filters=filters)
        if counts is None or self.until is not None:
            return self.through(delta_io.read_table(self.spark, self.path(table), partition_filters=filters),
                                "arrival_part")
        return {date.fromisoformat(d): n for d, n in counts.items()}
