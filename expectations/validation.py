"""Running a suite: Great Expectations 1.x validates a table's rows and schema on Spark, and each
check's result becomes one ``Outcome`` per day.

Great Expectations runs through an ephemeral context (no Great Expectations project on disk), one
per process: a Spark data source, a dataframe asset and a whole-dataframe batch definition. It is
imported when a check runs (about 4 s), not when Dagster loads the definitions.

Each expectation carries the name of the check it belongs to (``meta["check"]``); a check passes
when all of its expectations pass. A range of days is validated as one batch: the row
expectations hold for the range exactly when they hold for every day in it, so only a failing
check is validated again day by day, to say which partitions fail. The schema is validated on
the table as read, before any derived column is added.

Great Expectations (1.24) computes the unexpected rows of every column expectation of a batch in
one aggregate query, but a column-pair or compound-column expectation in a Spark query of its
own (about 0.2 s and 0.35 s each on a small day, against 0.1 s for any number of column ones).
So the range's pass-or-fail batch asks each of those as a column expectation over its own
condition, derived as Great Expectations defines it (``_as_column_expectation``); the detailed
batch of a failing day asks the expectation itself, for its counts and sample rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType
from pyspark.sql.utils import is_remote

from expectations.check import Outcome
from jobs.runtime.computed_once import computed_once

SAMPLE_ROWS = 5

Pairs = list[tuple[str, Any]]  # (check name, expectation)


@dataclass(frozen=True)
class Suite:
    name: str
    day_column: str  # the partition column: one batch per day when a check fails
    sample_columns: list[str]  # what a person sees of an offending row
    declared: list[tuple[str, str]]  # the table's columns and Spark DDL types, in order
    build: Callable[[], Pairs]  # fresh expectations each time (an expectation joins one suite)


def _spark_type_name(ddl: str) -> str:
    """``bigint`` -> ``LongType``: the class name Great Expectations compares for Spark."""
    return type(DataType.fromDDL(ddl)).__name__


def readable_columns(declared: list[tuple[str, str]]) -> list[str]:
    return [name for name, ddl in declared if ddl != "binary"]  # sketches say nothing to a person


def gx_expectations():
    import great_expectations.expectations as gxe

    return gxe


def not_negative(columns: Iterable[str], minimum: int = 0) -> list:
    gxe = gx_expectations()
    return [gxe.ExpectColumnValuesToBeBetween(column=c, min_value=minimum) for c in columns]


def _as_column_expectation(expectation, column: str) -> tuple[Column, Any] | None:
    """A column-pair or compound-column expectation as a boolean column (true: as expected;
    null: a row the expectation ignores) and a column expectation over it that holds exactly
    when the original does; None for any other expectation. The conditions are Great
    Expectations' own for Spark (its ``_spark`` metric functions and ``get_domain_records``)."""
    gxe = gx_expectations()
    if getattr(expectation, "mostly", 1) != 1 or getattr(expectation, "row_condition", None):
        return None
    ignore = expectation.ignore_row_if if hasattr(expectation, "ignore_row_if") else None
    if isinstance(expectation, (gxe.ExpectColumnPairValuesToBeEqual, gxe.ExpectColumnPairValuesAToBeGreaterThanB)):
        a, b = F.col(expectation.column_A), F.col(expectation.column_B)
        if isinstance(expectation, gxe.ExpectColumnPairValuesToBeEqual):
            expected = a.eqNullSafe(b)
        else:
            expected = ((a >= b) | a.eqNullSafe(b)) if expectation.or_equal else a > b
        ignored = {"both_values_are_missing": a.isNull() & b.isNull(),
                   "either_value_is_missing": a.isNull() | b.isNull(), "neither": None}[ignore]
    elif isinstance(expectation, gxe.ExpectCompoundColumnsToBeUnique):
        columns = [F.col(c) for c in expectation.column_list]
        expected = F.count(F.lit(1)).over(Window.partitionBy(*columns)) <= 1
        missing = [c.isNull() for c in columns]
        ignored = {"all_values_are_missing": reduce(lambda x, y: x & y, missing),
                   "any_value_is_missing": reduce(lambda x, y: x | y, missing), "never": None}[ignore]
    else:
        return None
    condition = expected if ignored is None else F.when(~ignored, expected)
    return condition, gxe.ExpectColumnValuesToBeInSet(column=column, value_set=[True])


def _bundled(frame: DataFrame, pairs: Pairs) -> tuple[DataFrame, Pairs]:
    """``pairs`` with every column-pair and compound-column expectation asked as a column
    expectation over a derived column of ``frame`` (added here), which Great Expectations
    computes in its one aggregate query; each keeps the original's type and arguments in its
    ``meta``, which is what the results show."""
    derived: dict[str, Column] = {}
    asked: Pairs = []
    for check, expectation in pairs:
        column = f"__expected_{len(derived)}"
        rewritten = _as_column_expectation(expectation, column)
        if rewritten is None:
            asked.append((check, expectation))
            continue
        derived[column], replacement = rewritten
        shown = expectation.configuration
        replacement.meta = {**expectation.meta, "shown_as": {"type": shown.type, "kwargs": json_safe(shown.kwargs)}}
        asked.append((check, replacement))
    return (frame.withColumns(derived) if derived else frame), asked


_BATCHES: list = []  # one ephemeral context per process: each new one makes a temporary folder


def _batch_definition():
    if not _BATCHES:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = context.data_sources.add_spark(name="panes", persist=False)  # the caller computes once
        asset = source.add_dataframe_asset(name="table")
        _BATCHES.append(asset.add_batch_definition_whole_dataframe("whole"))
    return _BATCHES[0]


def _validate(frame: DataFrame, expectations: list, sample_columns: list[str], name: str,
              detailed: bool = True) -> list:
    """Great Expectations' results for these expectations on this DataFrame (a whole batch):
    with unexpected counts and sample rows when ``detailed``, else only pass or fail."""
    import great_expectations as gx

    batch = _batch_definition().get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=name, expectations=expectations)
    result_format = {
        "result_format": "SUMMARY",
        "partial_unexpected_count": SAMPLE_ROWS,
        "unexpected_index_column_names": sample_columns,
        "return_unexpected_index_query": False,
    } if detailed and sample_columns else "BOOLEAN_ONLY" if not detailed else "SUMMARY"
    return batch.validate(suite, result_format=result_format).results


def json_safe(value: Any) -> Any:
    """A JSON-friendly copy for Dagster metadata."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return value


def _summaries(results: list) -> dict[str, dict[str, Any]]:
    """Per check: passed, the unexpected row count, each expectation's result, sample rows."""
    by_check: dict[str, dict[str, Any]] = {}
    for r in results:
        config = r.expectation_config
        check = config.meta["check"]
        shown = config.meta.get("shown_as") or {"type": config.type, "kwargs": config.kwargs}
        summary = by_check.setdefault(check, {"passed": True, "unexpected_rows": 0, "expectations": [],
                                              "sample_rows": []})
        result = r.result or {}
        error = (r.exception_info or {}).get("exception_message") if not r.success else None
        item = {"expectation": shown["type"], **{k: json_safe(v) for k, v in shown["kwargs"].items()
                                                if k not in ("batch_id", "result_format")},
                "success": bool(r.success)}
        if "unexpected_count" in result:
            item["unexpected_count"] = result["unexpected_count"]
        if "observed_value" in result:
            item["observed_value"] = json_safe(result["observed_value"])
        if error:
            item["error"] = error
        summary["expectations"].append(item)
        if not r.success:
            summary["passed"] = False
            summary["unexpected_rows"] += int(result.get("unexpected_count") or 0)
            room = SAMPLE_ROWS - len(summary["sample_rows"])
            summary["sample_rows"] += json_safe(result.get("partial_unexpected_index_list") or [])[:room]
    return by_check


def _outcome(summary: dict[str, Any], rows: int, suite: Suite) -> Outcome:
    metadata = {"rows_checked": rows, "great_expectations_suite": suite.name,
                "expectations": summary["expectations"]}
    if not summary["passed"]:
        metadata["unexpected_rows"] = summary["unexpected_rows"]
        if summary["sample_rows"]:
            metadata["sample_rows"] = summary["sample_rows"]
    return Outcome(summary["passed"], metadata)


def run_suite(table: DataFrame, prepared: DataFrame, suite: Suite, days: list[date],
              selected: set[str] | None = None) -> dict[str, dict[date, Outcome]]:
    """Validate the range once; validate a failing check again per day to find the failing days.

    ``table`` is the table as read (for the schema), ``prepared`` the same rows with the derived
    columns. Returns ``{check: {day: Outcome}}`` for the selected checks (all when None).
    """
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    pairs = [(c, e) for c, e in suite.build() if selected is None or c in selected]
    outcomes: dict[str, dict[date, Outcome]] = {}
    if selected is None or "schema_matches_declared" in selected:
        outcome = schema_outcome(table, suite)
        outcomes["schema_matches_declared"] = {d: outcome for d in days}
    if not pairs:
        return outcomes
    for check, expectation in pairs:
        expectation.meta = {"check": check}
    prepared, asked = _bundled(prepared, pairs)
    # Computed once: every Great Expectations query then plans a leaf, not the read and the
    # derived columns (docs/performance.md, "A small day's checks").
    prepared, rows = _computed_once_with_day_rows(prepared, suite.day_column, days)
    try:
        # The range in one batch, asking only pass or fail: counts and samples cost Spark jobs
        # per expectation, so they are asked for again only where something failed.
        summaries = _summaries(_validate(prepared, [e for _, e in asked], suite.sample_columns, suite.name,
                                         detailed=False))
        failing = {c for c, s in summaries.items() if not s["passed"]}
        for check, summary in summaries.items():
            outcomes[check] = {d: _outcome(summary, rows.get(d, 0), suite) for d in days}
        for day in days if failing else []:  # one detailed batch per day, with the failing checks only
            if not rows.get(day):  # no rows that day: nothing there can fail a row expectation
                for check in failing:
                    outcomes[check][day] = Outcome(True, {"rows_checked": 0,
                                                          "great_expectations_suite": suite.name})
                continue
            again = [(c, e) for c, e in suite.build() if c in failing]
            for check, e in again:
                e.meta = {"check": check}
            one_day = prepared if len(days) == 1 else prepared.where(F.col(suite.day_column) == F.lit(day))
            day_summaries = _summaries(_validate(one_day, [e for _, e in again], suite.sample_columns,
                                                 suite.name))
            for check in failing:
                outcomes[check][day] = _outcome(day_summaries[check], rows[day], suite)
    finally:
        prepared.unpersist()
    return outcomes


def _computed_once_with_day_rows(prepared: DataFrame, day_column: str,
                                 days: list[date]) -> tuple[DataFrame, dict[date, int]]:
    """``prepared`` computed once, and its rows on each day, counted by the same Spark job (an
    ``Observation`` on the checkpoint) rather than by a query of their own: on a small day each
    Spark job is most of its cost. Spark Connect persists instead, lazily, so there a query counts."""
    if is_remote() or not days:
        prepared = computed_once(prepared)
        return prepared, {r[0]: r[1] for r in prepared.groupBy(day_column).count().collect()}
    counted = Observation()  # a name of its own: the checks of several tables may share a session
    prepared = computed_once(prepared.observe(
        counted, *[F.count_if(F.col(day_column) == F.lit(d)).alias(d.isoformat()) for d in days]))
    return prepared, {d: counted.get[d.isoformat()] for d in days}


def schema_outcome(table: DataFrame, suite: Suite) -> Outcome:
    """The table's columns, order and types against the declared ones (no data is read)."""
    gxe = gx_expectations()
    present = set(table.columns)
    expectations = [gxe.ExpectTableColumnsToMatchOrderedList(column_list=[n for n, _ in suite.declared])]
    expectations += [gxe.ExpectColumnValuesToBeOfType(column=n, type_=_spark_type_name(t))
                     for n, t in suite.declared if n in present]
    for e in expectations:
        e.meta = {"check": "schema_matches_declared"}
    summary = _summaries(_validate(table.limit(0), expectations, [], suite.name))["schema_matches_declared"]
    # Great Expectations compares type classes only: a decimal's precision and scale are compared here
    actual = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    retyped = [n for n, t in suite.declared if n in actual and actual[n] != DataType.fromDDL(t).simpleString()]
    summary["passed"] = summary["passed"] and not retyped
    outcome = _outcome(summary, 0, suite)
    outcome.metadata.pop("rows_checked")
    outcome.metadata["declared"] = [f"{n} {t}" for n, t in suite.declared]
    if not outcome.passed:
        outcome.metadata["problem"] = "the table's columns differ from the declared ones"
        outcome.metadata["actual"] = [f"{f.name} {f.dataType.simpleString()}" for f in table.schema.fields]
    return outcome
