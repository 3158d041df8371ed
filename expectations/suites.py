"""Each table's Great Expectations suite: which expectations make up each of its row checks.

Expectations that need the window specs or the rows around a row (the grid of window ends, the
previous change point) are expressed over derived columns added in Spark first (``prepare_*``),
so Great Expectations still only sees plain column expectations and reports them in its usual
shape. ``validation`` runs a suite.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import date
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from expectations.catalog import K_LIST_KINDS, VARIANCE_KINDS, counts_of_fields, has_mean_min_max, of_kinds
from expectations.validation import Pairs, Suite, gx_expectations, not_negative, readable_columns
from jobs.ingest.quarantine import quarantine_reasons
from jobs.as_of.reading import Reading
from jobs.tables import (
    DAILY_PARTIALS, EVENTS, MINUTE_PARTIALS, QUARANTINE, SPINE_VALUES, WINDOW_CHANGES, WINDOW_SNAPSHOT,
    declared_columns,
)
from jobs.windows.window_grid import window_start_of
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.spine import SpineSpec
from windowing_core.window_spec import DAY_SECONDS, WindowSpec

# -- expectations -----------------------------------------------------------------------------------


def _count_outputs(config: PipelineConfig) -> list[str]:
    return [a.name for a in of_kinds(config, "count")]


def _fields_of(config: PipelineConfig, kind: str, invertible_only: bool = False) -> list[str]:
    """Partial field columns of the aggregations of one kind (only the stored ones in a snapshot)."""
    return [c for a in of_kinds(config, kind) if a.invertible or not invertible_only
            for c in a.field_columns()]


def _partial_sign_checks(config: PipelineConfig) -> Pairs:
    """Counts and sums stored in partials, shared by minute_partials and daily_partials."""
    return [*[("counts_non_negative", e) for e in not_negative(["event_count", *_fields_of(config, "count")])],
            *[("sums_non_negative", e) for e in not_negative(_fields_of(config, "sum"))]]


def _value_checks(config: PipelineConfig) -> Pairs:
    """Checks on the finished values, shared by window_changes and window_snapshot."""
    gxe = gx_expectations()
    pairs: Pairs = [("sums_non_negative", e) for e in not_negative(a.name for a in of_kinds(config, "sum"))]
    variances = [a.name for a in of_kinds(config, *VARIANCE_KINDS)]
    pairs += [("variances_non_negative", e) for e in not_negative(variances)]
    pairs += [("counts_within_event_count", gxe.ExpectColumnPairValuesAToBeGreaterThanB(
        column_A="event_count", column_B=a.name, or_equal=True, ignore_row_if="either_value_is_missing"))
        for a in counts_of_fields(config)]
    if has_mean_min_max(config):
        low, high = of_kinds(config, "min")[0].name, of_kinds(config, "max")[0].name
        for mean in of_kinds(config, "mean"):  # an empty window has no mean, min or max: not judged
            for larger, smaller in ((mean.name, low), (high, mean.name)):
                pairs.append(("mean_between_min_and_max", gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                    column_A=larger, column_B=smaller, or_equal=True,
                    ignore_row_if="either_value_is_missing")))
    return pairs


def _kind_checks(config: PipelineConfig) -> Pairs:
    """Checks on the values of Chronon's kinds (lists and maps), over the columns
    ``with_kind_columns`` derives, shared by window_changes and window_snapshot."""
    gxe = gx_expectations()
    pairs: Pairs = [("counts_non_negative", e) for e in not_negative(a.name for a in of_kinds(config, "unique_count"))]
    pairs += [("percentiles_ordered", gxe.ExpectColumnValuesToBeInSet(column=f"{a.name}__ordered", value_set=[True]))
              for a in of_kinds(config, "approx_percentile")]
    pairs += [("k_lists_at_most_k", gxe.ExpectColumnValuesToBeBetween(column=f"{a.name}__length", min_value=0,
                                                                       max_value=a.k))
              for a in of_kinds(config, *K_LIST_KINDS)]
    for a in of_kinds(config, "histogram"):
        pairs.append(("histogram_counts_match_events", gxe.ExpectColumnValuesToBeBetween(
            column=f"{a.name}__least_count", min_value=1)))  # a value that no longer occurs leaves the map
        uncounted = {"min_value": 0, **({"max_value": 0} if field_never_null(config, a) else {})}
        pairs.append(("histogram_counts_match_events", gxe.ExpectColumnValuesToBeBetween(
            column=f"{a.name}__uncounted", **uncounted)))
    return pairs


def field_never_null(config: PipelineConfig, aggregation) -> bool:
    """Whether every event holds the aggregation's field: the one ``value`` of a configuration
    without declared ``fields`` does (a record without one counts 1); a declared field may be
    missing or null in any record."""
    return not config.fields


def with_kind_columns(frame: DataFrame, config: PipelineConfig) -> DataFrame:
    """What ``_kind_checks`` expects, per aggregation: whether a percentile array is in
    increasing order, a k-list's length, and a histogram's smallest count and the events it does
    not count (``event_count`` minus its counts' sum). Named ``<aggregation>__...``, which no
    output column can be (names hold no double underscore)."""
    columns = {}
    for a in of_kinds(config, "approx_percentile"):
        columns[f"{a.name}__ordered"] = F.col(a.name) == F.array_sort(F.col(a.name))
    for a in of_kinds(config, *K_LIST_KINDS):
        columns[f"{a.name}__length"] = F.size(F.col(a.name))
    for a in of_kinds(config, "histogram"):
        counts = F.map_values(F.col(a.name))
        columns[f"{a.name}__least_count"] = F.array_min(counts)
        columns[f"{a.name}__uncounted"] = F.col("event_count") - F.aggregate(counts, F.lit(0).cast("bigint"),
                                                                            lambda acc, n: acc + n)
    return frame.withColumns(columns) if columns else frame


def _window_name_checks(config: PipelineConfig) -> Pairs:
    gxe = gx_expectations()
    return [
        ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
        ("windows_declared", gxe.ExpectColumnValuesToNotBeNull(column="window")),
        ("windows_declared", gxe.ExpectColumnValuesToBeInSet(column="window",
                                                             value_set=config.window_names)),
    ]


def events_suite(config: PipelineConfig) -> Suite:
    """The events' declared columns (each measured field in its type); the reconciliation with
    the landing files is ``reconciliation.input_records_reconcile``."""
    declared = declared_columns(EVENTS.name, config)
    return Suite(EVENTS.name, "arrival_date", readable_columns(declared), declared, lambda: [])


def quarantine_suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(QUARANTINE.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [("quarantine_reasons_known", gxe.ExpectColumnValuesToBeInSet(
            column="reason", value_set=quarantine_reasons(config)))]

    return Suite(QUARANTINE.name, "arrival_date", ["source_file", "reason"], declared, build)


def minute_partials_suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(MINUTE_PARTIALS.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
            ("frames_on_bucket_grid", gxe.ExpectColumnValuesToBeInSet(column="frame_start_off_grid_seconds",
                                                                      value_set=[0])),
            ("frames_inside_partition", gxe.ExpectColumnPairValuesToBeEqual(column_A="frame_date",
                                                                            column_B="event_date")),
            ("frames_unique", gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["key", "frame_start", "event_date"])),
            *_partial_sign_checks(config),
        ]

    return Suite(MINUTE_PARTIALS.name, "event_date", readable_columns(declared), declared, build)


def daily_partials_suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(DAILY_PARTIALS.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
            ("tiles_unique", gxe.ExpectCompoundColumnsToBeUnique(column_list=["key", "event_date"])),
            *_partial_sign_checks(config),
        ]

    return Suite(DAILY_PARTIALS.name, "event_date", readable_columns(declared), declared, build)


def window_changes_suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(WINDOW_CHANGES.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            *_window_name_checks(config),
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
            *[("counts_non_negative", e) for e in not_negative(["event_count", *_count_outputs(config)])],
            *_value_checks(config),
            *_kind_checks(config),
        ]

    return Suite(WINDOW_CHANGES.name, "date", readable_columns(declared), declared, build)


def window_snapshot_suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(WINDOW_SNAPSHOT.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        counts = ["event_count", *_fields_of(config, "count", invertible_only=True), *_count_outputs(config)]
        return [
            *_window_name_checks(config),
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
              for e in not_negative(_fields_of(config, "sum", invertible_only=True))],
            *_value_checks(config),
            *_kind_checks(config),
        ]

    return Suite(WINDOW_SNAPSHOT.name, "date", readable_columns(declared), declared, build)


def spine_values_suite(spine: SpineSpec) -> Suite:

    def build() -> Pairs:
        gxe = gx_expectations()
        return [("values_not_after_row_time", gxe.ExpectColumnValuesToBeInSet(column="read_after_row_time",
                                                                             value_set=[False]))]

    # its columns are the spine's own and the join's: no declared schema to hold it to
    return Suite(SPINE_VALUES.name, "date", [*spine.key_columns, spine.ts], [], build)


# -- derived columns --------------------------------------------------------------------------------


def _per_window(config: PipelineConfig, value: Callable[[WindowSpec], Column]) -> Column:
    """A CASE over the row's sliding window name; null for a session window (no grid, no
    fixed length) or a window that is not configured."""
    case = None
    for spec in config.windows:
        branch = F.col("window") == spec.name
        case = F.when(branch, value(spec)) if case is None else case.when(branch, value(spec))
    return F.lit(None) if case is None else case


def off_grid(config: PipelineConfig) -> Column:
    """Whether a row is of a session or count window: the grid, length and repetition rules skip
    it (its bounds are its events' times, and a count window's next firing may repeat a value)."""
    names = [s.name for s in (*config.sessions, *config.counts)]
    return F.col("window").isin(names) if names else F.lit(False)


def empty_values(config: PipelineConfig) -> dict[str, Column]:
    """Each aggregation's finished value of an empty window, as a typed literal."""
    return {a.name: a.spark_empty_value() for a in config.aggregations}


def same_values(config: PipelineConfig, left: dict[str, Column], right: dict[str, Column]) -> Column:
    """Every finished value equal (null equals null)."""
    return reduce(lambda x, y: x & y, [a.spark_comparable(left[a.name]).eqNullSafe(a.spark_comparable(right[a.name]))
                                       for a in config.aggregations])


def prepare_minute_partials(partials: DataFrame, config: PipelineConfig) -> DataFrame:
    start = F.unix_seconds("frame_start")
    return partials.withColumns({
        # -1 for a missing frame_start, which no grid position matches
        "frame_start_off_grid_seconds": F.coalesce(F.pmod(start, F.lit(config.bucket)), F.lit(-1)),
        "frame_date": F.to_date("frame_start"),
    })


def prepare_window_changes(changes: DataFrame, previous_snapshot: DataFrame | None,
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
        "window_end_off_grid_seconds": _per_window(  # -1: no window_end
            config, lambda s: F.coalesce(F.pmod(end - F.lit(s.end_offset), F.lit(s.every)), F.lit(-1))),
        **_window_lengths(end, config),
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
    final = _per_window(config, lambda s: F.lit(s.emit == "final"))  # one row per window: may repeat
    repeats = F.when(final | off_grid(config), F.lit(None).cast("boolean")).when(
        F.col("__has_previous"), same_values(config, current, previous))
    if previous_snapshot is not None and continued:
        repeats = repeats.when(F.col("window").isin(sorted(continued)), same_values(config, current, carried))
    helpers = [c for c in frame.columns if c.startswith("__")]
    return with_kind_columns(frame.withColumn("repeats_previous_value", repeats).drop(*helpers), config)


def _window_lengths(end: Column, config: PipelineConfig) -> dict[str, Column]:
    """A row's window length (``end`` minus its window_start) beside its window's declared one
    (for a cumulating window, the length it has grown to at that end); both null for a session
    or count window, whose length is its own."""
    return {"window_length_seconds": F.when(~off_grid(config), end - F.unix_seconds("window_start")),
            "declared_length_seconds": _per_window(
                config, lambda s: (end - window_start_of(end, s)).cast("long"))}


def as_of_per_day(config: PipelineConfig, days: Iterable[date]) -> list[tuple[str, date, int]]:
    """(window, day, the day's last window end in epoch seconds): what a snapshot is as of."""
    return [(spec.name, day, spec.end_at_or_before(day_start(day) + DAY_SECONDS - 1))
            for spec in config.windows for day in days]


def prepare_window_snapshot(snapshot: DataFrame, config: PipelineConfig, days: list[date]) -> DataFrame:
    declared = snapshot.sparkSession.createDataFrame(
        as_of_per_day(config, days), "window string, date date, as_of_seconds long",
    ).select("window", "date", F.timestamp_seconds("as_of_seconds").alias("declared_as_of"))
    return with_kind_columns(snapshot.join(F.broadcast(declared), ["window", "date"], "left")
                             .withColumns(_window_lengths(F.unix_seconds("as_of"), config)), config)


# -- running a suite --------------------------------------------------------------------------------


def prepare_spine_values(values: DataFrame, spine: SpineSpec, read: list[tuple[str, Reading]]) -> DataFrame:
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
