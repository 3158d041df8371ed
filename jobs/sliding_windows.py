"""Sliding windows: change points and per-key snapshots from minute partials, by entering and leaving.

For the window ends of days ``first .. last`` the job never expands a frame into the windows
that hold it and never refolds a whole window. A frame starting at ``f`` changes a window
exactly twice: when it enters (the first end ``t > f``) and when it leaves (the first end
``t > f + length``). So each frame becomes two deltas, ``+partial`` at its enter end and
``-partial`` at its leave end, and a key's window value at every end is

    baseline (its state just before ``first``) + running sum of its deltas up to that end,

which is the combine/deduct algebra of invertible aggregations run as one Spark window
function (a running sum ordered by window end). The baseline is the previous day's snapshot;
only when that is missing (the first run, or a day not materialised) is it bootstrapped once
from the frames of the window before ``first``. A daily run therefore reads the frames that
enter and leave that day, plus one small snapshot, whatever the window's length.

    python -m jobs.sliding_windows --lakehouse DIR --date YYYY-MM-DD
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs import delta_io
from jobs.tables import MINUTE_PARTIALS, WINDOW_CHANGES, WINDOW_SNAPSHOT, day_filter, partial_columns
from windowing_core.config import PipelineConfig
from windowing_core.window_spec import DAY_SECONDS, WindowSpec
from windowing_core.reference import day_start

STATE = ["event_count"]  # carried with every aggregation's partial fields; 0 means empty


def _state_columns(config: PipelineConfig) -> list[str]:
    return STATE + partial_columns(config)


def _ceil_to_grid(seconds: Column, spec: WindowSpec) -> Column:
    """``WindowSpec.end_at_or_after`` as a Spark expression."""
    return seconds + F.pmod(F.lit(spec.offset) - seconds, F.lit(spec.slide))


def frame_deltas(partials: DataFrame, spec: WindowSpec, config: PipelineConfig,
                 after: int, stop: int) -> DataFrame:
    """``+partial`` at each frame's enter end, ``-partial`` at its leave end, for ends in (after, stop)."""
    f = F.unix_seconds("frame_start")
    state = _state_columns(config)
    enter = partials.select("key", _ceil_to_grid(f + spec.bucket, spec).alias("end"), *state)
    leave = partials.select("key", _ceil_to_grid(f + spec.length + spec.bucket, spec).alias("end"),
                            *[(-F.col(c)).alias(c) for c in state])
    return enter.unionByName(leave).where((F.col("end") > after) & (F.col("end") < stop))


def with_running_state(deltas: DataFrame, config: PipelineConfig) -> DataFrame:
    """Sum deltas per (key, end), then a running sum per key in end order: the window's state."""
    state = _state_columns(config)
    per_end = deltas.groupBy("key", "end").agg(*[F.sum(c).alias(c) for c in state])
    running = Window.partitionBy("key").orderBy("end").rowsBetween(Window.unboundedPreceding, 0)
    return per_end.select("key", "end", *[F.sum(c).over(running).alias(c) for c in state])


def with_finished_values(frame: DataFrame, config: PipelineConfig, prefix: str = "") -> DataFrame:
    """Add each aggregation's finished value (from ``prefix`` + its partial fields)."""
    return frame.withColumns({
        prefix + a.name: a.spark_finish([F.col(prefix + c) for c in a.field_columns()]).cast(a.output_type)
        for a in config.aggregations
    })


def filter_changes(running: DataFrame, config: PipelineConfig, after: int) -> DataFrame:
    """Keep ends where some finished value differs from the key's previous one (empty before any)."""
    by_key = Window.partitionBy("key").orderBy("end")
    previous = {f"prev_{c}": F.coalesce(F.lag(c).over(by_key), F.lit(0)) for c in partial_columns(config)}
    frame = with_finished_values(running.withColumns(previous), config)
    frame = with_finished_values(frame, config, prefix="prev_")
    changed = reduce(lambda a, b: a | b,
                     [~F.col(a.name).eqNullSafe(F.col("prev_" + a.name)) for a in config.aggregations])
    return frame.where((F.col("end") > after) & changed)


def _timestamp(seconds: Column | str) -> Column:
    return F.timestamp_seconds(F.col(seconds) if isinstance(seconds, str) else seconds)


def window_changes(running: DataFrame, spec: WindowSpec, config: PipelineConfig, after: int) -> DataFrame:
    return filter_changes(running, config, after).select(
        "key",
        F.lit(spec.name).alias("window"),
        _timestamp(F.col("end") - spec.length).alias("window_start"),
        _timestamp("end").alias("window_end"),
        *[a.name for a in config.aggregations],
        F.to_date(_timestamp("end")).alias("date"),
    )


def daily_snapshots(running: DataFrame, spec: WindowSpec, config: PipelineConfig,
                    first: date, last: date) -> DataFrame:
    """Each key's state as of each day's last window end, for days ``first .. last``.

    A key's state holds until its next change, so each day's last row is carried forward over
    the following days without one (a sequence of days, never of windows). Empty keys drop out.
    """
    by_key = Window.partitionBy("key").orderBy("date")
    last_per_day = (
        running.withColumn("date", F.greatest(F.to_date(_timestamp("end")), F.lit(first)))
        .withColumn("rank", F.row_number().over(Window.partitionBy("key", "date").orderBy(F.desc("end"))))
        .where("rank = 1")
        .withColumn("until", F.coalesce(F.date_sub(F.lead("date").over(by_key), 1), F.lit(last)))
        .withColumn("date", F.explode(F.sequence("date", "until")))
    )
    return (
        last_per_day.where(F.col("event_count") > 0)
        .transform(with_finished_values, config)
        .select(
            "key",
            F.lit(spec.name).alias("window"),
            _timestamp(_ceil_to_grid(F.unix_seconds(F.date_add("date", 1).cast("timestamp")), spec)
                       - spec.slide).alias("as_of"),
            *_state_columns(config),
            *[a.name for a in config.aggregations],
            "date",
        )
    )


def baseline_from_snapshot(snapshot: DataFrame, spec: WindowSpec, config: PipelineConfig,
                           at: int) -> DataFrame:
    return snapshot.where(F.col("window") == spec.name).select(
        "key", F.lit(at).cast("long").alias("end"), *_state_columns(config))


def baseline_from_frames(partials: DataFrame, spec: WindowSpec, config: PipelineConfig, at: int) -> DataFrame:
    """Bootstrap: fold the frames of the window ending at ``at`` (only when no snapshot exists)."""
    f = F.unix_seconds("frame_start")
    inside = partials.where((f >= at - spec.length) & (f < at))
    return inside.groupBy("key").agg(*[F.sum(c).alias(c) for c in _state_columns(config)]).select(
        "key", F.lit(at).cast("long").alias("end"), *_state_columns(config))


def _read_frames(spark: SparkSession, lakehouse: str, *ranges: tuple[int, int]) -> DataFrame:
    """Minute partials of frames starting in any of the ``[start, stop)`` ranges.

    Only the event-day partitions holding those ranges are read, so a daily run of a 7-day
    window reads the day that enters and the day that leaves, not the days in between.
    """
    epoch = date(1970, 1, 1)
    wanted = sorted({epoch + timedelta(days=d) for start, stop in ranges if stop > start
                     for d in range(start // DAY_SECONDS, (stop - 1) // DAY_SECONDS + 1)})
    partials = delta_io.read_table(spark, MINUTE_PARTIALS.path(lakehouse),
                                   partition_filters=[("event_date", "in", [d.isoformat() for d in wanted])])
    f = F.unix_seconds("frame_start")
    return partials.where(reduce(lambda a, b: a | b, [(f >= start) & (f < stop) for start, stop in ranges]))


def _read_previous_snapshot(spark: SparkSession, lakehouse: str, day: date) -> DataFrame | None:
    """The snapshot of ``day``, or None where there is none to continue from."""
    path = WINDOW_SNAPSHOT.path(lakehouse)
    if not delta_io.table_exists(path):
        return None
    previous = delta_io.read_table(spark, path, partition_filters=day_filter("date", day, day))
    # An empty snapshot and a missing one both bootstrap: the bootstrap is exact either way.
    return None if previous.isEmpty() else previous


def sliding_windows(spark: SparkSession, lakehouse: str, first: date, last: date,
                    config: PipelineConfig) -> tuple[DataFrame, DataFrame, dict]:
    """Change points and snapshots of every configured window, for days ``first .. last``."""
    start, stop = day_start(first), day_start(last) + DAY_SECONDS
    previous = _read_previous_snapshot(spark, lakehouse, first - timedelta(days=1))
    changes, snapshots = [], []
    for spec in config.windows:
        after = spec.end_at_or_after(start) - spec.slide  # the last end before the first day
        last_end = spec.end_at_or_before(stop - 1)
        # Frames entering in (after, stop) start in [after, last_end); frames leaving there
        # start one window length earlier. Each frame is read once even where ranges overlap.
        frames = _read_frames(spark, lakehouse, (after - spec.length, last_end - spec.length),
                              (max(after, last_end - spec.length), last_end))
        if previous is not None:
            baseline = baseline_from_snapshot(previous, spec, config, after)
        else:
            baseline = baseline_from_frames(_read_frames(spark, lakehouse, (after - spec.length, after)),
                                            spec, config, after)
        deltas = frame_deltas(frames, spec, config, after, stop)
        running = with_running_state(deltas.unionByName(baseline), config)
        changes.append(window_changes(running, spec, config, after))
        snapshots.append(daily_snapshots(running, spec, config, first, last))
    union = lambda frames: reduce(DataFrame.unionByName, frames)  # noqa: E731
    return union(changes), union(snapshots), {"baseline": "snapshot" if previous is not None else "bootstrap"}


def run(spark: SparkSession, lakehouse: str, first: date, last: date, config: PipelineConfig) -> dict:
    """Compute days ``first .. last`` and replace both tables' partitions."""
    changes, snapshots, info = sliding_windows(spark, lakehouse, first, last, config)
    days = day_filter("date", first, last)
    written_changes = delta_io.replace_partitions(changes, WINDOW_CHANGES.path(lakehouse),
                                                  partition_by=list(WINDOW_CHANGES.partition_by),
                                                  partition_filters=days)
    written_snapshots = delta_io.replace_partitions(snapshots, WINDOW_SNAPSHOT.path(lakehouse),
                                                    partition_by=list(WINDOW_SNAPSHOT.partition_by),
                                                    partition_filters=days)
    return {"changes": written_changes, "snapshots": written_snapshots, **info}


def main(argv: list[str] | None = None) -> int:
    from jobs.cli import job_arguments, run_job

    parser = job_arguments(__doc__)
    args = parser.parse_args(argv)

    def job(spark, config):
        result = run(spark, args.lakehouse, args.date, args.until or args.date, config)
        return (f"wrote {result['changes']['rows_written']} change points and "
                f"{result['snapshots']['rows_written']} snapshot rows for {args.date} .. "
                f"{args.until or args.date} (baseline: {result['baseline']})")

    return run_job(parser, args, job)


if __name__ == "__main__":
    raise SystemExit(main())
