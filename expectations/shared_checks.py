"""Checks and derived columns several tables share: the signs of stored counts and sums, the
finished values of a window (means within min and max, variances, Chronon's lists and maps), a
window row's name and length."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from expectations.check import (
    ERROR, K_LIST_KINDS, VARIANCE_KINDS, WARN, Check, counts_of_fields, has_mean_min_max, of_kinds,
)
from expectations.validation import Pairs, gx_expectations, not_negative
from jobs.tables import DAILY_PARTIALS, MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT
from jobs.windows.window_grid import window_start_of
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import WindowSpec


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of values several tables hold, where their aggregations are configured."""
    checks = []
    if of_kinds(config, "sum"):
        for table in (MINUTE_PARTIALS.name, DAILY_PARTIALS.name, WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("sums_non_negative", table, WARN,
                                "Negative sums: legal when inputs are negative (values are signed "
                                "integers), otherwise a deduction without its entry. Reports the keys."))
    if counts_of_fields(config):
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("counts_within_event_count", table, ERROR,
                                "A count of a field's values above the window's event count: a "
                                "count that took null values in, or partials from other events."))
    if has_mean_min_max(config):
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("mean_between_min_and_max", table, ERROR,
                                "A mean outside [min, max] of the same window: the aggregations "
                                "disagree about which events the window holds."))
    if of_kinds(config, *VARIANCE_KINDS):
        for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
            checks.append(Check("variances_non_negative", table, ERROR,
                                "A negative variance or standard deviation: moments from different "
                                "events, or a cancelling subtraction."))
    for kinds, name, description in (
            (("approx_percentile",), "percentiles_ordered",
             "A percentile array out of order (a higher percentile below a lower one): a sketch merged "
             "from partials of different values, or a broken finish."),
            (K_LIST_KINDS, "k_lists_at_most_k",
             "A first_k, last_k, top_k or bottom_k list longer than its k: a merge that kept too much."),
            (("histogram",), "histogram_counts_match_events",
             "A histogram whose counts disagree with the window's events: a count below 1 (a value that "
             "left the window still listed), or counts summing to more than event_count (to exactly "
             "event_count where the field is never null): a frame deducted that never entered.")):
        if of_kinds(config, *kinds):
            for table in (WINDOW_CHANGES.name, WINDOW_SNAPSHOT.name):
                checks.append(Check(name, table, ERROR, description))
    return checks


def count_outputs(config: PipelineConfig) -> list[str]:
    return [a.name for a in of_kinds(config, "count")]


def fields_of(config: PipelineConfig, kind: str, invertible_only: bool = False) -> list[str]:
    """Partial field columns of the aggregations of one kind (only the stored ones in a snapshot)."""
    return [c for a in of_kinds(config, kind) if a.invertible or not invertible_only
            for c in a.field_columns()]


def partial_sign_checks(config: PipelineConfig) -> Pairs:
    """Counts and sums stored in partials, shared by minute_partials and daily_partials."""
    return [*[("counts_non_negative", e) for e in not_negative(["event_count", *fields_of(config, "count")])],
            *[("sums_non_negative", e) for e in not_negative(fields_of(config, "sum"))]]


def value_checks(config: PipelineConfig) -> Pairs:
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


def kind_checks(config: PipelineConfig) -> Pairs:
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
    """What ``kind_checks`` expects, per aggregation: whether a percentile array is in
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


def window_name_checks(config: PipelineConfig) -> Pairs:
    gxe = gx_expectations()
    return [
        ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
        ("windows_declared", gxe.ExpectColumnValuesToNotBeNull(column="window")),
        ("windows_declared", gxe.ExpectColumnValuesToBeInSet(column="window",
                                                             value_set=config.window_names)),
    ]


def per_window(config: PipelineConfig, value: Callable[[WindowSpec], Column]) -> Column:
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


def window_lengths(end: Column, config: PipelineConfig) -> dict[str, Column]:
    """A row's window length (``end`` minus its window_start) beside its window's declared one
    (for a cumulating window, the length it has grown to at that end); both null for a session
    or count window, whose length is its own."""
    return {"window_length_seconds": F.when(~off_grid(config), end - F.unix_seconds("window_start")),
            "declared_length_seconds": per_window(
                config, lambda s: (end - window_start_of(end, s)).cast("long"))}
