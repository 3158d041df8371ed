"""The checks of ``minute_partials``: frames on the grid, once each, holding exactly the accepted events."""

from __future__ import annotations

from datetime import date, timedelta
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from expectations.check import ERROR, Check, Outcome
from expectations.inputs import SUITE, Inputs, Results, side_by_side_results
from expectations.shared_checks import partial_sign_checks
from expectations.validation import SAMPLE_ROWS, Pairs, Suite, gx_expectations, json_safe, readable_columns, run_suite
from jobs.ingest.quarantine import LATE_REASON
from jobs.minute_partials import SELECTED, with_computed_columns
from jobs.tables import EVENTS, LATE_EVENTS, MINUTE_PARTIALS, declared_columns
from windowing_core.config import PipelineConfig

TABLE = MINUTE_PARTIALS


def checks(config: PipelineConfig) -> list[Check]:
    """The checks of ``minute_partials``."""
    return [
        Check("keys_not_null", MINUTE_PARTIALS.name, ERROR,
              "Frames without a key, which every window would fold into one phantom key."),
        Check("frames_on_bucket_grid", MINUTE_PARTIALS.name, ERROR,
              "Frames that do not start on the bucket grid: they would enter and leave windows at "
              "the wrong ends."),
        Check("frames_inside_partition", MINUTE_PARTIALS.name, ERROR,
              "Frames stored under another event day: a re-run of one day would leave or drop them."),
        Check("frames_unique", MINUTE_PARTIALS.name, ERROR,
              "Two rows for one key and frame: the frame would be counted twice in every window."),
        Check("counts_non_negative", MINUTE_PARTIALS.name, ERROR,
              "Negative event counts in a frame: a broken fold (counts only ever add ones)."),
        Check("partials_count_accepted_events", MINUTE_PARTIALS.name, ERROR,
              "Events lost or double counted between events and minute_partials: a day's summed "
              "event_count must equal the distinct event_ids accepted for that event day over its "
              "arrival days (less any kept as late behind the watermark)."),
        Check("schema_matches_declared", MINUTE_PARTIALS.name, ERROR,
              "Columns renamed, dropped, reordered or retyped: readers and the window job would "
              "break or misread."),
    ]


def suite(config: PipelineConfig) -> Suite:
    declared = declared_columns(MINUTE_PARTIALS.name, config)

    def build() -> Pairs:
        gxe = gx_expectations()
        return [
            ("keys_not_null", gxe.ExpectColumnValuesToNotBeNull(column="key")),
            ("frames_on_bucket_grid", gxe.ExpectColumnValuesToBeInSet(column="frame_start_off_grid_seconds",
                                                                      value_set=[0])),
            ("frames_inside_partition", gxe.ExpectColumnPairValuesToBeEqual(column_A="frame_date",
                                                                            column_B="event_date")),
            ("frames_unique", gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["key", "frame_start", "event_date"])),
            *partial_sign_checks(config),
        ]

    return Suite(MINUTE_PARTIALS.name, "event_date", readable_columns(declared), declared, build)


def prepare(partials: DataFrame, config: PipelineConfig) -> DataFrame:
    start = F.unix_seconds("frame_start")
    return partials.withColumns({
        # -1 for a missing frame_start, which no grid position matches
        "frame_start_off_grid_seconds": F.coalesce(F.pmod(start, F.lit(config.bucket)), F.lit(-1)),
        "frame_date": F.to_date("frame_start"),
    })


def partials_count_accepted_events(partials: DataFrame, events: DataFrame, late_events: DataFrame,
                                   days: list[date], config: PipelineConfig) -> dict[date, Outcome]:
    """A day's summed ``event_count`` = its distinct accepted event_ids.

    ``events`` must hold every arrival day an event of these days may have arrived on (D .. D +
    allowed lateness). The expected side is counted directly from ``events`` (distinct ids per
    event day, the product's deduplication rule), not with the partial job's code. Events kept in
    ``late_events`` for their event day for a reason other than the allowed lateness (behind the
    watermark) never reach a frame and are taken out, and so are the ids whose first arrival the
    row filter (``where``) does not select, counted as ``filtered_out``.
    """
    wanted = [d.isoformat() for d in days]
    accepted = (events.withColumn("event_date", F.to_date("event_time"))
                .where(F.col("event_date").isin(wanted)))
    expected: dict[date, int] = {}
    filtered: dict[date, int] = {}
    if config.where is None:
        accepted = accepted.select("event_date", "event_id", "key", "event_time")
    else:  # each id as its first arrival has it (``events`` holds an id once per arrival day)
        judged = (with_computed_columns(accepted, config).groupBy("event_date", "event_id")
                  .agg(F.min_by(SELECTED, "arrival_date").alias(SELECTED)))
        counted = judged.groupBy("event_date").agg(F.count("*"), F.count_if(~F.col(SELECTED))).collect()
        expected = {r[0]: r[1] for r in counted}
        filtered = {r[0]: r[2] for r in counted}
        accepted = accepted.select("event_date", "event_id", "key", "event_time")
    # One query for what is left to count: the held-back ids, the frames' events, and (without
    # ``where``) the accepted ids, each source its own column of one union.
    id_type = late_events.schema["event_id"].dataType
    no_id, no_count = F.lit(None).cast(id_type), F.lit(None).cast("bigint")
    sources = [
        late_events.where((F.col("reason") != LATE_REASON) & F.col("event_date").isin(wanted))
        .select("event_date", no_id.alias("accepted"), F.col("event_id").alias("held_back"), no_count.alias("framed")),
        partials.select("event_date", no_id.alias("accepted"), no_id.alias("held_back"),
                        F.col("event_count").cast("bigint").alias("framed")),
    ]
    if config.where is None:
        sources.append(accepted.select("event_date", F.col("event_id").cast(id_type).alias("accepted"),
                                       no_id.alias("held_back"), no_count.alias("framed")))
    tallied = reduce(DataFrame.unionByName, sources).groupBy("event_date").agg(
        F.count_distinct("accepted"), F.count_distinct("held_back"), F.sum("framed")).collect()
    if config.where is None:
        expected = {r[0]: r[1] for r in tallied if r[1]}
    held_back = {r[0]: r[2] for r in tallied}
    actual = {r[0]: r[3] for r in tallied}
    outcomes = {}
    for day in days:
        want = expected.get(day, 0) - held_back.get(day, 0) - filtered.get(day, 0)
        got = actual.get(day, 0) or 0
        metadata: dict[str, Any] = {"events_in_frames": got, "accepted_event_ids": expected.get(day, 0),
                                    "held_back_by_watermark": held_back.get(day, 0), "difference": got - want}
        if config.where is not None:
            metadata["filtered_out"] = filtered.get(day, 0)
        if got != want:
            metadata["sample_frames"] = _differing_frames(partials, accepted, day)
        outcomes[day] = Outcome(got == want, metadata)
    return outcomes


def _differing_frames(partials: DataFrame, accepted: DataFrame, day: date) -> list[dict]:
    """A few (key, minute) where the frame's count differs from the events' (a diagnosis only:
    a duplicate id whose copies differ in key or minute is counted in each)."""
    minute = F.date_trunc("minute", "event_time").alias("minute")
    from_events = (accepted.where(F.col("event_date") == F.lit(day)).groupBy("key", minute)
                   .agg(F.count_distinct("event_id").alias("events")))
    from_frames = (partials.where(F.col("event_date") == F.lit(day))
                   .groupBy("key", F.date_trunc("minute", "frame_start").alias("minute"))
                   .agg(F.sum("event_count").alias("in_frames")))
    differing = (from_events.join(from_frames, ["key", "minute"], "full")
                 .where(~F.coalesce("events", F.lit(0)).eqNullSafe(F.coalesce("in_frames", F.lit(0))))
                 .orderBy("minute", "key").limit(SAMPLE_ROWS))
    return [json_safe(r.asDict()) for r in differing.collect()]


def evaluate(inputs: Inputs) -> Results:
    partials = inputs.through(inputs.read(MINUTE_PARTIALS, "event_date", inputs.first, inputs.last), "frame_start")
    calls = {SUITE: lambda: run_suite(partials, prepare(partials, inputs.config), suite(inputs.config),
                                      inputs.days, inputs.selected)}
    if "partials_count_accepted_events" in inputs.selected:
        lateness = timedelta(days=inputs.config.allowed_lateness_days)
        events = inputs.through(inputs.read(EVENTS, "arrival_date", inputs.first, inputs.last + lateness), "event_time")
        late = inputs.through(inputs.read(LATE_EVENTS, "event_date", inputs.first, inputs.last), "event_time")
        calls["partials_count_accepted_events"] = lambda: {"partials_count_accepted_events": (
            partials_count_accepted_events(partials, events, late, inputs.days, inputs.config))}
    return side_by_side_results(inputs.spark, calls)
