"""``events``' checks: the landing records reconciled with the ingest's report and the tables."""

from datetime import date

import pytest

from expectations.events import IngestReport, input_records_reconcile
from tests.expectations.frames import DAY, EVENT_COLUMNS, LATE_COLUMNS, NEXT, QUARANTINE_COLUMNS, table


@pytest.fixture(scope="module")
def ingested(spark):
    """One arrival day: 6 records = 3 accepted + 1 quarantined + 1 duplicate + 1 late."""
    landing = table(spark, [("raw", "string"), ("arrival_date", "date")], [{"arrival_date": DAY}] * 6)
    events = table(spark, EVENT_COLUMNS, [{"event_id": f"e{i}", "arrival_date": DAY} for i in range(3)])
    quarantine = table(spark, QUARANTINE_COLUMNS, [{"reason": "malformed_json", "arrival_date": DAY}])
    late = table(spark, LATE_COLUMNS, [{"reason": "beyond_allowed_lateness", "event_date": date(2025, 1, 20),
                                        "arrival_date": DAY},
                                       # written by a watermark, for its event day: not an input record
                                       {"reason": "behind_watermark", "event_date": DAY, "arrival_date": DAY}])
    return landing, events, quarantine, late


def report(**changes) -> IngestReport:
    counts = {"input_records": 6, "accepted": 3, "quarantined": 1, "duplicates": 1, "late": 1, **changes}
    return IngestReport(DAY, DAY, **counts)


def test_input_records_reconcile_passes_when_landing_report_and_tables_agree(ingested):
    outcome = input_records_reconcile(*ingested, {DAY: report()}, [DAY])[DAY]
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["this_day"]["duplicates_implied"] == 1


def test_input_records_reconcile_fails_when_a_table_lost_rows(ingested):
    landing, events, quarantine, late = ingested
    outcome = input_records_reconcile(landing, events.limit(2), quarantine, late,
                                                     {DAY: report()}, [DAY])[DAY]
    assert not outcome.passed
    assert outcome.metadata["problems"] == ["accepted: recounted 2, reported 3"]


def test_input_records_reconcile_fails_when_the_landing_folder_changed(ingested):
    landing, *tables = ingested
    outcome = input_records_reconcile(landing.union(landing.limit(1)), *tables,
                                                     {DAY: report()}, [DAY])[DAY]
    assert not outcome.passed
    assert "input_records: recounted 7, reported 6" in outcome.metadata["problems"]


def test_input_records_reconcile_fails_when_the_report_does_not_add_up(ingested):
    outcome = input_records_reconcile(*ingested, {DAY: report(duplicates=0)}, [DAY])[DAY]
    assert not outcome.passed
    assert "does not add up" in outcome.metadata["problems"][0]


def test_input_records_reconcile_fails_without_a_report(ingested):
    outcome = input_records_reconcile(*ingested, {DAY: None}, [DAY])[DAY]
    assert not outcome.passed


def test_a_range_report_is_reconciled_over_its_whole_range(spark, ingested):
    """A range run reports once for all its days; each day is judged against the range's totals."""
    landing, events, quarantine, late = ingested
    next_landing = table(spark, [("raw", "string"), ("arrival_date", "date")], [{"arrival_date": NEXT}] * 2)
    next_events = table(spark, EVENT_COLUMNS, [{"event_id": "n", "arrival_date": NEXT}] * 2)
    both = IngestReport(DAY, NEXT, input_records=8, accepted=5, quarantined=1, duplicates=1, late=1)
    outcomes = input_records_reconcile(landing.union(next_landing), events.union(next_events),
                                                      quarantine, late, {NEXT: both}, [NEXT])
    assert outcomes[NEXT].passed, outcomes[NEXT].metadata
