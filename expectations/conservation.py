"""``changes_conserve_frames``: a sample of keys' change points equal a recomputation from the
minute frames, by a method of its own.

The job runs deltas through running sums and two stacks; this check folds each window's frames
over a segment tree (``RangeFold``) in Python, so a defect in the job's method cannot hide in
the check. The keys are each day's smallest hashes of key and day, among the keys with change
points and among those with frames in reach but none (which must have none).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from expectations.check import Outcome
from expectations.validation import SAMPLE_ROWS, json_safe
from jobs.windows.running_state import with_all_keys
from windowing_core.aggregations import Aggregation
from windowing_core.change_points import change_points
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.window_spec import ALL_KEYS, DAY_SECONDS, WindowSpec, from_epoch_seconds, to_epoch_seconds


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


SAMPLE_KEYS = 8
"""Keys per day whose change points ``changes_conserve_frames`` recomputes from minute partials
(plus half as many keys with frames but no change point that day)."""

COLLECTED_ROWS = 20_000
"""Up to this many change points and frames in reach together (the Delta log's counts), the
sample collects the days' rows at once and picks its keys on the driver: two queries (4 Spark
jobs) instead of a threshold's pass (24 jobs; on a day of 2,000 events 0.7 s instead of 2.3 s)."""


@dataclass
class _Sample:
    """The keys sampled per day, and their rows, collected: their frames in reach (``date``,
    ``key``, ``start``, the fields) and their change points (``date``, ``key``, ``window``,
    ``end``, the values)."""

    keys: dict[date, list[str]]
    frames: list[Row]
    changes: list[Row]


def _sample(changes: DataFrame, partials: DataFrame, days: list[date], reach: int, sample_keys: int,
            oversample: float = 64, rows: int | None = None, frame_count: int | None = None,
            frame_columns: tuple[Column, ...] = (), change_columns: tuple[Column | str, ...] = ()) -> _Sample:
    """``sampled_keys``, with the sampled keys' rows. ``rows``: the change points' rows, if known
    (the threshold's estimate); else they are counted. ``frame_count``: the frames in reach, if
    known.

    Where the rows are few (``COLLECTED_ROWS`` with ``frame_count`` known, else a threshold that
    spans every hash), both tables' rows of the days are collected at once and the keys picked
    here. Else the rows below the threshold are persisted, so each table is read once (at 10^5
    events a day the check read the frames of its nine days twice, and the change points three
    times).
    """
    wanted = [d.isoformat() for d in days]
    hashed = F.xxhash64("key", F.col("date").cast("string")).alias("hash")
    changes = changes.where(F.col("date").isin(wanted)).select("date", "key", hashed, *change_columns)
    reached = F.explode(F.sequence("event_date", F.date_add("event_date", reach))).alias("date")
    active = partials.select("key", reached, *frame_columns).where(F.col("date").isin(wanted))
    active = active.select("date", "key", hashed, *[c for c in active.columns if c not in ("date", "key")])
    quiet_keys = max(1, sample_keys // 2)

    def picked(by_day: dict[tuple[date, bool], set[tuple[int, str]]]) -> dict[date, list[str]]:
        keys: dict[date, list[str]] = defaultdict(list)
        for (day, quiet), pairs in sorted(by_day.items()):
            keys[day] += [key for _, key in sorted(pairs)[:quiet_keys if quiet else sample_keys]]
        return {day: chosen for day, chosen in keys.items() if chosen}

    rows = changes.count() if rows is None else rows
    fraction = min(1.0, oversample * sample_keys * len(days) / max(1, rows))
    if (rows + frame_count * len(days) <= COLLECTED_ROWS) if frame_count is not None else fraction >= 1:
        change_rows, frame_rows = changes.collect(), active.collect()
        by_day: dict[tuple[date, bool], set[tuple[int, str]]] = defaultdict(set)
        for r in change_rows:
            by_day[(r["date"], False)].add((r["hash"], r["key"]))
        for r in frame_rows:
            if (r["hash"], r["key"]) not in by_day[(r["date"], False)]:
                by_day[(r["date"], True)].add((r["hash"], r["key"]))
        keys = picked(by_day)
        chosen = {(day, key) for day, ks in keys.items() for key in ks}
        return _Sample(keys, [r for r in frame_rows if (r["date"], r["key"]) in chosen],
                       [r for r in change_rows if (r["date"], r["key"]) in chosen])

    def below(fraction: float) -> tuple[DataFrame, DataFrame, dict[tuple[date, bool], set[tuple[int, str]]]]:
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
        by_day: dict[tuple[date, bool], set[tuple[int, str]]] = defaultdict(set)
        for r in (changed.withColumn("quiet", F.lit(False))
                  .unionByName(quiet.withColumn("quiet", F.lit(True))).collect()):
            by_day[(r["date"], r["quiet"])].add((r["hash"], r["key"]))
        return changed_rows, frame_rows, by_day

    changed_rows, frame_rows, by_day = below(fraction)
    try:
        while fraction < 1 and any(len(by_day[(d, False)]) < sample_keys or len(by_day[(d, True)]) < quiet_keys
                                   for d in days):
            changed_rows.unpersist()
            frame_rows.unpersist()
            fraction = min(1.0, fraction * 16)
            changed_rows, frame_rows, by_day = below(fraction)
        keys = picked(by_day)
        chosen = F.broadcast(changes.sparkSession.createDataFrame(
            [(d, k) for d, ks in keys.items() for k in ks], "date date, key string"))
        return _Sample(keys, frame_rows.join(chosen, ["date", "key"]).collect() if keys else [],
                       changed_rows.join(chosen, ["date", "key"]).collect() if keys else [])
    finally:
        changed_rows.unpersist()
        frame_rows.unpersist()


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
    return _sample(changes, partials, days, reach, sample_keys, oversample, rows).keys


def changes_conserve_frames(changes: DataFrame, partials: DataFrame, config: PipelineConfig,
                            days: list[date], sample_keys: int = SAMPLE_KEYS,
                            rows: int | None = None, frame_count: int | None = None,
                            oversample: float = 64, until: datetime | None = None) -> dict[date, Outcome]:
    """For a sample of keys per day, the change points equal a direct recomputation from frames.

    ``partials`` must hold the frames of event days ``first - frames_reach_days .. last``.
    Sampled per day: up to ``sample_keys`` keys with change points that day, and half as many
    with frames in reach but no change point (a key whose change points went missing
    altogether), chosen by a hash of key and day so a re-run checks the same keys. Their frames
    are collected (a sample is small) and every window end of the day is evaluated, each window
    folded from its own frames. Aggregations whose stored partial Python cannot combine
    (sketches) are left out; then a change point where only they changed is not an error.
    ``rows``: the change points' rows where known (the Delta log's count), to size the sample's
    hash threshold without counting them; ``frame_count``: the frames in reach where known exactly;
    ``oversample`` as ``sampled_keys``. ``until``: below a day, where the judged partitions end;
    a window end at or after it belongs to a partition not judged yet (``changes`` and
    ``partials`` hold nothing from it on).
    """
    checked = [a for a in config.aggregations if python_combinable(a)]
    skipped = [a.name for a in config.aggregations if not python_combinable(a)]
    reach = frames_reach_days(config)
    if not all(spec.keyed for spec in config.windows):  # non-keyed windows: every key's frames as one
        partials = partials.unionByName(with_all_keys(partials, config, "frame_start", "event_date"))
        frame_count = None if frame_count is None else 2 * frame_count

    fields = [c for a in checked for c in a.field_columns()]
    names = [a.name for a in checked]
    sample = _sample(changes, partials, days, reach, sample_keys, oversample, rows, frame_count,
                     frame_columns=(F.unix_seconds("frame_start").alias("start"), *fields),
                     change_columns=("window", F.unix_seconds("window_end").alias("end"), *names))
    keys_by_day = sample.keys
    if not keys_by_day:
        return {d: Outcome(True, {"keys_checked": 0}) for d in days}
    frames: dict[tuple[date, str], list] = defaultdict(list)
    for r in sample.frames:
        partial, i = [], 0
        for a in checked:
            n = len(a.fields)
            partial.append(tuple(r[fields[i + j]] for j in range(n)))
            i += n
        frames[(r["date"], r["key"])].append((r["start"], tuple(partial)))

    recorded: dict[tuple[date, str, str], dict[int, tuple]] = defaultdict(dict)
    for r in sample.changes:
        recorded[(r["date"], r["key"], r["window"])][r["end"]] = tuple(r[n] for n in names)

    judged_until = math.inf if until is None else to_epoch_seconds(until)
    outcomes = {}
    for day in days:
        problems: list[dict] = []
        for key in keys_by_day.get(day, []):
            for spec in [s for s in config.windows if s.keyed == (key != ALL_KEYS)]:
                value = range_folded_values(frames.get((day, key), []), spec, checked)
                want = {end: row for end, row in expected_rows(value, spec, day).items() if end < judged_until}
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
