"""Where panes' time goes: each job cut after every step, timed up to there, on one lakehouse.

    .venv/bin/python -m bench.steps                                   # bench/.work/n10000000, ~6 min
    .venv/bin/python -m bench.steps --lakehouse bench/.work/n10000 --reps 5
    .venv/bin/python -m bench.steps --lakehouse bench/.work/scaling-400000keys --window 30d   # after bench.run's scaling

``profile.json`` of ``bench.run`` times whole Spark queries; this prints what each step adds.
Every step runs the jobs' own functions up to that step into Spark's ``noop`` sink (so a step's
time includes all before it), except the last of each job, which is the job itself with its
Delta writes. The daily tiles step shows only where the configuration keeps ``daily_partials``
(not under the default count and sum). The shuffle on key alone is the bench's stand-in, to
split what the job's presort (``sliding_windows.presorted_by_key``: the shuffle, then a radix
sort) and the running sum's Window (its own sort, then the sums) add. The steps are interleaved
in every round and the best of ``--reps`` is kept; the difference between two steps is what the
later one adds. Run ``python -m bench.run`` for the size first: it leaves the minute partials
and D - 1's snapshot in the lakehouse, and the last step of each job replaces day D's partitions
there as panes' daily run would. ``--window`` slides that one window (every minute) instead of
the default 7 days, first recomputing D - 1's snapshot for it, untimed: on the window-length set
it shows what a longer window adds.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import timedelta

from pyspark.sql import DataFrame

from bench.measure import best_interleaved
from bench.run import DAY


def _noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def steps(spark, lakehouse: str, config) -> dict[str, list[tuple[str, Callable[[], object]]]]:
    """Each job's steps in order, each a thunk that runs the job up to and including it."""
    from jobs import delta_io
    from jobs import minute_partials as mp
    from jobs import sliding_windows as sw
    from jobs.tables import EVENTS, TABLE_COLUMN, day_filter
    from windowing_core.config import reads_day_tiles

    from bench.methods import scan_floor

    def events() -> DataFrame:
        arrivals = day_filter("arrival_date", *mp.arrival_days(DAY, DAY, config))
        return mp.filter_event_days(delta_io.read_table(spark, EVENTS.path(lakehouse), partition_filters=arrivals),
                                    DAY, DAY)

    def unique() -> DataFrame:
        return mp.deduplicate_across_arrivals(events(), ["key", "event_time", "value"])

    def frames() -> DataFrame:
        return unique().transform(mp.with_frame_start, config.bucket).transform(mp.to_partials, config)

    def frames_and_tiles() -> DataFrame:
        partials = frames()
        return partials.unionByName(mp.to_daily_partials(partials, config), allowMissingColumns=True)

    spec = config.windows[0]
    plan = sw._Plan(spec, config, DAY, DAY)

    def read() -> tuple[DataFrame, DataFrame]:
        before = DAY - timedelta(days=1)
        previous = sw.read_snapshot(spark, lakehouse, before, sw.continued_windows(spark, lakehouse, before, config))
        if previous is None:
            raise SystemExit(f"no snapshot of {DAY - timedelta(days=1)} in {lakehouse}: "
                             "run bench.run for its size first")
        return sw._read_frames(spark, lakehouse, plan.frame_ranges), previous

    def read_both() -> DataFrame:
        frames_read, previous = read()
        return frames_read.unionByName(previous, allowMissingColumns=True)

    def deltas() -> DataFrame:
        frames_read, previous = read()
        return sw.frame_deltas(frames_read, spec, config, plan.after, plan.stop).unionByName(
            sw.baseline_from_snapshot(previous, spec, config, plan.after))

    def running() -> DataFrame:
        return sw.with_running_state(sw.presorted_by_key(deltas(), plan.after), config)

    def marked() -> DataFrame:
        return sw.with_emission_marks(sw.with_finished_values(running(), config), config, DAY, DAY)

    tiles = ([("+ folded into daily tiles", lambda: _noop(frames_and_tiles()))]
             if reads_day_tiles(config) else [])  # only where the partials job writes them
    return {
        "scan floor": [("events read, minute buckets per key", lambda: scan_floor(spark, lakehouse, DAY, config))],
        "minute partials": [
            ("events read (3 arrival days, event day D kept)", lambda: _noop(events())),
            ("+ deduplicated across arrivals", lambda: _noop(unique())),
            ("+ grouped into frames", lambda: _noop(frames())),
            *tiles,
            ("+ Delta writes (the job)", lambda: mp.run(spark, lakehouse, DAY, DAY, config)),
        ],
        "sliding windows": [
            ("frames and D - 1's snapshot read", lambda: _noop(read_both())),
            ("+ two deltas per frame, and the baseline", lambda: _noop(deltas())),
            ("+ shuffled on key", lambda: _noop(deltas().repartition("key"))),
            ("+ presorted by key hash and end", lambda: _noop(sw.presorted_by_key(deltas(), plan.after))),
            ("+ running sum (Window)", lambda: _noop(running())),
            ("+ finished values, marks", lambda: _noop(marked())),
            ("+ both tables' rows", lambda: _noop(sw.table_rows(marked(), spec, config, plan.after, plan.last_end)
                                                 .drop(TABLE_COLUMN))),
            ("+ Delta writes (the job)", lambda: sw.run(spark, lakehouse, DAY, DAY, config)),
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", default="bench/.work/n10000000", help="a lakehouse bench.run prepared")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds; the best is kept (default 3)")
    parser.add_argument("--window",
                        help="slide this window length instead, e.g. 30d (D - 1's snapshot recomputed)")
    args = parser.parse_args(argv)

    from bench.run import bootstrap, sliding_every_minute
    from jobs.spark_session import get_spark
    from windowing_core.config import PipelineConfig

    spark, config = get_spark(), PipelineConfig()
    if args.window:
        try:
            config = sliding_every_minute(args.window, config)
        except ValueError as e:
            parser.error(f"--window {args.window}: {e}")
        bootstrap(spark, args.lakehouse, config)
    jobs = steps(spark, args.lakehouse, config)
    runs = {(job, name): fn for job, named in jobs.items() for name, fn in named}
    best = {key: timing.seconds for key, timing in best_interleaved(spark, runs, args.reps).items()}

    floor = best["scan floor", jobs["scan floor"][0][0]]
    print(f"\n{args.lakehouse}, day {DAY}, {config.windows[0].name} window, best of {args.reps} interleaved "
          "rounds; each step includes those above it in its job:")
    for job, named in jobs.items():
        print(f"\n{job:<48} {'seconds':>8} {'adds':>7} {'vs floor':>9}")
        before = 0.0
        for name, _ in named:
            seconds = best[job, name]
            print(f"  {name:<46} {seconds:8.2f} {seconds - before:+7.2f} {seconds / floor:8.2f}x")
            before = seconds
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
