"""Reconciliation checks: what row expectations cannot see, because it spans tables or rows.

Each function takes DataFrames already read (and pruned to the partitions it needs), aggregates
in Spark and collects only small results: counts per day, a sample of keys, a few offending
rows. Each returns ``{day: Outcome}`` for the days asked about.

- ``input_records_reconcile``: landing records = the ingest's report = rows in the tables.
- ``quarantine_share_below_limit``: how much of a day was rejected, and why.
- ``partials_count_accepted_events``: a day's frames hold exactly the day's accepted events.
- ``snapshot_matches_last_change``: each key's snapshot is its last change point.
- ``spine_rows_joined_once``: the point-in-time join gave each spine row one row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from expectations.catalog import QUARANTINE_SHARE_LIMIT, Outcome
from expectations.suites import as_of_per_day, empty_values, same_values
from expectations.validation import SAMPLE_ROWS, json_safe
from jobs.ingest.quarantine import LATE_REASON
from jobs.minute_partials import SELECTED, with_computed_columns
from windowing_core.config import PipelineConfig

Tally = DataFrame | Mapping[date, int]
"""A table's rows to count per day, or the counts themselves (``asset_checks`` reads them from
the Delta log where its statistics answer exactly, and no Spark job is needed)."""


def _counts(frame: Tally, day_column: str, reason: str | None = None) -> dict[date, int]:
    """Rows per day; ``reason`` keeps only late_events' slice of that reason (counts given as a
    mapping are of that slice already)."""
    if not isinstance(frame, DataFrame):
        return dict(frame)
    if reason is not None:
        frame = frame.where(F.col("reason") == reason)
    return {r[0]: r[1] for r in frame.groupBy(day_column).count().collect()}


# -- ingest ---------------------------------------------------------------------------------------


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
    landing = _counts(landing_records, "arrival_date")
    accepted = _counts(events, "arrival_date")
    quarantined = _counts(quarantine, "arrival_date")
    late = _counts(late_events, "arrival_date", LATE_REASON)
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


def quarantine_share_below_limit(quarantine: DataFrame, events: Tally, late_events: Tally,
                                 days: list[date],
                                 limit: float = QUARANTINE_SHARE_LIMIT) -> dict[date, Outcome]:
    """The share of an arrival day's stored records that were rejected, with reasons and examples."""
    kept = _counts(events, "arrival_date")
    for d, n in _counts(late_events, "arrival_date", LATE_REASON).items():
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


# -- minute partials -------------------------------------------------------------------------------


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


def tiles_match_minute_partials(tiles: DataFrame, partials: DataFrame, config: PipelineConfig,
                                days: list[date]) -> dict[date, Outcome]:
    """Per key and day, the tile's event_count and invertible fields equal the sums over the
    day's frames (an invertible partial is a vector of sums, so summing is its combine), and
    every key with frames has exactly its tile. Compared in Spark over every key."""
    invertible = [a for a in config.aggregations if a.invertible]
    fields = ["event_count", *[c for a in invertible for c in a.field_columns()]]
    merges = [F.sum("event_count").alias("frames_event_count")]
    for a in invertible:  # each with its own combine: a sum, or a merge of a histogram's counts
        merges += [m.alias(f"frames_{c}") for m, c in
                   zip(a.spark_merge([F.col(c) for c in a.field_columns()]), a.field_columns())]
    summed = partials.groupBy("event_date", "key").agg(*merges)
    stored = tiles.select("event_date", "key", *[F.col(c).alias(f"tile_{c}") for c in fields])
    maps = {c for a in invertible for c, f in zip(a.field_columns(), a.fields) if f.spark_type.startswith("map<")}

    def comparable(column: str, field: str) -> Column:  # Spark compares no maps: their sorted entries
        return F.array_sort(F.map_entries(F.col(column))) if field in maps else F.col(column)

    differs = reduce(lambda a, b: a | b,
                     [~comparable(f"frames_{c}", c).eqNullSafe(comparable(f"tile_{c}", c)) for c in fields])
    bad = summed.join(stored, ["event_date", "key"], "full").where(differs).persist()
    try:
        counts = _counts(bad, "event_date")
        rank = Window.partitionBy("event_date").orderBy("key")
        examples: dict[date, list] = defaultdict(list)
        first_few = bad.withColumn("n", F.row_number().over(rank)).where(F.col("n") <= SAMPLE_ROWS).drop("n")
        for r in first_few.collect():
            examples[r["event_date"]].append(json_safe(r.asDict()))
    finally:
        bad.unpersist()
    outcomes = {}
    for day in days:
        metadata: dict[str, Any] = {"fields_compared": fields, "keys_differing": counts.get(day, 0)}
        if examples[day]:
            metadata["sample_rows"] = examples[day]
        outcomes[day] = Outcome(not counts.get(day), metadata)
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


# -- change points against frames -----------------------------------------------------------------


# -- snapshot against change points ---------------------------------------------------------------


def snapshot_matches_last_change(snapshots: DataFrame, changes: DataFrame, config: PipelineConfig,
                                 days: list[date]) -> dict[date, Outcome]:
    """Each key's snapshot of day D equals its value at D's last window end, as the change points
    say: the last change point of D, or (no change that day) the snapshot of D - 1. Empty values
    are absent rows, so an absent row equals a change point to empty. For windows emitting
    ``final`` rows the value at the last end is the row at that end, or empty.

    ``snapshots`` must hold days ``first - 1 .. last``. Where D - 1 holds no rows of a window as
    configured (not materialised, nothing in the window, or the window defined otherwise then),
    a key of that window without a change point on D cannot be judged from the tables; it is
    counted as unverified, not failed.
    """
    values = [a.name for a in config.aggregations]
    empty = empty_values(config)
    wanted = [d.isoformat() for d in days]
    spark = snapshots.sparkSession
    specs = {spec.name: spec for spec in config.windows}
    held_end = spark.createDataFrame([(w, d, end, specs[w].window_start(end)) for w, d, end in
                                      as_of_per_day(config, sorted({d - timedelta(days=1) for d in days}))],
                                     "window string, date date, held_end long, held_start long")
    of_this_definition = (snapshots.join(F.broadcast(held_end), ["window", "date"])
                          .where((F.unix_seconds("as_of") == F.col("held_end"))
                                 & (F.unix_seconds("window_start") == F.col("held_start"))))
    last_end = spark.createDataFrame(as_of_per_day(config, days), "window string, date date, last_end long")
    final = [w.name for w in config.windows if w.emit == "final"]

    # One aggregate per (date, key, window) over the three sources together: one shuffle, where
    # a row_number over the change points and two full joins took three.
    state = F.struct(*[F.col(v) for v in values])
    nothing = F.lit(None).cast(changes.select(state.alias("s")).schema["s"].dataType)
    keys = ["date", "key", "window"]
    tagged = (changes.where(F.col("date").isin(wanted))
              .select(*keys, F.unix_seconds("window_end").alias("end"), state.alias("change"),
                      nothing.alias("previous"), nothing.alias("snapshot"))
              .unionByName(of_this_definition.where(F.date_add("date", 1).isin(wanted)).select(
                  F.date_add("date", 1).alias("date"), "key", "window", F.lit(None).cast("long").alias("end"),
                  nothing.alias("change"), state.alias("previous"), nothing.alias("snapshot")))
              .unionByName(snapshots.where(F.col("date").isin(wanted)).select(
                  *keys, F.lit(None).cast("long").alias("end"), nothing.alias("change"), nothing.alias("previous"),
                  state.alias("snapshot"))))
    # The snapshot's least and greatest state: two rows of one key that differ show as a mismatch,
    # as they did as two joined rows (snapshot_keys_unique reports every duplicate). Spark orders
    # no map (a histogram's value), so the state is ordered by its maps' sorted entries.
    tagged = tagged.withColumn("snapshot_order", F.when(F.col("snapshot").isNotNull(), F.struct(*[
        F.array_sort(F.map_entries(F.col("snapshot")[v])) if isinstance(changes.schema[v].dataType, MapType)
        else F.col("snapshot")[v] for v in values])))
    rows = (tagged.groupBy(*keys).agg(
                F.max("end").alias("end"), F.max_by("change", "end").alias("change"),
                (F.count("previous") > 0).alias("in_previous"), F.first("previous", ignorenulls=True).alias("previous"),
                (F.count("snapshot") > 0).alias("in_snapshot"),
                F.min_by("snapshot", "snapshot_order").alias("snapshot"),
                F.min("snapshot_order").alias("snapshot_least"), F.max("snapshot_order").alias("snapshot_greatest"))
            .select(*keys, "end", "in_previous", "in_snapshot",
                    (~F.col("snapshot_least").eqNullSafe(F.col("snapshot_greatest"))).alias("snapshots_differ"),
                    *[F.col(f"change.{v}").alias(f"change_{v}") for v in values],
                    *[F.col(f"previous.{v}").alias(f"previous_{v}") for v in values],
                    *[F.col(f"snapshot.{v}").alias(f"snapshot_{v}") for v in values])
            .join(F.broadcast(last_end), ["window", "date"], "left"))

    is_final = F.col("window").isin(final) if final else F.lit(False)
    has_change = F.col("end").isNotNull()
    expected = {v: F.when(is_final, F.when(F.col("end") == F.col("last_end"), F.col(f"change_{v}"))
                          .otherwise(empty[v]))
                .when(has_change, F.col(f"change_{v}"))
                .when(F.col("in_previous"), F.col(f"previous_{v}"))
                .otherwise(empty[v]) for v in values}
    actual = {v: F.when(F.col("in_snapshot"), F.col(f"snapshot_{v}")).otherwise(empty[v]) for v in values}
    # A key without a change point on D is judged against D - 1's snapshot where that holds the
    # window as configured (it is continued: some key of it has a row there), else unverified;
    # which windows are continued comes out of the same aggregate, per (date, window).
    open_key = ~(is_final | has_change)
    judged = rows.select(
        "date", "key", "window", open_key.alias("open"), "in_previous",
        (~same_values(config, expected, actual) | F.col("snapshots_differ")).alias("mismatch"),
        F.struct(*[expected[v].alias(v) for v in values]).alias("expected"),
        F.struct(*[actual[v].alias(v) for v in values]).alias("snapshot"),
    )
    per_window = judged.groupBy("date", "window").agg(
        F.count(F.lit(1)).alias("keys"), F.max("in_previous").alias("continued"),
        F.count(F.when(~F.col("open") & F.col("mismatch"), 1)).alias("mismatches"),
        F.count(F.when(F.col("open") & F.col("mismatch"), 1)).alias("open_mismatches"),
        F.count(F.when(F.col("open"), 1)).alias("open_keys")).collect()
    continued = [(r["window"], r["date"]) for r in per_window if r["continued"]]
    totals: dict[date, dict[str, int]] = defaultdict(lambda: {"keys": 0, "mismatches": 0, "unverified": 0})
    for r in per_window:
        total = totals[r["date"]]
        total["keys"] += r["keys"]
        total["mismatches"] += r["mismatches"] + (r["open_mismatches"] if r["continued"] else 0)
        total["unverified"] += 0 if r["continued"] else r["open_keys"]
    examples: dict[date, list] = defaultdict(list)
    if any(t["mismatches"] for t in totals.values()):  # computed again, only to show a few
        rank = Window.partitionBy("date").orderBy("window", "key")
        judged_here = ~F.col("open") | F.col("continued").isNotNull()
        if continued:
            judged = judged.join(F.broadcast(spark.createDataFrame(continued, "window string, date date")
                                             .withColumn("continued", F.lit(True))), ["window", "date"], "left")
        else:
            judged = judged.withColumn("continued", F.lit(None).cast("boolean"))
        for r in (judged.where(F.col("mismatch") & judged_here).withColumn("n", F.row_number().over(rank))
                  .where(F.col("n") <= SAMPLE_ROWS).collect()):
            examples[r["date"]].append({"key": r["key"], "window": r["window"],
                                        "expected": json_safe(r["expected"].asDict()),
                                        "snapshot": json_safe(r["snapshot"].asDict())})
    outcomes = {}
    for day in days:
        total = totals[day]
        mismatches = total["mismatches"]
        metadata: dict[str, Any] = {
            "keys_compared": total["keys"], "mismatches": mismatches,
            "unverified_without_previous_snapshot": total["unverified"]}
        if examples[day]:
            metadata["sample_rows"] = examples[day]
        outcomes[day] = Outcome(mismatches == 0, metadata)
    return outcomes


# -- spine values ----------------------------------------------------------------------------------


def spine_rows_joined_once(spine_rows: DataFrame, values: DataFrame, ts: str, days: list[date]) -> dict[date, Outcome]:
    """Per day of ts: the spine's rows and the join's output rows, which must be as many."""
    spine = _counts(spine_rows.withColumn("date", F.to_date(F.col(ts).cast("timestamp"))), "date")
    joined = _counts(values, "date")
    return {d: Outcome(spine.get(d, 0) == joined.get(d, 0), {"spine_rows": spine.get(d, 0),
                                                             "joined_rows": joined.get(d, 0)}) for d in days}
