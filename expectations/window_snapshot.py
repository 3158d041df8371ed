"""The checks of ``window_snapshot``: each key's state as of the day's last window end, equal to
its last change point, from which the next day continues."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from expectations.check import ERROR, Check, Outcome
from expectations.inputs import SUITE, Inputs, Results, side_by_side_results
from expectations.shared_checks import (
    count_outputs, empty_values, fields_of, kind_checks, same_values, value_checks, window_lengths,
    window_name_checks, with_kind_columns,
)
from expectations.validation import SAMPLE_ROWS, Pairs, Suite, gx_expectations, json_safe, not_negative, \
    readable_columns, run_suite
from expectations.window_changes import of_sliding_windows
from jobs.tables import WINDOW_CHANGES, WINDOW_SNAPSHOT, declared_columns
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.window_spec import DAY_SECONDS

TABLE = WINDOW_SNAPSHOT


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``window_snapshot``."""
    return [
        Check("keys_not_null", WINDOW_SNAPSHOT.name, ERROR,
              "Snapshot rows without a key: their values cannot be served."),
        Check("windows_declared", WINDOW_SNAPSHOT.name, ERROR,
              "Rows for a window that is not configured: nobody reads them."),
        Check("snapshot_as_of_last_window_end", WINDOW_SNAPSHOT.name, ERROR,
              "as_of is not the day's last window end: the next day would continue from the wrong "
              "state, and serving would show a stale time."),
        Check("window_length_matches_spec", WINDOW_SNAPSHOT.name, ERROR,
              "window_start is not as_of minus the window's length (a cumulating window's: its "
              "period's start): the state is of another "
              "window, and the next day would continue from it."),
        Check("snapshot_keys_not_empty", WINDOW_SNAPSHOT.name, ERROR,
              "Keys whose window is empty kept in the snapshot: it should hold only keys with events "
              "in their window."),
        Check("snapshot_keys_unique", WINDOW_SNAPSHOT.name, ERROR,
              "Two rows for one key and window on one day: the next day's baseline would double."),
        Check("counts_non_negative", WINDOW_SNAPSHOT.name, ERROR,
              "A negative count or event_count in the carried state: every later day inherits it."),
        Check("snapshot_matches_last_change", WINDOW_SNAPSHOT.name, ERROR,
              "A snapshot that disagrees with the change points: each key's snapshot must equal its "
              "last change point of the day, or the previous day's snapshot when it did not change "
              "(absent when the value is empty); the next day continues from it."),
        Check("schema_matches_declared", WINDOW_SNAPSHOT.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: the next day's run and serving break."),
    ]


def suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(WINDOW_SNAPSHOT.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        counts = ["event_count", *fields_of(config, "count", invertible_only=True), *count_outputs(config)]
        return [
            *window_name_checks(config),
            ("snapshot_as_of_last_window_end", gxe.ExpectColumnPairValuesToBeEqual(
                column_A="as_of", column_B="declared_as_of", ignore_row_if="neither")),
            ("window_length_matches_spec", gxe.ExpectColumnPairValuesToBeEqual(
                column_A="window_length_seconds", column_B="declared_length_seconds")),
            ("snapshot_keys_not_empty", gxe.ExpectColumnValuesToBeBetween(column="event_count", min_value=1)),
            ("snapshot_keys_not_empty", gxe.ExpectColumnValuesToNotBeNull(column="event_count")),
            ("snapshot_keys_unique", gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["key", "window", "date"])),
            *[("counts_non_negative", e) for e in not_negative(counts)],
            *[("sums_non_negative", e)
              for e in not_negative(fields_of(config, "sum", invertible_only=True))],
            *value_checks(config),
            *kind_checks(config),
        ]

    return Suite(WINDOW_SNAPSHOT.name, "date", readable_columns(declared), declared, build)


def as_of_per_day(config: PipelineConfig, days: Iterable[date]) -> list[tuple[str, date, int]]:
    """(window, day, the day's last window end in epoch seconds): what a snapshot is as of."""
    return [(spec.name, day, spec.end_at_or_before(day_start(day) + DAY_SECONDS - 1))
            for spec in config.windows for day in days]


def prepare(snapshot: DataFrame, config: PipelineConfig, days: list[date]) -> DataFrame:
    declared = snapshot.sparkSession.createDataFrame(
        as_of_per_day(config, days), "window string, date date, as_of_seconds long",
    ).select("window", "date", F.timestamp_seconds("as_of_seconds").alias("declared_as_of"))
    return with_kind_columns(snapshot.join(F.broadcast(declared), ["window", "date"], "left")
                             .withColumns(window_lengths(F.unix_seconds("as_of"), config)), config)


def snapshot_matches_last_change(snapshots: DataFrame, changes: DataFrame, config: PipelineConfig,
                                 days: list[date]) -> dict[date, Outcome]:
    """Each key's snapshot of day D equals its value at D's last window end, as the change points
    say: the last change point of D, or (no change that day) the snapshot of D - 1. Empty values
    are absent rows, so an absent row equals a change point to empty. For windows emitting
    ``final`` rows the value at the last end is the row at that end, or empty.

    ``snapshots`` must hold days ``first - 1 .. last``. Where D - 1 holds no rows of a window as
    configured (not materialised, nothing in the window, or the window defined otherwise then),
    a key of that window without a change point on D cannot be judged from the tables; it is
    counted as unverified, not failed.
    """
    values = [a.name for a in config.aggregations]
    empty = empty_values(config)
    wanted = [d.isoformat() for d in days]
    spark = snapshots.sparkSession
    specs = {spec.name: spec for spec in config.windows}
    held_end = spark.createDataFrame([(w, d, end, specs[w].window_start(end)) for w, d, end in
                                      as_of_per_day(config, sorted({d - timedelta(days=1) for d in days}))],
                                     "window string, date date, held_end long, held_start long")
    of_this_definition = (snapshots.join(F.broadcast(held_end), ["window", "date"])
                          .where((F.unix_seconds("as_of") == F.col("held_end"))
                                 & (F.unix_seconds("window_start") == F.col("held_start"))))
    last_end = spark.createDataFrame(as_of_per_day(config, days), "window string, date date, last_end long")
    final = [w.name for w in config.windows if w.emit == "final"]

    # One aggregate per (date, key, window) over the three sources together: one shuffle, where
    # a row_number over the change points and two full joins took three.
    state = F.struct(*[F.col(v) for v in values])
    nothing = F.lit(None).cast(changes.select(state.alias("s")).schema["s"].dataType)
    keys = ["date", "key", "window"]
    tagged = (changes.where(F.col("date").isin(wanted))
              .select(*keys, F.unix_seconds("window_end").alias("end"), state.alias("change"),
                      nothing.alias("previous"), nothing.alias("snapshot"))
              .unionByName(of_this_definition.where(F.date_add("date", 1).isin(wanted)).select(
                  F.date_add("date", 1).alias("date"), "key", "window", F.lit(None).cast("long").alias("end"),
                  nothing.alias("change"), state.alias("previous"), nothing.alias("snapshot")))
              .unionByName(snapshots.where(F.col("date").isin(wanted)).select(
                  *keys, F.lit(None).cast("long").alias("end"), nothing.alias("change"), nothing.alias("previous"),
                  state.alias("snapshot"))))
    # The snapshot's least and greatest state: two rows of one key that differ show as a mismatch,
    # as they did as two joined rows (snapshot_keys_unique reports every duplicate). Spark orders
    # no map (a histogram's value), so the state is ordered by its maps' sorted entries.
    tagged = tagged.withColumn("snapshot_order", F.when(F.col("snapshot").isNotNull(), F.struct(*[
        F.array_sort(F.map_entries(F.col("snapshot")[v])) if isinstance(changes.schema[v].dataType, MapType)
        else F.col("snapshot")[v] for v in values])))
    rows = (tagged.groupBy(*keys).agg(
                F.max("end").alias("end"), F.max_by("change", "end").alias("change"),
                (F.count("previous") > 0).alias("in_previous"), F.first("previous", ignorenulls=True).alias("previous"),
                (F.count("snapshot") > 0).alias("in_snapshot"),
                F.min_by("snapshot", "snapshot_order").alias("snapshot"),
                F.min("snapshot_order").alias("snapshot_least"), F.max("snapshot_order").alias("snapshot_greatest"))
            .select(*keys, "end", "in_previous", "in_snapshot",
                    (~F.col("snapshot_least").eqNullSafe(F.col("snapshot_greatest"))).alias("snapshots_differ"),
                    *[F.col(f"change.{v}").alias(f"change_{v}") for v in values],
                    *[F.col(f"previous.{v}").alias(f"previous_{v}") for v in values],
                    *[F.col(f"snapshot.{v}").alias(f"snapshot_{v}") for v in values])
            .join(F.broadcast(last_end), ["window", "date"], "left"))

    is_final = F.col("window").isin(final) if final else F.lit(False)
    has_change = F.col("end").isNotNull()
    expected = {v: F.when(is_final, F.when(F.col("end") == F.col("last_end"), F.col(f"change_{v}"))
                          .otherwise(empty[v]))
                .when(has_change, F.col(f"change_{v}"))
                .when(F.col("in_previous"), F.col(f"previous_{v}"))
                .otherwise(empty[v]) for v in values}
    actual = {v: F.when(F.col("in_snapshot"), F.col(f"snapshot_{v}")).otherwise(empty[v]) for v in values}
    # A key without a change point on D is judged against D - 1's snapshot where that holds the
    # window as configured (it is continued: some key of it has a row there), else unverified;
    # which windows are continued comes out of the same aggregate, per (date, window).
    open_key = ~(is_final | has_change)
    judged = rows.select(
        "date", "key", "window", open_key.alias("open"), "in_previous",
        (~same_values(config, expected, actual) | F.col("snapshots_differ")).alias("mismatch"),
        F.struct(*[expected[v].alias(v) for v in values]).alias("expected"),
        F.struct(*[actual[v].alias(v) for v in values]).alias("snapshot"),
    )
    per_window = judged.groupBy("date", "window").agg(
        F.count(F.lit(1)).alias("keys"), F.max("in_previous").alias("continued"),
        F.count(F.when(~F.col("open") & F.col("mismatch"), 1)).alias("mismatches"),
        F.count(F.when(F.col("open") & F.col("mismatch"), 1)).alias("open_mismatches"),
        F.count(F.when(F.col("open"), 1)).alias("open_keys")).collect()
    continued = [(r["window"], r["date"]) for r in per_window if r["continued"]]
    totals: dict[date, dict[str, int]] = defaultdict(lambda: {"keys": 0, "mismatches": 0, "unverified": 0})
    for r in per_window:
        total = totals[r["date"]]
        total["keys"] += r["keys"]
        total["mismatches"] += r["mismatches"] + (r["open_mismatches"] if r["continued"] else 0)
        total["unverified"] += 0 if r["continued"] else r["open_keys"]
    examples: dict[date, list] = defaultdict(list)
    if any(t["mismatches"] for t in totals.values()):  # computed again, only to show a few
        rank = Window.partitionBy("date").orderBy("window", "key")
        judged_here = ~F.col("open") | F.col("continued").isNotNull()
        if continued:
            judged = judged.join(F.broadcast(spark.createDataFrame(continued, "window string, date date")
                                             .withColumn("continued", F.lit(True))), ["window", "date"], "left")
        else:
            judged = judged.withColumn("continued", F.lit(None).cast("boolean"))
        for r in (judged.where(F.col("mismatch") & judged_here).withColumn("n", F.row_number().over(rank))
                  .where(F.col("n") <= SAMPLE_ROWS).collect()):
            examples[r["date"]].append({"key": r["key"], "window": r["window"],
                                        "expected": json_safe(r["expected"].asDict()),
                                        "snapshot": json_safe(r["snapshot"].asDict())})
    outcomes = {}
    for day in days:
        total = totals[day]
        mismatches = total["mismatches"]
        metadata: dict[str, Any] = {
            "keys_compared": total["keys"], "mismatches": mismatches,
            "unverified_without_previous_snapshot": total["unverified"]}
        if examples[day]:
            metadata["sample_rows"] = examples[day]
        outcomes[day] = Outcome(mismatches == 0, metadata)
    return outcomes


def evaluate(inputs: Inputs) -> Results:
    """Below a day, a day's snapshot is written by its last part: a day not ended yet has none
    to judge, and passes saying so."""
    days = inputs.days if inputs.until is None else inputs.days[:-1]
    results: Results = {}
    if days:
        snapshots = inputs.read(WINDOW_SNAPSHOT, "date", days[0] - timedelta(days=1), days[-1])
        current = snapshots.where(snapshots["date"] >= days[0])
        calls = {SUITE: lambda: run_suite(current, prepare(current, inputs.config, days),
                                          suite(inputs.config), days, inputs.selected)}
        if "snapshot_matches_last_change" in inputs.selected:
            changes = of_sliding_windows(inputs.read(WINDOW_CHANGES, "date", days[0], days[-1]), inputs.config)
            calls["snapshot_matches_last_change"] = lambda: {"snapshot_matches_last_change": (
                snapshot_matches_last_change(snapshots, changes, inputs.config, days))}
        results = side_by_side_results(inputs.spark, calls)
    for day in inputs.days[len(days):]:
        for name in inputs.selected:
            results.setdefault(name, {})[day] = Outcome(True, {
                "judged": f"nothing yet: the snapshot of {day} is written by its last part, after {inputs.until}"})
    return results
