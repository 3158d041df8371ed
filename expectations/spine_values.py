"""The checks of ``spine_values``: no value from after its row's time, and each spine row joined once."""

from __future__ import annotations

from datetime import date
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from expectations.check import ERROR, Check, Outcome
from expectations.inputs import Inputs, Results, rows_per_day
from expectations.validation import Pairs, Suite, gx_expectations, run_suite
from jobs import point_in_time_join
from jobs.as_of.reading import Reading
from jobs.tables import SPINE_VALUES
from windowing_core.spine import SpineSpec

TABLE = SPINE_VALUES


def checks(spine: SpineSpec) -> list[Check]:
    """The checks of ``spine_values``: a group's own spine, or one joined to several groups."""
    bound = "before it" if spine.exclusive else "at or before it"
    return [
        Check("values_not_after_row_time", SPINE_VALUES.name, ERROR,
              "A joined value from after its spine row's ts: a feature leaking the future into "
              f"training data. For every row and window (of every group joined), the window read must end "
              f"{bound}, and the row the value was read from (read_at) no later than that end."),
        Check("spine_rows_joined_once", SPINE_VALUES.name, ERROR,
              "Spine rows lost or repeated by the join: each day's output rows must equal the "
              "spine's rows whose ts falls on that day."),
    ]


def suite(spine: SpineSpec) -> Suite:

    def build() -> Pairs:
        gxe = gx_expectations()
        return [("values_not_after_row_time", gxe.ExpectColumnValuesToBeInSet(column="read_after_row_time",
                                                                             value_set=[False]))]

    # its columns are the spine's own and the join's: no declared schema to hold it to
    return Suite(SPINE_VALUES.name, "date", [*spine.key_columns, spine.ts], [], build)


def prepare(values: DataFrame, spine: SpineSpec, read: list[tuple[str, Reading]]) -> DataFrame:
    """``read_after_row_time``: for some read window (of every group joined), the window read
    ends after the row's ts (at it, where the spine is ``exclusive``), or the row its value came
    from after that end. ``read``: the readings, each with its columns' prefix
    (``jobs.point_in_time_join.readings``)."""
    ts = F.col(spine.ts).cast("timestamp")
    late = []
    for prefix, reading, spec in ((p, r, s) for p, r in read for s in r.windows):
        end, read_at = (F.col(prefix + c) for c in reading.columns(spec)[:2])
        after = (end >= ts) if spine.exclusive else (end > ts)
        late.append(F.coalesce(after, F.lit(False)) | F.coalesce(read_at > F.coalesce(end, ts), F.lit(False)))
    return values.withColumn("read_after_row_time", reduce(lambda a, b: a | b, late))


def spine_rows_joined_once(spine_rows: DataFrame, values: DataFrame, ts: str, days: list[date]) -> dict[date, Outcome]:
    """Per day of ts: the spine's rows and the join's output rows, which must be as many."""
    spine = rows_per_day(spine_rows.withColumn("date", F.to_date(F.col(ts).cast("timestamp"))), "date")
    joined = rows_per_day(values, "date")
    return {d: Outcome(spine.get(d, 0) == joined.get(d, 0), {"spine_rows": spine.get(d, 0),
                                                             "joined_rows": joined.get(d, 0)}) for d in days}


def evaluate(inputs: Inputs) -> Results:
    """A group's spine (``inputs.config`` a group's) or the spine joined to several groups (the
    deployment's)."""
    spine = inputs.config.spine
    values = inputs.read(SPINE_VALUES, "date", inputs.first, inputs.last)
    read = point_in_time_join.readings(spine, inputs.config)
    results = run_suite(values, prepare(values, spine, read),
                        suite(spine), inputs.days, inputs.selected)
    if "spine_rows_joined_once" in inputs.selected:
        results["spine_rows_joined_once"] = spine_rows_joined_once(
            point_in_time_join.read_spine(inputs.spark, spine, inputs.first, inputs.last), values, spine.ts,
            inputs.days)
    return results
