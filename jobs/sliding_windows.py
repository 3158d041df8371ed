"""Sliding windows: change points and per-key snapshots from minute partials, by entering and leaving.

For the window ends of days ``first .. last`` the job never expands a frame into the windows
that hold it and never refolds a whole window. A frame starting at ``f`` changes a window
exactly twice: when it enters (the first end ``t > f``) and when it leaves (the first end
``t > f + length``). So each frame becomes two deltas, ``+partial`` at its enter end and
``-partial`` at its leave end, and a key's invertible state at every end is

    baseline (its state just before ``first``) + running sum of its deltas up to that end,

one Spark window function (``jobs.windows.running_state``). The baseline is the previous day's
snapshot; only where that holds no state of the window as configured (the first run, a day not
materialised, a window added or redefined since) is it bootstrapped once from the frames of the
window before ``first``. Non-invertible aggregations are evaluated at the same ends from
hierarchical frames (``jobs.windows.exact_values``): the suffix of the tile the window starts
in, whole tiles, and the prefix of the tile it ends in. A daily run therefore reads the frames
that enter and leave that day, the day tiles in between, and one small snapshot, whatever the
length. What a run writes is chosen in ``jobs.windows.emission``.

The same machinery serves every window kind of ``WindowSpec``: offsets and gaps only move the
grid of ends (a frame in a gap enters and leaves at one end); a cumulating window's frames leave
together at its next period (``running_state.period_leaves``); a non-keyed window slides over the
frames of all keys combined (``running_state.with_all_keys``); ``final`` emission repeats a key's
state at every end.

    python -m jobs.sliding_windows --lakehouse DIR --date YYYY-MM-DD
    python -m jobs.sliding_windows --lakehouse DIR --from 2025-01-27T13:00 --until 2025-01-27T14:00

The second runs part of a day (windows of event time only): it replaces the change
points ending in ``[from, until)``, continuing from the state an earlier run of the day left at
the end before it (``interval_state``, ``window_inputs.carried_windows``), or else from the day
before's snapshot over the day's frames so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.runtime import pipes
from jobs.runtime.computed_once import computed_once
from jobs.storage import commits, delta_io, delta_write
from jobs.storage.filters import interval as interval_filter
from jobs.tables import (
    COUNT_STATE,
    INTERVAL_STATE,
    MINUTE_PARTIALS,
    SESSION_STATE,
    TABLE_COLUMN,
    WINDOW_CHANGES,
    WINDOW_SNAPSHOT,
    day_filter,
    declared_columns,
    frame_stamp,
    partial_columns,
    written_together,
)
from jobs.tables import days as day_range
from jobs.windows import count_windows, session_windows
from jobs.windows.carried_state import day_marks
from jobs.windows.emission import table_rows, with_emission_marks
from jobs.windows.exact_values import exact_cumulating_values, exact_values, tiles_of
from jobs.windows.partial_merges import with_finished_values
from jobs.windows.running_state import (
    baseline_from_frames, baseline_from_snapshot, frame_deltas, period_leaves, presorted_by_key, state_columns,
    with_all_keys, with_running_state,
)
from jobs.windows.window_grid import Windows, seconds_of
from jobs.windows.window_inputs import (
    ReadPlan, carried_state, carried_windows, continued_windows, days_of, in_ranges, read_day_tiles, read_frames,
    read_snapshot, require_partials,
)
from windowing_core.config import PipelineConfig
from windowing_core.reference import day_start
from windowing_core.run_interval import RunInterval, refuse_below_a_day
from windowing_core.window_spec import WindowSpec


class _Inputs:
    """What a run reads, per window: its frames (a non-keyed window's of all keys combined:
    ``with_all_keys``) within the ranges a step needs, and its tiles, each row tagged with its
    ``window``, so that one plan serves all windows (``jobs.windows.window_grid``)."""

    def __init__(self, spark: SparkSession, lakehouse: str, frames: DataFrame, config: PipelineConfig,
                 plans: dict[str, ReadPlan], clock: str) -> None:
        self.spark, self.lakehouse, self.config, self.plans, self.clock = spark, lakehouse, config, plans, clock
        self.frames = {True: frames}
        if any(not s.keyed for s in config.windows):
            self.frames[False] = with_all_keys(frames, config, "frame_start", "event_date")
        self.columns = ["key", "frame_start", *state_columns(config), *partial_columns(config, invertible=False)]

    def frames_of(self, windows: Windows, ranges: Callable[[WindowSpec], list[tuple[int, int]]]) -> DataFrame:
        return reduce(DataFrame.unionByName, [
            self.frames[s.keyed].where(in_ranges(seconds_of(), ranges(s))).select(F.lit(s.name).alias("window"),
                                                                                 *self.columns)
            for s in windows.specs])

    def tiles_of(self, windows: Windows) -> DataFrame | None:
        """Each window's tiles for its exact values: whole days (``daily_partials``) where its plan
        reads them, else (a sliding window) tiles merged from its frames, or none."""
        fields = ["window", "key", "tile", *partial_columns(self.config, invertible=False)]
        by_day = windows.where(lambda s: bool(self.plans[s.name].tile_days))
        parts = []
        if by_day:
            days = sorted({d for s in by_day.specs for d in self.plans[s.name].tile_days})
            tiles = {True: read_day_tiles(self.spark, self.lakehouse, days, self.config, self.clock)}
            if any(not s.keyed for s in by_day.specs):
                tiles[False] = with_all_keys(tiles[True], self.config, "tile", "event_date")
            for s in by_day.specs:
                midnights = [day_start(date.fromisoformat(d)) for d in self.plans[s.name].tile_days]
                parts.append(tiles[s.keyed].where(F.col("tile").isin(midnights))
                             .select(F.lit(s.name).alias("window"), *fields[1:]))
        from_frames = windows.where(lambda s: not self.plans[s.name].tile_days and not s.cumulating)
        if from_frames:
            frames = self.frames_of(from_frames, lambda s: self.plans[s.name].exact_ranges)
            parts.append(tiles_of(frames, from_frames, self.config).select(*fields))
        return reduce(DataFrame.unionByName, parts) if parts else None


def window_values(inputs: _Inputs, baseline: DataFrame, windows: Windows, stop: int,
                  persisted: list[DataFrame]) -> DataFrame:
    """Every aggregation's finished value at each (window, key, end) where a key's window can change.

    Where exact values are merged, the running state is computed once (added to ``persisted``):
    its ends are read by the head, tail and middle of every family and the state by the last
    join, and each would otherwise sort and scan the deltas again (a small day of every kind:
    65 Spark stages instead of 74)."""
    plans, config = inputs.plans, inputs.config
    after = windows.param(lambda s: plans[s.name].after)
    deltas = frame_deltas(inputs.frames_of(windows, lambda s: plans[s.name].delta_ranges), windows, config,
                          after, stop).unionByName(baseline)
    cumulating = windows.where(lambda s: s.cumulating)
    if cumulating:
        entering = deltas if cumulating.names == windows.names else deltas.where(cumulating.filter())
        deltas = deltas.unionByName(period_leaves(entering, cumulating, config, stop))
    running = with_running_state(presorted_by_key(deltas, windows, after), config)
    if any(plans[s.name].exact_ranges for s in windows.specs):
        running = computed_once(running)
        persisted.append(running)
    exact = []
    for is_cumulating, values in ((False, exact_values), (True, exact_cumulating_values)):
        family = windows.where(lambda s, c=is_cumulating: s.cumulating == c and bool(plans[s.name].exact_ranges))
        if family:
            ends = running.select("window", "key", "end")
            ends = ends if family.names == windows.names else ends.where(family.filter())
            frames = inputs.frames_of(family, lambda s: plans[s.name].exact_ranges)
            exact.append(values(frames, inputs.tiles_of(family), ends, family, config))
    if exact:
        running = running.join(reduce(DataFrame.unionByName, exact), ["window", "key", "end"], "left")
    return with_finished_values(running, config)


def sliding_windows(spark: SparkSession, lakehouse: str, first: date, last: date,
                    config: PipelineConfig, clock: str = "event",
                    interval: RunInterval | None = None) -> tuple[DataFrame | None, dict]:
    """The rows of both tables (``table_rows``) of every configured window, for days ``first .. last``.

    All windows come from one read of the minute partials, the union of the frames each needs
    (with ``clock="arrival"``, of the frames by arrival time: ``jobs.windows.arrival_frames``), and go
    through one plan (``jobs.windows.window_grid``). The rows are None for a configuration without
    sliding windows. ``info["baseline"]`` says per window whether it continued from the snapshot
    of the day before ``first`` or was bootstrapped; ``info["persisted"]`` lists what the caller
    unpersists once the rows are written. ``interval`` narrows a one-day run to the ends in it
    (``ReadPlan``).
    """
    commits.require_stamp(MINUTE_PARTIALS.path(lakehouse), frame_stamp(config))
    if not config.windows:  # only session windows (jobs.windows.session_windows)
        return None, {"baseline": {}, "persisted": [], "ends_day": True}
    continued = continued_windows(spark, lakehouse, first - timedelta(days=1), config)
    plans = {spec.name: ReadPlan(spec, config, first, last, interval) for spec in config.windows}
    carried = carried_windows(spark, lakehouse, config, interval, plans, continued) if interval else set()
    plans.update({spec.name: ReadPlan(spec, config, first, last, interval, carried=True)
                  for spec in config.windows if spec.name in carried})
    previous = read_snapshot(spark, lakehouse, first - timedelta(days=1), continued)
    ranges = [r for p in plans.values() for r in p.frame_ranges]
    ranges += [p.baseline_window for name, p in plans.items() if name not in continued]
    # Every day whose frames the run reads, the days before ``first`` too: a bootstrap reads a
    # window's length of them, and a frame never made would silently neither enter nor leave.
    # A day before the data holds no events and passes (``unmaterialised_partials``).
    read = day_range(first, last) if clock == "arrival" else [date.fromisoformat(d) for d in days_of(*ranges)]
    require_partials(spark, lakehouse, read, config)
    frames = read_frames(spark, lakehouse, ranges, config, clock)
    persisted = []
    # The daily case (one invertible window continuing from a snapshot) reads the frames once;
    # anything reading them again (a bootstrap, exact values, more windows) reads them computed once.
    if len(continued) < len(plans) or len(plans) > 1 or any(p.exact_ranges for p in plans.values()):
        frames = computed_once(frames)
        persisted.append(frames)
    try:
        inputs = _Inputs(spark, lakehouse, frames, config, plans, clock)
        windows = Windows(config.windows)
        baselines = []
        kept = windows.where(lambda s: s.name in continued and s.name not in carried)
        if kept:
            baselines.append(baseline_from_snapshot(previous, kept, config, kept.param(lambda s: plans[s.name].after)))
        if carried:  # a later run of the day: from the state at the last end before it
            kept = windows.where(lambda s: s.name in carried)
            after = kept.param(lambda s: plans[s.name].after)
            state = carried_state(spark, lakehouse, first, kept, after, previous, state_columns(config))
            baselines.append(baseline_from_snapshot(state, kept, config, after))
        bootstrapped = windows.where(lambda s: s.name not in continued)
        if bootstrapped:
            at = inputs.frames_of(bootstrapped, lambda s: [plans[s.name].baseline_window])
            baselines.append(baseline_from_frames(at, bootstrapped, config, plans))
        stop = next(iter(plans.values())).stop  # the same for every window: the run's end
        values = window_values(inputs, reduce(DataFrame.unionByName, baselines), windows, stop, persisted)
        rows = table_rows(with_emission_marks(values, config, first, last), windows, config, plans,
                          below_a_day=interval is not None)
        marks = reached_marks(spark, windows, plans, first) if interval is not None else None
        if marks is not None:
            rows = rows.unionByName(marks, allowMissingColumns=True)
    except BaseException:  # the caller unpersists only what it is handed
        for df in persisted:
            df.unpersist()
        raise
    info = {"baseline": {name: "carried" if name in carried else "snapshot" if name in continued else "bootstrap"
                         for name in plans},
            "persisted": persisted, "ends_day": any(p.ends_day for p in plans.values())}
    return rows, info


def reached_marks(spark: SparkSession, windows: Windows, plans: dict[str, ReadPlan], day: date) -> DataFrame | None:
    """``interval_state``'s marker rows of a run below a day (``carried_state.day_marks``): which
    end each window reached, for the next run of the day to continue from. No marker for a
    window without an end in the run: the state at its last end is an earlier run's."""
    reached = windows.where(lambda s: plans[s.name].emits)
    if not reached:
        return None
    ends = {"window_start": lambda s: s.window_start(plans[s.name].last_end), "as_of": lambda s: plans[s.name].last_end}
    marks = day_marks(spark, INTERVAL_STATE, reached, ends, day, day, F.lit(0).cast("bigint").alias("event_count"))
    return marks.withColumns({c: F.timestamp_seconds(c) for c in ends})


NOTHING_WRITTEN = {"rows_written": 0, "files_written": 0}
"""What a run says of a table it leaves alone (a part before the day's end: the snapshot, the state)."""


def by_clock(config: PipelineConfig, clock: str) -> PipelineConfig | None:
    """The configuration with only the sliding windows of one clock (``time``), or None."""
    windows = tuple(w for w in config.windows if w.time == clock)
    return replace(config, windows=windows, sessions=(), counts=()) if windows else None


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig, *,
        interval: RunInterval | None = None) -> dict:
    """Compute days ``first .. last`` and replace both tables' partitions, from one pass; with
    session or count windows configured, their rows and ``session_state`` or ``count_state`` join
    the same write (``jobs.windows.session_windows``, ``jobs.windows.count_windows``).

    ``interval`` (within the one day ``first == last``) runs part of a day: it replaces
    the change points whose ``window_end`` lies in it, and a window's snapshot of the day where
    the interval holds the day's last end (``ReadPlan``); the sessions' and counts' state where it
    closes the day. Windows of event time only."""
    refuse_below_a_day(config, "windows", interval, first, last)
    commits.require_whole_writes([t.path(lakehouse) for t in written_together(WINDOW_CHANGES, config)], first, last,
                                 str(interval) if interval else None)
    event = by_clock(config, "event")
    rows, info = (sliding_windows(spark, lakehouse, first, last, event, interval=interval) if event
                  else (None, {"baseline": {}, "persisted": [], "ends_day": True}))
    if config.arrival_windows:  # ``time: arrival``: the same job over the frames by arrival time
        arrival_rows, arrival_info = sliding_windows(spark, lakehouse, first, last, by_clock(config, "arrival"),
                                                     clock="arrival")
        rows = arrival_rows if rows is None else rows.unionByName(arrival_rows)
        info = {"baseline": {**info["baseline"], **arrival_info["baseline"]},
                "persisted": info["persisted"] + arrival_info["persisted"], "ends_day": info["ends_day"]}
    sessions, session_info = session_windows.session_windows(spark, lakehouse, first, last, config, interval)
    counts, count_info = count_windows.count_windows(spark, lakehouse, first, last, config, interval)
    rows = with_key_columns(reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                                   [r for r in (rows, sessions, counts) if r is not None]), config)
    days = day_filter("date", first, last)
    # A run below a day replaces the rows ending in its interval: change points by window_end,
    # state by as_of; the snapshot only in the part holding the day's last end (none ends earlier).
    # A run of whole days empties their interval_state: a later part continues from its snapshot.
    within = {WINDOW_CHANGES: "window_end", WINDOW_SNAPSHOT: "as_of", INTERVAL_STATE: "as_of"}
    parts_run = delta_io.table_exists(INTERVAL_STATE.path(lakehouse))
    if interval is None:
        written_by_run = (WINDOW_CHANGES, WINDOW_SNAPSHOT, *((INTERVAL_STATE,) if parts_run else ()))
    else:
        written_by_run = (WINDOW_CHANGES, *((WINDOW_SNAPSHOT,) if info["ends_day"] else ()), INTERVAL_STATE)
    targets = {t.name: delta_write.Target(t.path(lakehouse), [c for c, _ in declared_columns(t.name, config)],
                                       list(t.partition_by), days,
                                       row_filters=interval_filter(within[t], interval.start, interval.until)
                                       if interval else [])
               for t in written_by_run}
    carries = interval is None or interval.closes_day  # a part before the day's end leaves its state alone
    if config.sessions and carries:
        targets[SESSION_STATE.name] = session_windows.state_target(lakehouse, first, last, config)
    if config.counts and carries:
        targets[COUNT_STATE.name] = count_windows.state_target(lakehouse, first, last, config)
    if config.sessions or config.counts:
        declared = {c: t for name in targets for c, t in declared_columns(name, config)}
        rows = rows.select("*", *[F.lit(None).cast(declared[c]).alias(c) for c in declared if c not in rows.columns])
    try:
        written = delta_write.replace_partitions_routed(rows, TABLE_COLUMN, targets, days=(first, last),
                                                        interval=str(interval) if interval else None)
    finally:
        for df in info["persisted"] + session_info["persisted"]:
            df.unpersist()
    return {"changes": written[WINDOW_CHANGES.name],
            "snapshots": written.get(WINDOW_SNAPSHOT.name, NOTHING_WRITTEN),
            "baseline": {**info["baseline"], **session_info["baseline"], **count_info["baseline"]},
            **({"session_state": written.get(SESSION_STATE.name, NOTHING_WRITTEN),
                "session_watermark": session_info["watermark"]} if config.sessions else {}),
            **({"count_state": written.get(COUNT_STATE.name, NOTHING_WRITTEN)} if config.counts else {}),
            **({"interval_state": written[INTERVAL_STATE.name]} if interval else {})}




def with_key_columns(rows: DataFrame, config: PipelineConfig) -> DataFrame:
    """A composite key's fields as columns, from ``key`` (a JSON array of their values): null in
    a non-keyed window's rows (``ALL_KEYS``), whose key is no array."""
    if not config.key_fields:
        return rows
    parts = F.from_json("key", "array<string>")
    return rows.withColumns({name: F.get(parts, i) for i, name in enumerate(config.key_fields)})


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import run_job

    def job(spark, config, args, first, last):
        result = run(spark, args.lakehouse, first, last, config, interval=args.interval)
        pipes.report("sliding_windows", result)
        return (f"wrote {result['changes']['rows_written']} change points and "
                f"{result['snapshots']['rows_written']} snapshot rows for {args.interval or f'{first} .. {last}'} "
                f"(baseline: {', '.join(f'{w} {b}' for w, b in result['baseline'].items())})")

    return run_job(__doc__, job, argv, below_a_day="windows")

if __name__ == "__main__":
    raise SystemExit(main())
