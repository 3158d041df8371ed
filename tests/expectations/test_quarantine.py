"""``quarantine``'s checks: reasons ingest gives, and the share of a day rejected."""

import pytest

from expectations import quarantine as quarantine_checks
from expectations import validation
from expectations.catalog import checks_of
from expectations.quarantine import quarantine_share_below_limit
from jobs.tables import QUARANTINE, declared_columns
from tests.expectations.frames import (
    BEFORE, DAY, DAYS, EVENT_COLUMNS, LATE_COLUMNS, NEXT, QUARANTINE_COLUMNS, TYPED, table,
)


def test_quarantine_reasons_must_be_ones_ingest_gives_naming_the_field(spark):
    rows = [{"reason": "amount_beyond_scale", "arrival_date": DAY},
            {"reason": "value_not_integer", "source_file": "old.json", "arrival_date": DAY},  # no field value
            {"reason": "page_not_string", "arrival_date": NEXT}, {"reason": "malformed_json", "arrival_date": NEXT}]
    frame = table(spark, declared_columns(QUARANTINE.name, TYPED), rows)
    results = validation.run_suite(frame, frame, quarantine_checks.suite(TYPED), DAYS)
    assert not results["quarantine_reasons_known"][DAY].passed
    assert results["quarantine_reasons_known"][NEXT].passed
    assert {c.name for c in checks_of(TYPED, QUARANTINE.name)} == {"quarantine_reasons_known",
                                                                  "quarantine_share_below_limit"}


def test_quarantine_share_warns_above_the_limit_and_reports_reasons(spark):
    events = table(spark, EVENT_COLUMNS, [{"arrival_date": DAY}] * 9 + [{"arrival_date": NEXT}] * 100)
    quarantine = table(spark, QUARANTINE_COLUMNS, [
        {"reason": "truncated_gzip", "raw": None, "arrival_date": DAY},
        {"reason": "bad_encoding", "arrival_date": DAY}, {"reason": "malformed_json", "arrival_date": NEXT},
        # more rows of a reason than the sample shows: counted whole, shown in (reason, file) order
        *[{"reason": "bad_encoding", "source_file": f"f{i}", "arrival_date": BEFORE} for i in range(6, 0, -1)],
        {"reason": "malformed_json", "arrival_date": BEFORE}])
    late = table(spark, LATE_COLUMNS, [])
    outcomes = quarantine_share_below_limit(quarantine, events, late, [BEFORE, DAY, NEXT],
                                                           limit=0.01)
    assert not outcomes[DAY].passed
    assert outcomes[DAY].metadata["by_reason"] == {"bad_encoding": 1, "truncated_gzip": 1}
    assert outcomes[DAY].metadata["share"] == pytest.approx(2 / 11, rel=1e-4)
    assert [r["reason"] for r in outcomes[DAY].metadata["sample_rows"]] == ["bad_encoding", "truncated_gzip"]
    assert outcomes[NEXT].passed  # 1 of 101
    assert outcomes[BEFORE].metadata["by_reason"] == {"bad_encoding": 6, "malformed_json": 1}
    assert [r["source_file"] for r in outcomes[BEFORE].metadata["sample_rows"]] == [f"f{i}" for i in range(1, 6)]
