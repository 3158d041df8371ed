"""Reconciliation checks: what row expectations cannot see, because it spans tables or rows.

Each function takes DataFrames already read (and pruned to the partitions it needs), aggregates
in Spark and collects only small results: counts per day, a sample of keys, a few offending
rows. Each returns ``{day: Outcome}`` for the days asked about.

- ``input_records_reconcile``: landing records = the ingest's report = rows in the tables.
- ``quarantine_share_below_limit``: how much of a day was rejected, and why.
- ``partials_count_accepted_events``: a day's frames hold exactly the day's accepted events.
- ``changes_conserve_frames``: change points equal a direct recomputation from the frames.
- ``snapshot_matches_last_change``: each key's snapshot is its last change point.
- ``spine_rows_joined_once``: the point-in-time join gave each spine row one row.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from expectations.catalog import CONSERVATION_SAMPLE_KEYS, QUARANTINE_SHARE_LIMIT, Outcome
from expectations.suites import SAMPLE_ROWS, as_of_per_day, empty_values, json_safe, same_values
from jobs.ingest.quarantine import LATE_REASON
from jobs.minute_partials import SELECTED, with_computed_columns
from jobs.windows.running_state import with_all_keys
from windowing_core.aggregations import Aggregation
from windowing_core.change_points import change_points
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.window_spec import ALL_KEYS, DAY_SECONDS, WindowSpec, from_epoch_seconds


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
    by_reason: dict[date, dict[str, int]] = defaultdict(dict)
    for r in quarantine.groupBy("arrival_date", "reason").count().collect():
        by_reason[r["arrival_date"]][r["reason"]] = r["count"]
    kept = _counts(events, "arrival_date")
    for d, n in _counts(late_events, "arrival_date", LATE_REASON).items():
        kept[d] = kept.get(d, 0) + n
    rank = Window.partitionBy("arrival_date").orderBy("reason", "source_file", "raw")
    examples: dict[date, list] = defaultdict(list)
    for r in (quarantine.withColumn("n", F.row_number().over(rank)).where(F.col("n") <= SAMPLE_ROWS)
              .select("arrival_date", "reason", "source_file", F.substring("raw", 1, 200).alias("raw"))
              .collect()):
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
    if config.where is None:
        accepted = accepted.select("event_date", "event_id", "key", "event_time")
        expected = {r[0]: r[1] for r in accepted.groupBy("event_date")
                    .agg(F.count_distinct("event_id")).collect()}
        filtered: dict[date, int] = {}
    else:  # each id as its first arrival has it (``events`` holds an id once per arrival day)
        judged = (with_computed_columns(accepted, config).groupBy("event_date", "event_id")
                  .agg(F.min_by(SELECTED, "arrival_date").alias(SELECTED)))
        counted = judged.groupBy("event_date").agg(F.count("*"), F.count_if(~F.col(SELECTED))).collect()
        expected = {r[0]: r[1] for r in counted}
        filtered = {r[0]: r[2] for r in counted}
        accepted = accepted.select("event_date", "event_id", "key", "event_time")
    held_back = {r[0]: r[1] for r in late_events.where((F.col("reason") != LATE_REASON)
                                                       & F.col("event_date").isin(wanted))
                 .groupBy("event_date").agg(F.count_distinct("event_id")).collect()}
    actual = {r[0]: r[1] for r in partials.groupBy("event_date").agg(F.sum("event_count")).collect()}
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


class RangeFold:
    """The combined partial of any run ``[lo, hi)`` of frames in O(log n) combines.

    A segment tree over the frames in start order, with the aggregations' own ``combine`` (kept
    in order, so it needs no commutativity). The recomputation is independent of the window job:
    no deltas, no running sums, no tiles, just each window's frames folded by position.
    """

    def __init__(self, items: list, combine: Callable[[Any, Any], Any], empty: Any):
        self.size = 1
        while self.size < len(items):
            self.size *= 2
        self.combine, self.empty = combine, empty
        self.tree = [empty] * (2 * self.size)
        self.tree[self.size:self.size + len(items)] = items
        for i in range(self.size - 1, 0, -1):
            self.tree[i] = combine(self.tree[2 * i], self.tree[2 * i + 1])

    def fold(self, lo: int, hi: int) -> Any:
        left, right = self.empty, self.empty
        lo, hi = lo + self.size, hi + self.size
        while lo < hi:
            if lo & 1:
                left = self.combine(left, self.tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                right = self.combine(self.tree[hi], right)
            lo, hi = lo // 2, hi // 2
        return self.combine(left, right)


def frames_reach_days(config: PipelineConfig) -> int:
    """Event days before a window day whose frames a recomputation may need: the longest window
    plus its slide (the window just before the day's first end), rounded up, plus one."""
    return math.ceil(max((w.length + w.every for w in config.windows), default=0) / DAY_SECONDS) + 1


def python_combinable(aggregation: Aggregation) -> bool:
    """Whether the partial Spark stores is the one Python combines (not a binary sketch)."""
    return all(f.spark_type != "binary" for f in aggregation.fields)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def range_folded_values(frames: list[tuple[int, tuple]], spec: WindowSpec,
                        aggregations: list[Aggregation]) -> Callable[[int], tuple[tuple, bool]]:
    """``value(end)``: the finished values of the window ending at ``end``, and whether it holds
    any frame, folded from one key's frames ((start in epoch seconds, partial per aggregation)).

    The window ending at ``t`` holds the frames with ``window_start(t) <= f`` and ``f + bucket <= t``.
    """
    frames = sorted(frames)
    starts = [f for f, _ in frames]
    tree = RangeFold([p for _, p in frames],
                     lambda x, y: tuple(a.combine(u, v) for a, u, v in zip(aggregations, x, y)),
                     tuple(a.empty() for a in aggregations))
    cache: dict[tuple[int, int], tuple] = {}

    def value(end: int) -> tuple[tuple, bool]:
        span = bisect.bisect_left(starts, spec.window_start(end)), bisect.bisect_right(starts, end - spec.bucket)
        if span not in cache:
            cache[span] = tuple(a.finish(p) for a, p in zip(aggregations, tree.fold(*span)))
        return cache[span], span[1] > span[0]

    return value


def expected_rows(value: Callable[[int], tuple[tuple, bool]], spec: WindowSpec,
                  day: date) -> dict[int, tuple]:
    """The rows ``{window_end: values}`` one key should have on ``day`` for one window: its
    change points, or for ``emit: final`` every window end whose window holds events."""
    ends = spec.ends_between(day_start(day), day_start(day) + DAY_SECONDS)
    if spec.emit == "final":
        return {t: value(t)[0] for t in ends if value(t)[1]}
    before = value(ends.start - spec.every)[0]
    return dict(change_points(((t, value(t)[0]) for t in ends), before))


@dataclass
class _Sample:
    """The keys sampled per day, with the rows of every key below the hash threshold: their
    frames in reach (``date``, ``key``, ``start``, the fields) and their change points (``date``,
    ``key``, ``window``, ``end``, the values), each read once and persisted."""

    keys: dict[date, list[str]]
    frames: DataFrame
    changes: DataFrame

    def unpersist(self) -> None:
        self.frames.unpersist()
        self.changes.unpersist()


def _sample(changes: DataFrame, partials: DataFrame, days: list[date], reach: int, sample_keys: int,
            oversample: float = 64, rows: int | None = None, frame_columns: tuple[Column, ...] = (),
            change_columns: tuple[Column | str, ...] = ()) -> _Sample:
    """``sampled_keys``, keeping the sampled keys' rows: the frames in reach and the change
    points of every key below the final threshold are what the sample is drawn from, so each
    table is read once (at 10^5 events a day the check read the frames of its nine days twice,
    and the change points three times). ``rows``: the change points' rows, if known (the
    threshold's estimate); else they are counted."""
    wanted = [d.isoformat() for d in days]
    hashed = F.xxhash64("key", F.col("date").cast("string")).alias("hash")
    changes = changes.where(F.col("date").isin(wanted)).select("date", "key", hashed, *change_columns)
    reached = F.explode(F.sequence("event_date", F.date_add("event_date", reach))).alias("date")
    active = partials.select("key", reached, *frame_columns).where(F.col("date").isin(wanted))
    active = active.select("date", "key", hashed, *[c for c in active.columns if c not in ("date", "key")])
    quiet_keys = max(1, sample_keys // 2)

    def below(fraction: float) -> tuple[DataFrame, DataFrame, dict[tuple[date, bool], list[tuple[int, str]]]]:
        """The rows below the threshold (persisted), and their (hash, key) pairs by day and
        whether the key is quiet."""
        def cut(rows: DataFrame) -> DataFrame:
            if fraction < 1:
                rows = rows.where(F.col("hash") < F.lit(-(2**63) + int(fraction * 2**64)))
            return rows.persist()

        changed_rows, frame_rows = cut(changes), cut(active)
        changed = changed_rows.select("date", "key", "hash").distinct()
        quiet = frame_rows.select("date", "key", "hash").distinct().join(changed, ["date", "key", "hash"],
                                                                          "left_anti")
        by_day: dict[tuple[date, bool], list[tuple[int, str]]] = defaultdict(list)
        for r in (changed.withColumn("quiet", F.lit(False))
                  .unionByName(quiet.withColumn("quiet", F.lit(True))).collect()):
            by_day[(r["date"], r["quiet"])].append((r["hash"], r["key"]))
        return changed_rows, frame_rows, by_day

    fraction = min(1.0, oversample * sample_keys * len(days) / max(1, changes.count() if rows is None else rows))
    changed_rows, frame_rows, by_day = below(fraction)
    while fraction < 1 and any(len(by_day[(d, False)]) < sample_keys or len(by_day[(d, True)]) < quiet_keys
                               for d in days):
        changed_rows.unpersist()
        frame_rows.unpersist()
        fraction = min(1.0, fraction * 16)
        changed_rows, frame_rows, by_day = below(fraction)
    keys: dict[date, list[str]] = defaultdict(list)
    for (day, quiet), pairs in sorted(by_day.items()):
        keys[day] += [key for _, key in sorted(pairs)[:quiet_keys if quiet else sample_keys]]
    return _Sample({day: picked for day, picked in keys.items() if picked}, frame_rows, changed_rows)


def sampled_keys(changes: DataFrame, partials: DataFrame, days: list[date], reach: int, sample_keys: int,
                 oversample: float = 64, rows: int | None = None) -> dict[date, list[str]]:
    """Per day, the ``sample_keys`` keys with change points and the ``sample_keys // 2`` (at least
    one) keys with frames in reach but none, that have the smallest hashes of key and day.

    Only pairs whose hash falls below a threshold are deduplicated, joined and collected: about
    ``oversample`` times the sample, judged from the change points' row count, so a day of a
    million keys moves a few hundred rows instead of all of them (at 10^7 events the sample took
    1.0 s instead of 5.8 s). The smallest hashes below a threshold are the smallest of all, so
    the sample is the same; where a day has fewer candidates than it needs, the threshold rises
    sixteenfold until it spans every hash.
    """
    sample = _sample(changes, partials, days, reach, sample_keys, oversample, rows)
    sample.unpersist()
    return sample.keys


def changes_conserve_frames(changes: DataFrame, partials: DataFrame, config: PipelineConfig,
                            days: list[date], sample_keys: int = CONSERVATION_SAMPLE_KEYS,
                            rows: int | None = None) -> dict[date, Outcome]:
    """For a sample of keys per day, the change points equal a direct recomputation from frames.

    ``partials`` must hold the frames of event days ``first - frames_reach_days .. last``.
    Sampled per day: up to ``sample_keys`` keys with change points that day, and half as many
    with frames in reach but no change point (a key whose change points went missing
    altogether), chosen by a hash of key and day so a re-run checks the same keys. Their frames
    are collected (a sample is small) and every window end of the day is evaluated, each window
    folded from its own frames. Aggregations whose stored partial Python cannot combine
    (sketches) are left out; then a change point where only they changed is not an error.
    ``rows``: the change points' rows where known (the Delta log's count), to size the sample's
    hash threshold without counting them.
    """
    checked = [a for a in config.aggregations if python_combinable(a)]
    skipped = [a.name for a in config.aggregations if not python_combinable(a)]
    reach = frames_reach_days(config)
    spark = changes.sparkSession
    if not all(spec.keyed for spec in config.windows):  # non-keyed windows: every key's frames as one
        partials = partials.unionByName(with_all_keys(partials, config, "frame_start", "event_date"))

    fields = [c for a in checked for c in a.field_columns()]
    names = [a.name for a in checked]
    sample = _sample(changes, partials, days, reach, sample_keys, rows=rows,
                     frame_columns=(F.unix_seconds("frame_start").alias("start"), *fields),
                     change_columns=("window", F.unix_seconds("window_end").alias("end"), *names))
    try:
        keys_by_day = sample.keys
        if not keys_by_day:
            return {d: Outcome(True, {"keys_checked": 0}) for d in days}
        sample_frame = F.broadcast(spark.createDataFrame([(d, k) for d, ks in keys_by_day.items() for k in ks],
                                                         "date date, key string"))
        frame_rows = sample.frames.join(sample_frame, ["date", "key"]).collect()
        change_rows = sample.changes.join(sample_frame, ["date", "key"]).collect()
    finally:
        sample.unpersist()
    frames: dict[tuple[date, str], list] = defaultdict(list)
    for r in frame_rows:
        partial, i = [], 0
        for a in checked:
            n = len(a.fields)
            partial.append(tuple(r[fields[i + j]] for j in range(n)))
            i += n
        frames[(r["date"], r["key"])].append((r["start"], tuple(partial)))

    recorded: dict[tuple[date, str, str], dict[int, tuple]] = defaultdict(dict)
    for r in change_rows:
        recorded[(r["date"], r["key"], r["window"])][r["end"]] = tuple(r[n] for n in names)

    outcomes = {}
    for day in days:
        problems: list[dict] = []
        for key in keys_by_day.get(day, []):
            for spec in [s for s in config.windows if s.keyed == (key != ALL_KEYS)]:
                value = range_folded_values(frames.get((day, key), []), spec, checked)
                want = expected_rows(value, spec, day)
                have = recorded.get((day, key, spec.name), {})
                for end in sorted(set(want) | set(have)):
                    kind = _mismatch(spec, end in want, have.get(end), value(end)[0], strict=not skipped)
                    if kind:
                        problems.append({"key": key, "window": spec.name, "problem": kind,
                                         "window_end": from_epoch_seconds(end).isoformat(),
                                         "expected": json_safe(value(end)[0]),
                                         "recorded": json_safe(have.get(end))})
        metadata: dict[str, Any] = {"keys_checked": len(keys_by_day.get(day, [])),
                                    "aggregations_checked": names, "mismatches": len(problems)}
        if skipped:
            metadata["aggregations_not_recomputed"] = skipped
        if problems:
            metadata["sample_rows"] = problems[:SAMPLE_ROWS]
        outcomes[day] = Outcome(not problems, metadata)
    return outcomes


def _mismatch(spec: WindowSpec, expected_here: bool, recorded: tuple | None, value: tuple,
              strict: bool) -> str | None:
    """What is wrong with one (key, window, end), if anything."""
    if recorded is None and expected_here:
        return "missing row" if spec.emit == "final" else "missing change point"
    if recorded is None:
        return None
    if not all(_same(v, r) for v, r in zip(value, recorded, strict=True)):
        return "value differs from the frames"
    if not expected_here and spec.emit == "final":
        return "row for a window without events"
    if not expected_here and strict:
        return "change point where the value does not change"
    return None


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
    continued = spark.createDataFrame(
        [(r[0], r[1] + timedelta(days=1)) for r in of_this_definition.select("window", "date").distinct().collect()],
        "window string, date date").withColumn("continued", F.lit(True))
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
            .join(F.broadcast(last_end), ["window", "date"], "left")
            .join(F.broadcast(continued), ["window", "date"], "left"))

    is_final = F.col("window").isin(final) if final else F.lit(False)
    has_change = F.col("end").isNotNull()
    expected = {v: F.when(is_final, F.when(F.col("end") == F.col("last_end"), F.col(f"change_{v}"))
                          .otherwise(empty[v]))
                .when(has_change, F.col(f"change_{v}"))
                .when(F.col("in_previous"), F.col(f"previous_{v}"))
                .otherwise(empty[v]) for v in values}
    actual = {v: F.when(F.col("in_snapshot"), F.col(f"snapshot_{v}")).otherwise(empty[v]) for v in values}
    known = is_final | has_change | F.col("continued").isNotNull()
    judged = rows.select(
        "date", "key", "window",
        F.when(known, ~same_values(config, expected, actual) | F.col("snapshots_differ")).alias("mismatch"),
        F.struct(*[expected[v].alias(v) for v in values]).alias("expected"),
        F.struct(*[actual[v].alias(v) for v in values]).alias("snapshot"),
    )
    totals = {r["date"]: r for r in judged.groupBy("date").agg(
        F.count(F.lit(1)).alias("keys"),
        F.count(F.when(F.col("mismatch"), 1)).alias("mismatches"),
        F.count(F.when(F.col("mismatch").isNull(), 1)).alias("unverified")).collect()}
    examples: dict[date, list] = defaultdict(list)
    if any(t["mismatches"] for t in totals.values()):  # computed again, only to show a few
        rank = Window.partitionBy("date").orderBy("window", "key")
        for r in (judged.where("mismatch").withColumn("n", F.row_number().over(rank))
                  .where(F.col("n") <= SAMPLE_ROWS).collect()):
            examples[r["date"]].append({"key": r["key"], "window": r["window"],
                                        "expected": json_safe(r["expected"].asDict()),
                                        "snapshot": json_safe(r["snapshot"].asDict())})
    outcomes = {}
    for day in days:
        total = totals.get(day)
        mismatches = total["mismatches"] if total else 0
        metadata: dict[str, Any] = {
            "keys_compared": total["keys"] if total else 0, "mismatches": mismatches,
            "unverified_without_previous_snapshot": total["unverified"] if total else 0}
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
