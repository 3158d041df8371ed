"""``spine_values``' checks: no value read from after its row."""


from expectations import spine_values as spine_checks
from expectations import validation
from windowing_core.config import PipelineConfig


def test_values_not_after_row_time_fails_a_value_read_from_after_its_row(spark):
    """A row whose window ends after its ts (or, exclusive, at it) or whose value was read from a
    row after that end fails; the rows that read at or before their ts pass."""
    from datetime import date, datetime

    from jobs.point_in_time_join import readings
    from windowing_core.spine import SpineSpec
    from windowing_core.window_spec import WindowSpec

    day = date(2025, 1, 28)
    t = lambda h, m=0: datetime(2025, 1, 28, h, m)  # noqa: E731
    #   ts 12:00   window_end   read_at
    #   ok         12:00        11:50
    #   leak       12:10        -          the window read ends after ts
    #   leak       12:00        12:05      the row it came from is after the window's end
    rows = [("k", t(12), t(12), t(11, 50)), ("k", t(12), t(12, 10), None), ("k", t(12), t(12), t(12, 5))]
    for exclusive, failing in ((False, 2), (True, 3)):
        config = PipelineConfig(windows=(WindowSpec.of("w", "1h", "10m"),), spine=SpineSpec(path="/s", exclusive=exclusive))
        values = spark.createDataFrame([(*r, 1, 1, day) for r in rows],
                                       "user_id string, ts timestamp, w__window_end timestamp, w__read_at timestamp, "
                                       "w__event_count bigint, w__count bigint, date date")
        spine = config.spine
        outcome = validation.run_suite(values, spine_checks.prepare(values, spine, readings(spine, config)),
                            spine_checks.suite(spine), [day], {"values_not_after_row_time"})
        outcome = outcome["values_not_after_row_time"][day]
        assert not outcome.passed and outcome.metadata["unexpected_rows"] == failing, exclusive
        clean = spark.createDataFrame([("k", t(12), t(11, 50), t(11, 40), 1, 1, day)], values.schema)
        assert validation.run_suite(clean, spine_checks.prepare(clean, spine, readings(spine, config)), spine_checks.suite(spine),
                         [day], {"values_not_after_row_time"})["values_not_after_row_time"][day].passed
