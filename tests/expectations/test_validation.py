"""Running a suite: the column-pair and compound-column expectations the range's batch asks as
column expectations over derived conditions find exactly the rows Great Expectations' own find."""

import pytest

from expectations import events as events_checks
from expectations import minute_partials as partials_checks
from expectations import validation
from expectations import window_changes as changes_checks
from jobs.tables import EVENTS, MINUTE_PARTIALS, WINDOW_CHANGES, declared_columns
from tests.expectations.frames import DAY, SUITE_CONFIG, TYPED, at, table

ROWS = [  # k, a, b: equal, greater, smaller, one or both missing, and repeated (k, a) with nulls
    ("x", 1, 1), ("x", 2, 1), ("y", 1, 2), ("y", None, 1), ("z", 1, None), ("z", None, None),
    ("z", None, None), (None, None, 3), (None, None, 4), ("x", 1, 5), (None, 7, 7), (None, 7, 8),
]


def _expectations() -> list:
    """Every rewritten kind, with each of its ways to ignore a row."""
    gxe = validation.gx_expectations()
    made = []
    for ignore in ("both_values_are_missing", "either_value_is_missing", "neither"):
        made.append(gxe.ExpectColumnPairValuesToBeEqual(column_A="a", column_B="b", ignore_row_if=ignore))
        made += [gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="a", column_B="b", or_equal=or_equal,
                                                             ignore_row_if=ignore) for or_equal in (True, False)]
    made += [gxe.ExpectCompoundColumnsToBeUnique(column_list=["k", "a"], ignore_row_if=ignore)
             for ignore in ("all_values_are_missing", "any_value_is_missing", "never")]
    return made


def _unexpected(frame, expectations: list) -> list[int]:
    """Great Expectations' unexpected row count of each expectation on ``frame``, in order."""
    for i, e in enumerate(expectations):
        e.meta = {"check": str(i)}
    import great_expectations as gx

    batch = validation._batch_definition().get_batch(batch_parameters={"dataframe": frame})
    results = batch.validate(gx.ExpectationSuite(name="agreement", expectations=expectations),
                             result_format={"result_format": "BASIC", "partial_unexpected_count": 0}).results
    counts = {r.expectation_config.meta["check"]: int(r.result.get("unexpected_count") or 0) for r in results}
    return [counts[str(i)] for i in range(len(expectations))]


def test_an_expectation_asked_as_a_column_expectation_fails_the_same_rows(spark):
    frame = spark.createDataFrame(ROWS, "k string, a bigint, b bigint")
    rewritten = [validation._as_column_expectation(e, f"__expected_{i}") for i, e in enumerate(_expectations())]
    derived = frame.withColumns({f"__expected_{i}": condition for i, (condition, _) in enumerate(rewritten)})
    want = _unexpected(frame, _expectations())
    assert _unexpected(derived, [asked for _, asked in rewritten]) == want
    assert all(want)  # every one finds a row here, so agreeing is not agreeing on nothing
    assert len(set(want)) > 2  # and they differ in how many


def test_a_suite_shows_the_expectations_it_was_given(spark):
    """The range's batch asks a rewritten expectation, but its results name the original."""
    gxe = validation.gx_expectations()
    pairs = [("equal", gxe.ExpectColumnPairValuesToBeEqual(column_A="a", column_B="b"))]
    for check, e in pairs:
        e.meta = {"check": check}
    frame, asked = validation._bundled(spark.createDataFrame(ROWS, "k string, a bigint, b bigint"), pairs)
    (summary,) = validation._summaries(validation._validate(frame, [e for _, e in asked], [], "shown",
                                                            detailed=False)).values()
    assert summary["expectations"][0]["expectation"] == "expect_column_pair_values_to_be_equal"
    assert summary["expectations"][0]["column_A"] == "a" and not summary["passed"]


@pytest.mark.parametrize("change", ["renamed", "retyped", "reordered", "extra"])
def test_schema_matches_declared_fails_on_a_changed_schema(spark, change):
    declared = declared_columns(WINDOW_CHANGES.name, SUITE_CONFIG)
    columns = {
        "renamed": [("user", "string"), *declared[1:]],
        "retyped": [(n, "string" if n == "count" else t) for n, t in declared],
        "reordered": [declared[1], declared[0], *declared[2:]],
        "extra": [*declared[:-1], ("debug", "string"), declared[-1]],
    }[change]
    suite = changes_checks.suite(SUITE_CONFIG)
    assert validation.schema_outcome(table(spark, declared, []), suite).passed
    outcome = validation.schema_outcome(table(spark, columns, []), suite)
    assert not outcome.passed
    assert outcome.metadata["actual"] == [f"{n} {t}" for n, t in columns]


def test_derived_columns_are_not_part_of_the_schema(spark):
    """The schema is judged on the table as read, not on the frame the row checks see."""
    frame = table(spark, declared_columns(MINUTE_PARTIALS.name, SUITE_CONFIG),
                  [{"key": "a", "frame_start": at(DAY, 1), "event_date": DAY}])
    result = validation.run_suite(frame, partials_checks.prepare(frame, SUITE_CONFIG),
                                  partials_checks.suite(SUITE_CONFIG), [DAY], {"schema_matches_declared"})
    assert result["schema_matches_declared"][DAY].passed


def test_schema_matches_declared_tells_a_decimal_scale_and_a_field_type(spark):
    declared = declared_columns(WINDOW_CHANGES.name, TYPED)
    rescaled = [(n, "decimal(38,0)" if n == "revenue" else t) for n, t in declared]
    suite = changes_checks.suite(TYPED)
    assert validation.schema_outcome(table(spark, declared, []), suite).passed
    assert not validation.schema_outcome(table(spark, rescaled, []), suite).passed
    events = declared_columns(EVENTS.name, TYPED)
    assert ("amount", "decimal(12,2)") in events and ("page", "string") in events
    retyped = [(n, "double" if n == "amount" else t) for n, t in events]
    assert validation.schema_outcome(table(spark, events, []), events_checks.suite(TYPED)).passed
    assert not validation.schema_outcome(table(spark, retyped, []), events_checks.suite(TYPED)).passed
