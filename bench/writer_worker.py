"""One side of ``bench.writers``: a Spark session on one checkout of panes, timing on command.

    python bench/writer_worker.py --code DIR --lakehouse DIR --events-per-day N --keys K --seed S [--floors]

Run as a script (not ``-m``), so that ``jobs`` and ``bench.generate`` come from ``--code``: this
checkout, or an older one (the hand-made Delta writer of c05ed8a). It builds its own lakehouse
with that checkout's code (the same generated events: ``bench.generate`` is a pure function of
the row id and the seed; minute partials of D-7 .. D, D-1's snapshot), prints ``BENCH {"ready": true}``, then
answers each line on stdin with one line ``BENCH <json>`` on stdout:

    windows   the windows job for day D (its Delta writes included)
    floor     (with --floors) the read floor and the write floor of the windows job, separately
    quit
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date, timedelta
from pathlib import Path

DAY = date(2025, 1, 8)
EVENT_DAYS = 8


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", required=True)
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--events-per-day", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--floors", action="store_true")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [str(Path(args.code).resolve()), *[p for p in sys.path if p != here]]

    import gc
    import shutil

    from bench.generate import write_events
    from jobs import minute_partials, sliding_windows
    from jobs.runtime.spark_session import get_spark
    from windowing_core.config import PipelineConfig

    spark, config = get_spark(), PipelineConfig()
    first = DAY - timedelta(days=EVENT_DAYS - 1)
    shutil.rmtree(args.lakehouse, ignore_errors=True)
    write_events(spark, args.lakehouse, args.events_per_day * EVENT_DAYS, first, EVENT_DAYS, args.keys,
                 seed=args.seed)
    minute_partials.run(spark, args.lakehouse, first, DAY, config)
    sliding_windows.run(spark, args.lakehouse, DAY - timedelta(days=1), DAY - timedelta(days=1), config)

    floors = None
    if args.floors:
        from bench import pipeline

        ds = pipeline.DaySet(spark, args.lakehouse, "", args.events_per_day, args.keys, config, 0)

    def timed(fn) -> float:
        gc.collect()
        spark.sparkContext._jvm.java.lang.System.gc()
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    def windows() -> None:
        result = sliding_windows.run(spark, args.lakehouse, DAY, DAY, config)
        if set(result["baseline"].values()) != {"snapshot"}:
            raise RuntimeError(f"did not continue from D-1's snapshot: {result['baseline']}")

    print("BENCH " + json.dumps({"ready": True, "code": args.code}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "windows":
            print("BENCH " + json.dumps({"windows": timed(windows)}), flush=True)
        elif command == "floor" and args.floors:
            if floors is None:  # the rows the windows job wrote, cached once
                floors = pipeline.Outputs(ds, Path(args.lakehouse).parent / "floor-writes")
                floors.TABLES = {t: v for t, v in floors.TABLES.items() if v[0] == "windows"}
                floors.cache()
            read = timed(lambda: pipeline.read_frames(ds))
            write = timed(lambda: [floors.write(t) for t in floors.TABLES])
            print("BENCH " + json.dumps({"read": read, "write": write}), flush=True)
        elif command == "quit":
            break
        else:
            print("BENCH " + json.dumps({"error": f"unknown command {command!r}"}), flush=True)
    if floors is not None:
        floors.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
