"""Rows that several queries read, computed once behind a plan of one leaf."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.utils import is_remote


def computed_once(df: DataFrame) -> DataFrame:
    """``df``'s rows computed now, behind a plan of one leaf (Spark's local checkpoint); the
    caller calls ``unpersist()`` on the result when done, as on a persisted DataFrame.

    Every DataFrame derived from a persisted one is analysed and planned over the whole plan that
    made it, before the cache replaces it; over a checkpoint it plans a leaf (the figures are in
    ``docs/lessons.md``, "Writing"). The price is the lineage: an executor lost before the
    commits fails the run (nothing committed, or a write ``require_whole_writes`` names), and its
    retry computes the rows again, as Delta's MERGE does for its materialised source. A
    checkpoint's blocks go when it is garbage-collected (Spark's ``ContextCleaner``:
    ``unpersist()`` leaves them); eager, so that an ``Observation`` on ``df`` completes with this
    action. Spark Connect sends an observation's metrics with an action's results only, never a
    checkpoint's: there the rows are persisted."""
    return df.persist() if is_remote() else df.localCheckpoint(eager=True)
