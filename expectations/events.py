"""The checks of ``events``: every landing record accounted for, the table whole and as declared.

``input_records_reconcile`` recounts the landing files and holds the ingest's report to them and
to the tables; the report comes from the ``events`` materialisation (a day's, or below a day each
part's newest).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import dagster as dg
from pyspark.sql import DataFrame

from expectations.check import ERROR, Check, Outcome
from expectations.inputs import Inputs, Results, Tally, rows_per_day
from expectations.validation import Suite, readable_columns, run_suite
from expectations.written_whole import tables_written_whole
from jobs.errors import MissingInputError, MissingTableError, SourceError
from jobs.ingest.arrival_parts import Parts, midnight
from jobs.ingest.quarantine import LATE_REASON
from jobs.ingest_events import COUNTS, PART_COUNTS, read_input
from jobs.tables import EVENTS, LATE_EVENTS, QUARANTINE, asset_key, declared_columns
from windowing_core.config import PipelineConfig
from windowing_core.run_interval import part_key, part_keys
from windowing_core.window_spec import DAY_SECONDS

TABLE = EVENTS


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``events``."""
    return [
        Check("input_records_reconcile", EVENTS.name, ERROR,
              "Records lost or counted twice between the landing files and the tables: the landing "
              "folder's records (recounted) must equal the ingest report, the rows in events, "
              "quarantine and late_events must equal its accepted, quarantined and late counts, and "
              "input = accepted + quarantined + duplicates + late."),
        Check("tables_written_whole", EVENTS.name, ERROR,
              "events and quarantine from different runs: a run stopped between their commits left "
              "one with its rows of a day and the other with an earlier run's, so the day's records "
              "are counted in two versions. Read from the Delta logs' write ids."),
        Check("schema_matches_declared", EVENTS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped (a declared field's type, a decimal's "
              "precision and scale): the partials job reads each measured field in its type."),
    ]


def suite(config: PipelineConfig) -> Suite:
    """The events' declared columns (each measured field in its type); the reconciliation with
    the landing files is ``input_records_reconcile``."""
    declared = declared_columns(EVENTS.name, config)
    return Suite(EVENTS.name, "arrival_date", readable_columns(declared), declared, lambda: [])


@dataclass(frozen=True)
class IngestReport:
    """What an ``events`` materialisation reported, for the arrival days it covered."""

    first: date
    last: date
    input_records: int
    accepted: int
    quarantined: int
    duplicates: int
    late: int

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]


def input_records_reconcile(landing_records: DataFrame, events: Tally, quarantine: Tally,
                            late_events: Tally, reports: dict[date, IngestReport | None],
                            days: list[date]) -> dict[date, Outcome]:
    """Input records = accepted + quarantined + duplicates + late, with every term verified.

    Duplicates are not stored anywhere, so the ingest's report is the only place they are
    counted. The check therefore verifies everything around it: the landing files are recounted
    (``landing_records``: the ingest's own definition of a record, read again), the tables are
    counted, and both must equal the report; the report must add up; and no day may hold more
    rows than it had records. A report covers the arrival days its run ingested (a range run
    reports once for the range), so its days are reconciled together. The frames must cover
    every day of every report.
    """
    landing = rows_per_day(landing_records, "arrival_date")
    accepted = rows_per_day(events, "arrival_date")
    quarantined = rows_per_day(quarantine, "arrival_date")
    late = rows_per_day(late_events, "arrival_date", LATE_REASON)
    outcomes: dict[date, Outcome] = {}
    for day in days:
        report = reports.get(day)
        per_day = {"input_records": landing.get(day, 0), "accepted": accepted.get(day, 0),
                   "quarantined": quarantined.get(day, 0), "late": late.get(day, 0)}
        per_day["duplicates_implied"] = (per_day["input_records"] - per_day["accepted"]
                                         - per_day["quarantined"] - per_day["late"])
        if report is None:
            outcomes[day] = Outcome(False, {"problem": "no materialisation of events reports counts for this "
                                                       "arrival day: materialise it through Dagster first",
                                            "recounted": per_day})
            continue
        span = report.days

        def total(counts: dict[date, int]) -> int:
            return sum(counts.get(d, 0) for d in span)

        recounted = {"input_records": total(landing), "accepted": total(accepted),
                     "quarantined": total(quarantined), "late": total(late)}
        reported = {"input_records": report.input_records, "accepted": report.accepted,
                    "quarantined": report.quarantined, "late": report.late}
        problems = [f"{name}: recounted {recounted[name]}, reported {reported[name]}"
                    for name in reported if recounted[name] != reported[name]]
        adds_up = report.accepted + report.quarantined + report.duplicates + report.late
        if adds_up != report.input_records:
            problems.append(f"the report does not add up: accepted + quarantined + duplicates + late = "
                            f"{adds_up}, input records {report.input_records}")
        short = [d.isoformat() for d in span
                 if landing.get(d, 0) < accepted.get(d, 0) + quarantined.get(d, 0) + late.get(d, 0)]
        if short:
            problems.append(f"more rows than input records on {', '.join(short)}")
        outcomes[day] = Outcome(not problems, {
            "this_day": per_day,
            "reported_for": f"{report.first} .. {report.last}",
            "reported": {**reported, "duplicates": report.duplicates},
            "recounted": recounted,
            **({"problems": problems} if problems else {}),
        })
    return outcomes


def ingest_report(inputs: Inputs, day: date) -> IngestReport | None:
    """The counts the latest ``events`` materialisation of this arrival day reported."""
    instance, config = inputs.instance, inputs.config
    if instance is None:
        return None
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset_key(EVENTS.name, config)),
                              asset_partitions=[day.isoformat()]),
        limit=1,
    ).records
    if not records:
        return None
    metadata = records[0].asset_materialization.metadata
    try:
        first, last = (date.fromisoformat(d.strip()) for d in metadata["arrival_days"].value.split(".."))
        counts = ("input_records", "accepted", "quarantined", "duplicates", "late_beyond_allowed_lateness")
        return IngestReport(first, last, *(int(metadata[k].value) for k in counts))
    except (KeyError, ValueError):
        return None


def parts_report(inputs: Inputs, day: date) -> IngestReport | None:
    """Below a day: the counts of ``day``'s arrival parts up to ``until``, each the newest an
    ``events`` materialisation reported (``PART_COUNTS``: a run reports every part it read, the
    later parts of the day it redid too, whichever partition it materialised); None where none
    of the day's partitions was materialised."""
    if inputs.instance is None:
        return None
    end = inputs.until or datetime.combine(day + timedelta(days=1), time(), UTC)
    keys = part_keys(day, end, inputs.config.partition)
    records = inputs.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset_key(EVENTS.name, inputs.config)), asset_partitions=keys),
        limit=1000, ascending=False).records
    if not records:
        return None
    newest: dict[str, dict] = {}
    for record in records:
        entry = record.asset_materialization.metadata.get(PART_COUNTS)
        for part, counts in (entry.value if entry is not None else {}).items():
            newest.setdefault(part, counts)
    judged = [c for part, c in newest.items()
              if part.startswith(f"{day} ") and part_key(day, datetime.fromisoformat(part.split(" ")[1]),
                                                        inputs.config.partition) in keys]
    return IngestReport(day, day, *(sum(c[name] for c in judged) for name in COUNTS))


def evaluate(inputs: Inputs) -> Results:
    results = ({"tables_written_whole": tables_written_whole(inputs, EVENTS)}
               if "tables_written_whole" in inputs.selected else {})
    if "schema_matches_declared" in inputs.selected:
        events = inputs.through(inputs.read(EVENTS, "arrival_date", inputs.first, inputs.last), "arrival_part")
        results.update(run_suite(events, events, suite(inputs.config), inputs.days,
                                 {"schema_matches_declared"}))
    if "input_records_reconcile" not in inputs.selected:
        return results
    below_a_day = inputs.config.partition != DAY_SECONDS
    reports = {d: (parts_report if below_a_day else ingest_report)(inputs, d) for d in inputs.days}
    covered = [d for r in reports.values() if r is not None for d in r.days] + inputs.days
    first, last = min(covered), max(covered)
    try:
        landing = read_input(inputs.spark, inputs.landing_root, inputs.config, first, last)
        if inputs.until is not None:  # the last day's parts before it
            parts = Parts(last, midnight(last), inputs.until - timedelta(microseconds=1))
            landing = read_input(inputs.spark, inputs.landing_root, inputs.config, last, last, parts)
            if first < last:
                landing = read_input(inputs.spark, inputs.landing_root, inputs.config, first,
                                     last - timedelta(days=1)).unionByName(landing)
    except (MissingInputError, MissingTableError, SourceError) as err:  # gone or moved: cannot be recounted
        return {**results, "input_records_reconcile": {
            d: Outcome(False, {"problem": f"cannot recount the input: {err}"}) for d in inputs.days}}
    return {**results, "input_records_reconcile": input_records_reconcile(
        landing,
        inputs.tally(EVENTS, "arrival_date", first, last),
        inputs.tally(QUARANTINE, "arrival_date", first, last),
        inputs.tally(LATE_EVENTS, "arrival_date", first, last, ("reason", "=", LATE_REASON)),
        reports, inputs.days)}
