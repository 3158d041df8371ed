"""Which values a run writes: a change point only where a key's value changes (or at every end
under final emission), marked by the day it belongs to, shaped as the tables' rows."""

from __future__ import annotations

from datetime import date
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.tables import INTERVAL_STATE, TABLE_COLUMN, WINDOW_CHANGES, WINDOW_SNAPSHOT, partial_columns
from jobs.windows.running_state import hands_on_previous
from jobs.windows.window_grid import Windows, floor_to, utc_midnight
from jobs.windows.window_inputs import ReadPlan
from windowing_core.aggregations import Aggregation
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS, WindowSpec


def _timestamp(seconds: Column | str) -> Column:
    return F.timestamp_seconds(F.col(seconds) if isinstance(seconds, str) else seconds)


def _utc_date(seconds: Column) -> Column:
    """The UTC date of an instant in epoch seconds, as whole days since 1970: ``to_date`` of a
    timestamp takes each row through java.time's zone rules (4 percent of the sliding job's
    samples in a profile), the same answer in UTC."""
    return F.date_from_unix_date((floor_to(seconds, DAY_SECONDS) / DAY_SECONDS).cast("int"))


def with_emission_marks(values: DataFrame, config: PipelineConfig, first: date, last: date) -> DataFrame:
    """Mark each of a key's ends with what both tables need.

    ``changed``: some finished value differs from the key's previous end (a key's first end
    compares with the empty window, whose finished values every key starts from). A
    non-invertible aggregation, whose exact values join in after the running sum, takes its
    previous value by a ``lag`` over a second Window. Without one the marks are plain
    expressions, an invertible aggregation finishing the previous state that rides on the row
    (``previous_*``): 1.25x faster at 10^7 events than ``lag`` and ``lead`` over a second
    Window, and 1.79x at 10^4 (``bench/variants.py``). With one, every aggregation's previous
    value is lagged there (``running_state.hands_on_previous``): finishing each state twice put
    a second copy of every finish in the plan, 31 % of a small day's plan of every kind.
    ``date``/``until``: the day of an end (the baseline's end counts as the first day) and, on
    the day's last end, the last day its state holds before the key's next change.
    """
    by_key = Window.partitionBy("window", "key").orderBy("end")
    by_lag = not hands_on_previous(config)
    names = [a.name for a in config.aggregations]
    lagged = {f"__previous_{c}": c for c in ["end", *names]} if by_lag else {}
    if lagged:  # each lag once, as a column: every occurrence of a window function is evaluated apart
        values = values.withColumns({name: F.lag(c).over(by_key) for name, c in lagged.items()})

    def previous(a: Aggregation) -> Column:
        if not by_lag:
            return a.spark_finish([F.col(f"previous_{c}") for c in a.field_columns()])
        return F.when(F.col("__previous_end").isNull(), a.spark_empty_value()).otherwise(F.col(f"__previous_{a.name}"))

    changed = reduce(lambda a, b: a | b, [~a.spark_comparable(F.col(a.name)).eqNullSafe(
        a.spark_comparable(previous(a).cast(a.output_type))) for a in config.aggregations])

    def day_of(end: Column) -> Column:
        return F.greatest(_utc_date(end), F.lit(first))

    day, next_end = day_of(F.col("end")), F.col("next_end")
    until = (F.when(next_end.isNull(), F.lit(last))
             .when(day_of(next_end) > day, F.date_sub(day_of(next_end), 1)))  # else null: not the day's last
    # what the marks alone need; next_end stays: ``final`` rows repeat up to it
    handed_on = list(lagged) or [f"previous_{c}" for c in partial_columns(config, invertible=True)]
    marks = [changed.alias("changed"), day.alias("date"), until.alias("until")]
    return values.select("*", *marks).drop(*handed_on)


def table_rows(marked: DataFrame, windows: Windows, config: PipelineConfig, plans: dict[str, ReadPlan],
               below_a_day: bool = False) -> DataFrame:
    """Both tables' rows of one window from one pass over its marks, tagged by ``TABLE_COLUMN``;
    for a run ``below_a_day`` also ``interval_state``'s: the state at the run's last end of each
    key that changed since the run's baseline.

    ``window_changes``: the change points, or for ``final`` emission one row per key and window
    end whose window holds events (as Flink and Bytewax emit). A key's state holds from one of
    its ends to the next, so a ``final`` row of a sliding or cumulating window is repeated at
    every end in between (a sequence of ends; tumbling windows and gaps need one). That is the
    cost ``final`` asks for: a 7d window sliding every minute writes 10,080 rows for each key with
    one event. ``window_snapshot``: each key's state as of each day's last window end, carried
    over the following days without a change (a sequence of days, never of windows); empty keys
    drop out.

    Each marked row is tagged for both tables and kept where it belongs, by two generators that
    Spark compiles: one pass, no cache, and at 10^7 events faster than persisting the marks and
    filtering them per table or than building arrays of structs per row with lambdas (which win
    only on small days, where both are fast; ``bench/variants.py``). The second generator's
    elements are longs for both tables: ends in epoch seconds, or days since 1970.
    """
    end, is_change = F.col("end"), F.col(TABLE_COLUMN) == WINDOW_CHANGES.name
    is_state = F.col(TABLE_COLUMN) == INTERVAL_STATE.name
    every, first_end = windows.param(lambda s: s.every), windows.param(lambda s: plans[s.name].first_end)
    # ``final``: every end from this one to the key's next, within the run
    first = F.greatest(end, first_end)
    last = F.coalesce(F.col("next_end") - every, windows.param(lambda s: plans[s.name].last_end))
    def final(s: WindowSpec) -> bool:
        return s.emit == "final"

    emitted = windows.choose(final, lambda: (F.col("event_count") > 0) & (first <= last),
                             lambda: (end >= first_end) & F.col("changed"))
    change_ends = windows.choose(final, lambda: F.sequence(first, last, every), lambda: F.array(end))
    held = F.col("until").isNotNull() & (F.col("event_count") > 0)
    if not all(plans[s.name].ends_day for s in windows.specs):  # a run below a day: snapshots where it ends the day
        held = held & windows.param(lambda s: plans[s.name].ends_day)
    tables = [WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name, *([INTERVAL_STATE.name] if below_a_day else [])]
    # Each key's state after its last change since the run's baseline: the state at the run's
    # last end, which a later run of the day continues from.
    # A window without an end in the run has no state of its own to carry (``reached_marks``).
    changed_last = ((end > windows.param(lambda s: plans[s.name].after)) & F.col("next_end").isNull()
                    & windows.param(lambda s: plans[s.name].emits))
    tagged = (marked.select("*", F.explode(F.array(*map(F.lit, tables))).alias(TABLE_COLUMN))
              .where(F.when(is_change, emitted).when(is_state, changed_last).otherwise(held)))
    days = tagged.select("*", F.explode(F.when(is_change, change_ends).when(is_state, F.array(end)).otherwise(
        F.sequence(F.unix_date("date").cast("long"), F.unix_date("until").cast("long")))).alias("at"))
    at, at_end = F.col("at"), is_change | is_state  # ``at``: an end, or a snapshot's day
    day = F.when(at_end, _utc_date(at)).otherwise(F.date_from_unix_date(at.cast("int")))
    as_of = F.when(is_state, windows.param(lambda s: plans[s.name].last_end)).otherwise(
        windows.end_at_or_after(utc_midnight(day) + DAY_SECONDS) - every)
    return days.select(
        "key",
        "window",
        _timestamp(windows.window_start_of(F.when(is_change, at).otherwise(as_of))).alias("window_start"),
        F.when(is_change, _timestamp(at)).alias("window_end"),
        F.when(~is_change, _timestamp(as_of)).alias("as_of"),
        "event_count",
        *[F.when(~is_change, F.col(c)).alias(c) for c in partial_columns(config, invertible=True)],
        *[a.name for a in config.aggregations],
        day.alias("date"),
        TABLE_COLUMN,
    )
