"""Running a suite: the column-pair and compound-column expectations the range's batch asks as
column expectations over derived conditions find exactly the rows Great Expectations' own find."""

from expectations import validation

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
