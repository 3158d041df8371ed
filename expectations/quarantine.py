"""The checks of ``quarantine``: every rejection names a reason ingest gives, and a burst of them warns."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from expectations.check import ERROR, WARN, Check, Outcome
from expectations.inputs import SUITE, Inputs, Results, Tally, rows_per_day, side_by_side_results
from expectations.validation import SAMPLE_ROWS, Pairs, Suite, gx_expectations, run_suite
from jobs.ingest.quarantine import LATE_REASON, quarantine_reasons
from jobs.tables import EVENTS, LATE_EVENTS, QUARANTINE, declared_columns
from windowing_core.config import PipelineConfig

TABLE = QUARANTINE


QUARANTINE_SHARE_LIMIT = 0.01
"""Above this share of an arrival day's records in quarantine, ``quarantine_share_below_limit``
warns: a few broken lines are normal, a burst means a producer changed its format."""


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``quarantine``."""
    return [
        Check("quarantine_reasons_known", QUARANTINE.name, ERROR,
              "A record quarantined for a reason ingest does not give under this configuration: each "
              "bad value must name its field (<field>_<problem>, as amount_beyond_scale), so a "
              "producer's broken field can be found. Reports the unknown reasons."),
        Check("quarantine_share_below_limit", QUARANTINE.name, WARN,
              f"A producer that changed its format: more than {QUARANTINE_SHARE_LIMIT:.0%} of an arrival "
              "day's records rejected. Reports the count per reason and a few rejected records."),
    ]


def suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(QUARANTINE.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [("quarantine_reasons_known", gxe.ExpectColumnValuesToBeInSet(
            column="reason", value_set=quarantine_reasons(config)))]

    return Suite(QUARANTINE.name, "arrival_date", ["source_file", "reason"], declared, build)


def quarantine_share_below_limit(quarantine: DataFrame, events: Tally, late_events: Tally,
                                 days: list[date],
                                 limit: float = QUARANTINE_SHARE_LIMIT) -> dict[date, Outcome]:
    """The share of an arrival day's stored records that were rejected, with reasons and examples."""
    kept = rows_per_day(events, "arrival_date")
    for d, n in rows_per_day(late_events, "arrival_date", LATE_REASON).items():
        kept[d] = kept.get(d, 0) + n
    # One query: a day's first rows by (reason, source_file, raw) are its examples, and each
    # reason's first row carries that reason's count (both windows sort the rows alike).
    order = ("reason", "source_file", "raw")
    by_reason: dict[date, dict[str, int]] = defaultdict(dict)
    examples: dict[date, list] = defaultdict(list)
    for r in (quarantine.select(
                "arrival_date", "reason", "source_file", F.substring("raw", 1, 200).alias("raw"),
                F.row_number().over(Window.partitionBy("arrival_date").orderBy(*order)).alias("n"),
                F.row_number().over(Window.partitionBy("arrival_date", "reason").orderBy(*order)).alias("m"),
                F.count(F.lit(1)).over(Window.partitionBy("arrival_date", "reason")).alias("of_reason"))
              .where((F.col("n") <= SAMPLE_ROWS) | (F.col("m") == 1)).orderBy("arrival_date", "n").collect()):
        if r["m"] == 1:
            by_reason[r["arrival_date"]][r["reason"]] = r["of_reason"]
        if r["n"] <= SAMPLE_ROWS:
            examples[r["arrival_date"]].append({k: r[k] for k in ("reason", "source_file", "raw")})
    outcomes = {}
    for day in days:
        rejected = sum(by_reason[day].values())
        total = rejected + kept.get(day, 0)
        share = rejected / total if total else 0.0
        metadata: dict[str, Any] = {"quarantined": rejected, "records_stored": total,
                                    "share": round(share, 6), "limit": limit,
                                    "by_reason": dict(sorted(by_reason[day].items()))}
        if examples[day]:
            metadata["sample_rows"] = examples[day]
        outcomes[day] = Outcome(share <= limit, metadata)
    return outcomes


def evaluate(inputs: Inputs) -> Results:
    quarantine = inputs.through(inputs.read(QUARANTINE, "arrival_date", inputs.first, inputs.last), "arrival_part")
    calls = {SUITE: lambda: run_suite(quarantine, quarantine, suite(inputs.config), inputs.days,
                                      inputs.selected & {"quarantine_reasons_known"})}
    if "quarantine_share_below_limit" in inputs.selected:
        events = inputs.tally(EVENTS, "arrival_date", inputs.first, inputs.last)
        late = inputs.tally(LATE_EVENTS, "arrival_date", inputs.first, inputs.last, ("reason", "=", LATE_REASON))
        calls["quarantine_share_below_limit"] = lambda: {"quarantine_share_below_limit": (
            quarantine_share_below_limit(quarantine, events, late, inputs.days))}
    return side_by_side_results(inputs.spark, calls)
