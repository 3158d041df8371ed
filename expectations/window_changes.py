"""The checks of ``window_changes``: change points on their grid, once each, never repeating a
value, and equal to the windows recomputed from the frames (``conservation``)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, timedelta
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from expectations import conservation
from expectations.check import ERROR, Check, Outcome
from expectations.inputs import SUITE, Inputs, Results, side_by_side_results
from expectations.shared_checks import (
    count_outputs, empty_values, kind_checks, off_grid, per_window, same_values, value_checks, window_lengths,
    window_name_checks, with_kind_columns,
)
from expectations.validation import Pairs, Suite, gx_expectations, not_negative, readable_columns, run_suite
from expectations.written_whole import tables_written_whole
from jobs import sliding_windows
from jobs.storage import delta_io
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES, day_filter, declared_columns
from jobs.windows import window_inputs
from windowing_core.config import PipelineConfig

TABLE = WINDOW_CHANGES


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``window_changes``."""
    return [
        Check("keys_not_null", WINDOW_CHANGES.name, ERROR,
              "Change points without a key: their values cannot be served."),
        Check("windows_declared", WINDOW_CHANGES.name, ERROR,
              "Rows for a window that is not configured (a stale name, a typo): nobody reads them."),
        Check("window_ends_on_grid", WINDOW_CHANGES.name, ERROR,
              "A window_end off its window's grid (offset + length + k * slide): the windows are "
              "shifted, so every value is of the wrong interval. Session windows have no grid: exempt."),
        Check("window_length_matches_spec", WINDOW_CHANGES.name, ERROR,
              "window_start is not window_end minus the window's length (a cumulating window's: its "
              "period's start): the row misstates its interval. A session's length is its own: exempt."),
        Check("window_ends_inside_partition", WINDOW_CHANGES.name, ERROR,
              "Change points stored under another day than their window_end's: a re-run of one "
              "day would leave or drop them."),
        Check("change_points_unique", WINDOW_CHANGES.name, ERROR,
              "Two rows for one key, window and window_end: a reader cannot tell which holds."),
        Check("no_repeated_change_points", WINDOW_CHANGES.name, ERROR,
              "Two consecutive change points of a key and window with the same values (the first "
              "of a day compared with the previous day's snapshot): a broken change filter, which "
              "also breaks the 'only changes' row budget. Windows emitting 'final' rows (and "
              "sessions) are exempt."),
        Check("counts_non_negative", WINDOW_CHANGES.name, ERROR,
              "A negative windowed count or event_count: a frame deducted that never entered, or "
              "deducted twice."),
        Check("changes_conserve_frames", WINDOW_CHANGES.name, ERROR,
              "Change points that drift from the frames: for a sample of keys each day, every window "
              "value is recomputed directly from minute_partials (a fold of the frames inside each "
              "window) and the change points must be exactly the ends where it changes, with those "
              "values."),
        Check("partials_materialised", WINDOW_CHANGES.name, ERROR,
              "A window day computed over event days whose minute partials were never "
              "materialised though their events were ingested: their frames neither entered nor "
              "left, so every value is wrong and nothing else fails."),
        Check("tables_written_whole", WINDOW_CHANGES.name, ERROR,
              "window_changes and window_snapshot (and session_state, count_state) from different runs: a run "
              "stopped between their commits left a day's change points beside an earlier run's "
              "snapshot, from which the next day would continue. Read from the Delta logs' write ids."),
        Check("schema_matches_declared", WINDOW_CHANGES.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: serving reads would break."),
    ]


def suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(WINDOW_CHANGES.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            *window_name_checks(config),
            ("window_ends_on_grid", gxe.ExpectColumnValuesToBeInSet(column="window_end_off_grid_seconds",
                                                                    value_set=[0])),
            ("window_length_matches_spec", gxe.ExpectColumnPairValuesToBeEqual(
                column_A="window_length_seconds", column_B="declared_length_seconds")),
            ("window_ends_inside_partition", gxe.ExpectColumnPairValuesToBeEqual(column_A="window_end_date",
                                                                                 column_B="date")),
            ("change_points_unique", gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["key", "window", "window_end", "date"])),
            ("no_repeated_change_points", gxe.ExpectColumnValuesToBeInSet(column="repeats_previous_value",
                                                                          value_set=[False])),
            *[("counts_non_negative", e) for e in not_negative(["event_count", *count_outputs(config)])],
            *value_checks(config),
            *kind_checks(config),
        ]

    return Suite(WINDOW_CHANGES.name, "date", readable_columns(declared), declared, build)


def prepare(changes: DataFrame, previous_snapshot: DataFrame | None,
                           config: PipelineConfig, continued: Collection[str] = ()) -> DataFrame:
    """Add the grid, length, partition and repetition columns the change-point suite expects.

    ``previous_snapshot``: the rows of the windows ``continued`` in the snapshot of the day
    before the first day in ``changes`` (``window_inputs.read_snapshot``). A key's first change
    point in the range of such a window is compared with it (a key missing from it was empty);
    in other windows (no snapshot, or one of another definition of the window) it is not judged.
    """
    end = F.unix_seconds("window_end")
    values = [a.name for a in config.aggregations]
    by_key = Window.partitionBy("key", "window").orderBy("window_end")
    frame = changes.withColumns({
        "window_end_off_grid_seconds": per_window(  # -1: no window_end
            config, lambda s: F.coalesce(F.pmod(end - F.lit(s.end_offset), F.lit(s.every)), F.lit(-1))),
        **window_lengths(end, config),
        "window_end_date": F.to_date("window_end"),
        "__has_previous": F.lag("window_end").over(by_key).isNotNull(),
        **{f"__previous_{v}": F.lag(v).over(by_key) for v in values},
    })
    if previous_snapshot is not None:
        before = previous_snapshot.select("key", "window", F.lit(True).alias("__in_snapshot"),
                                          *[F.col(v).alias(f"__snapshot_{v}") for v in values])
        frame = frame.join(before, ["key", "window"], "left")
        empty = empty_values(config)
        carried = {v: F.when(F.col("__in_snapshot"), F.col(f"__snapshot_{v}")).otherwise(empty[v])
                   for v in values}
    current = {v: F.col(v) for v in values}
    previous = {v: F.col(f"__previous_{v}") for v in values}
    final = per_window(config, lambda s: F.lit(s.emit == "final"))  # one row per window: may repeat
    repeats = F.when(final | off_grid(config), F.lit(None).cast("boolean")).when(
        F.col("__has_previous"), same_values(config, current, previous))
    if previous_snapshot is not None and continued:
        repeats = repeats.when(F.col("window").isin(sorted(continued)), same_values(config, current, carried))
    helpers = [c for c in frame.columns if c.startswith("__")]
    return with_kind_columns(frame.withColumn("repeats_previous_value", repeats).drop(*helpers), config)


def of_sliding_windows(changes: DataFrame, config: PipelineConfig) -> DataFrame:
    """The change points of sliding windows: the reconciliations with frames and snapshots do
    not apply to session rows (one final row per session, in no snapshot; the oracle tests
    them, ``windowing_core.sessions``)."""
    return changes.where(changes["window"].isin([w.name for w in config.windows]))


def partials_materialised(inputs: Inputs) -> dict[date, Outcome]:
    """Per window day: whether that event day's partials (the frames entering its windows) were
    materialised wherever its events were ingested (``window_inputs.unmaterialised_partials``)."""
    missing = set(window_inputs.unmaterialised_partials(inputs.spark, inputs.lakehouse_root, inputs.days,
                                                          inputs.config))
    path = MINUTE_PARTIALS.path(inputs.lakehouse_root)
    exists = delta_io.table_exists(path)

    def looked_at(day: date) -> dict[str, Any]:  # from the Delta log's statistics: no Spark job
        frames = delta_io.row_count(path, partition_filters=day_filter("event_date", day, day)) if exists else 0
        return {"event_day": day.isoformat(), "minute_partials_frames": frames}

    return {day: Outcome(False, {"problem": f"minute_partials of {day} were never materialised, though "
                                            "events holds events of that day", **looked_at(day)})
            if day in missing else Outcome(True, looked_at(day)) for day in inputs.days}


def evaluate(inputs: Inputs) -> Results:
    changes = inputs.through(inputs.read(WINDOW_CHANGES, "date", inputs.first, inputs.last), "window_end")
    day_before = inputs.first - timedelta(days=1)
    # Only the windows the job continued: the first change points of the others (none
    # materialised, every key empty, or another definition of the window) are not judged.
    continued = window_inputs.continued_windows(inputs.spark, inputs.lakehouse_root, day_before, inputs.config)
    previous = window_inputs.read_snapshot(inputs.spark, inputs.lakehouse_root, day_before, continued)
    results = {}
    if "partials_materialised" in inputs.selected:
        results["partials_materialised"] = partials_materialised(inputs)
    if "tables_written_whole" in inputs.selected:
        results["tables_written_whole"] = tables_written_whole(inputs, WINDOW_CHANGES)
    calls = {SUITE: lambda: run_suite(changes, prepare(changes, previous, inputs.config, continued),
                                      suite(inputs.config), inputs.days, inputs.selected)}
    # recomputed from minute frames: the event-time sliding windows (arrival-time windows slide
    # over other frames, sessions are no sliding windows; the oracle tests both)
    event_time = sliding_windows.by_clock(inputs.config, "event")
    if "changes_conserve_frames" in inputs.selected and event_time is None:  # nothing of minute frames
        results["changes_conserve_frames"] = {d: Outcome(True, {"keys_checked": 0}) for d in inputs.days}
    elif "changes_conserve_frames" in inputs.selected:
        reach = timedelta(days=conservation.frames_reach_days(inputs.config))
        frames = delta_io.partition_row_counts(  # exact or None: whether the frames are few enough to collect
            MINUTE_PARTIALS.path(inputs.lakehouse_root), "event_date",
            partition_filters=day_filter("event_date", inputs.first - reach, inputs.last))
        partials = inputs.through(inputs.read(MINUTE_PARTIALS, "event_date", inputs.first - reach, inputs.last),
                                  "frame_start")
        rows = delta_io.row_count(WINDOW_CHANGES.path(inputs.lakehouse_root),  # the sample's estimate
                                  partition_filters=day_filter("date", inputs.first, inputs.last))
        calls["changes_conserve_frames"] = lambda: {"changes_conserve_frames": (
            conservation.changes_conserve_frames(
                of_sliding_windows(changes, event_time), partials, event_time, inputs.days, rows=rows,
                frame_count=None if frames is None else sum(frames.values()), until=inputs.until))}
    return {**results, **side_by_side_results(inputs.spark, calls)}
