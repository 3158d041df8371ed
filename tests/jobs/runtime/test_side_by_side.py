"""Side by side: each call in a thread of its own, in the caller's job group, its Spark jobs
described by its label; the caller's own description left as it was."""

import pytest

from jobs.runtime.side_by_side import side_by_side

STEP = "panes: windows 2025-01-27"


def counted_with_description(spark, rows: int):
    """A call running a Spark job, returning its count and the description its jobs carry."""
    def call():
        return spark.range(rows).count(), spark.sparkContext.getLocalProperty("spark.job.description")
    return call


def test_each_call_runs_its_spark_jobs_under_its_label_in_the_callers_group(spark):
    sc = spark.sparkContext
    sc.setJobGroup("side-by-side-test", STEP)
    try:
        results = side_by_side(spark, {"write window_changes": counted_with_description(spark, 3),
                                       "write window_snapshot": counted_with_description(spark, 5)})
        assert results == [(3, f"{STEP}: write window_changes"), (5, f"{STEP}: write window_snapshot")]
        assert side_by_side(spark, {"suite": counted_with_description(spark, 2)}) == [(2, f"{STEP}: suite")]
        assert sc.getLocalProperty("spark.job.description") == STEP
        assert len(sc.statusTracker().getJobIdsForGroup("side-by-side-test")) >= 3  # the threads' jobs too
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)


def test_a_failing_call_is_raised_and_leaves_the_callers_description_alone(spark):
    sc = spark.sparkContext

    def fails():
        raise ZeroDivisionError("the call's own error")

    with pytest.raises(ZeroDivisionError, match="the call's own error"):
        side_by_side(spark, {"alone": fails})
    assert sc.getLocalProperty("spark.job.description") is None
    with pytest.raises(ZeroDivisionError):
        side_by_side(spark, {"fails": fails, "counts": counted_with_description(spark, 4)})
    assert sc.getLocalProperty("spark.job.description") is None
