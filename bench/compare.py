"""The method comparisons: frame-and-deduct against Spark's own sliding windows, and window lengths.

    python -m bench.compare [--sizes 1e3,3e3,1e4,1e5,1e6,1e7] [--reuse] [--out bench/results/compare]

``python -m bench`` (``bench.pipeline``) times the whole day against its floors; this keeps the two
comparisons that still inform a decision: Spark's ``window()`` and a RANGE frame against panes'
two jobs (the target: at least 100x faster than ``window()`` where it finishes), and the same
day with 1-day, 7-day and 30-day windows (the target: 30 days within 20 percent of 1 day).

For each size it generates that many events over 8 event days (``bench.generate``, straight into
the ``events`` Delta table), computes the minute partials of all 8 days and the window snapshot
of day D - 1 (untimed set-up: what earlier daily runs leave behind), and then times, in one
Spark session with panes' default settings, on a JVM warmed by ten untimed runs, best of 3
where cheap, each run after a full garbage collection (``bench.measure.settle``):

    scan floor      read day D's events, group into minute buckets per key (bench.methods)
    panes           minute partials of D + 7d/1m sliding windows of D, Delta writes included
    write floor     panes' output rows of D, computed and cached beforehand, written by Spark's own
                    Parquet writer; added to the scan floor, about the least any Spark method keeping
                    panes' tables takes
    spark RANGE     Spark window functions over minute buckets with a 7-day RANGE frame
    spark window()  Spark's window(ts, "7 days", "1 minute") per key, under a time limit

It prints a table of seconds, ratios to the scan floor and peak memory, writes ``results.csv``,
``ratio.png``, ``results.md`` (the tables for the README), ``explain.txt`` (the physical plans) and
``profile.json`` (Spark's per-query metrics of the panes runs) under ``--out``. Then the same
day with 1-day, 7-day and 30-day windows on a 32-day data set per key population
(``--scaling-keys``), each window on its own copy of it, interleaved, best and median of 5 rounds
(``scaling.csv``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

from bench import methods
from bench.generate import write_events
from bench.measure import Measurement, cpu_ticks, last_sql_id, measure, plan_summary, sql_profile, steal_fraction

DAY = date(2025, 1, 8)
DAYS = 8  # event days D - 7 .. D: every frame a 7-day window ending on D can hold
SCALING_DAYS = 32  # enough for a 30-day window's entering and leaving frames
TABLES = ["events", "minute_partials", "daily_partials", "window_snapshot", "window_changes"]
# panes at 10^3 events, run after run on a new JVM: 20.9, 4.3, 3.5, 3.3, 2.6, 2.4, 2.2, 2.1, then
# 1.9 to 2.2 s: the JIT compiles the jobs' code paths over the first eight or so runs. Each run
# prints its warm-up times (and keeps them in run.json) to show it settled.
WARM_UP_RUNS = 10


def _size(text: str) -> int:
    return int(float(text))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--sizes", default="1e3,3e3,1e4,1e5,1e6,1e7",
                        help="event counts over the 8 days, comma-separated (default "
                             "1e3,3e3,1e4,1e5,1e6,1e7; 3e3 because Spark's window() grows by minutes per "
                             "thousand events, so the grid is finer where it stops finishing; \"\": the window-length "
                             "scaling only)")
    parser.add_argument("--out", default="bench/results/compare", help="folder for the CSV, PNG and notes")
    parser.add_argument("--work", default="bench/.work",
                        help="scratch folder for the lakehouses (rebuilt every run unless --reuse)")
    parser.add_argument("--builtin-timeout", type=float, default=600.0,
                        help="seconds before Spark's window() is cancelled (default 600); "
                             "it is not tried at sizes above one where it did not finish")
    parser.add_argument("--range-timeout", type=float, default=180.0,
                        help="seconds before the RANGE-frame method is cancelled (default 180); "
                             "it is not tried at sizes above one where it did not finish")
    parser.add_argument("--scaling-events-per-day", type=_size, default=125_000,
                        help="events per day of the window-length scaling set (32 days; default 125000)")
    parser.add_argument("--scaling-keys", default=None,
                        help="key populations of the window-length scaling, one 32-day set each, comma-separated "
                             "(default, at 125000 events a day 1e5,4e5: the keys of an 8-day set at that rate, "
                             "the same users seen for 32 days instead of 8; and one key per 10 events of the 32 "
                             "days, four times as many users each a quarter as active, so a longer window holds "
                             "many more of them)")
    parser.add_argument("--scaling-reps", type=int, default=5,
                        help="interleaved rounds of the window-length scaling (default 5)")
    parser.add_argument("--skip-scaling", action="store_true", help="skip the window-length scaling")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the plot, tables and plans from the CSVs already in --out")
    parser.add_argument("--skip-spark-windows", action="store_true",
                        help="time only panes and the scan and write floors (for a large size alone)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per measurement, best kept (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over panes' defaults, repeatable (for example the driver's "
                             "garbage collector)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the generated events of an earlier run where they exist (same size and "
                             "seed); the partials and the D-1 snapshot are recomputed either way")
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted(_size(s) for s in args.sizes.split(",") if s.strip())  # none: the scaling only
        args.scaling_keys = ([keys_for(args.scaling_events_per_day * n) for n in (DAYS, SCALING_DAYS)]
                             if args.scaling_keys is None
                             else [_size(k) for k in args.scaling_keys.split(",") if k.strip()])
    except ValueError as err:
        parser.error(f"--sizes and --scaling-keys take comma-separated counts such as 1e6: {err}")
    if not args.scaling_keys and not args.skip_scaling:
        parser.error("--scaling-keys is empty: give at least one key population, or --skip-scaling")
    if any(k < 1 for k in args.scaling_keys):
        parser.error(f"--scaling-keys must be positive key counts, got {args.scaling_keys}")
    if any("=" not in c for c in args.spark_conf):
        parser.error(f"--spark-conf takes KEY=VALUE, got {[c for c in args.spark_conf if '=' not in c]}")
    args.spark_conf = dict(c.split("=", 1) for c in args.spark_conf)
    return args


def keys_for(n: int) -> int:
    """10 events per key on average, 10^3 .. 10^6 keys."""
    return max(1_000, min(1_000_000, n // 10))


def prepare(spark, lakehouse: str, n: int, days: int, config, seed: int, reuse: bool = False,
            keys: int | None = None) -> dict:
    """Events of ``days`` days ending on DAY, their minute partials, and D - 1's snapshot.

    With ``reuse`` the events of an earlier run with the same size and seed are kept (they are
    deterministic); everything derived from them is computed again by the code as it is now.
    """
    from jobs import minute_partials
    from jobs.storage import delta_io
    from jobs.tables import EVENTS

    first = DAY - timedelta(days=days - 1)
    started = time.perf_counter()
    marker = Path(lakehouse) / "generated.json"
    keys = keys_for(n) if keys is None else keys
    wanted = {"events": n, "days": days, "keys": keys, "seed": seed, "first": first.isoformat()}
    if reuse and marker.exists() and json.loads(marker.read_text()).get("wanted") == wanted:
        events = json.loads(marker.read_text())["events"]
        for table in (t for t in Path(lakehouse).iterdir() if t.is_dir() and t.name != EVENTS.name):
            shutil.rmtree(table)
    else:
        shutil.rmtree(lakehouse, ignore_errors=True)
        events = write_events(spark, lakehouse, n, first, days, keys, seed=seed)
        marker.write_text(json.dumps({"wanted": wanted, "events": events}))
    assert delta_io.table_exists(EVENTS.path(lakehouse)), lakehouse
    generated = time.perf_counter() - started
    minute_partials.run(spark, lakehouse, first, DAY, config)
    bootstrap(spark, lakehouse, config)
    return {"rows": events["rows_written"], "files": events["files_written"], "generate_s": generated,
            "prepare_s": time.perf_counter() - started}


def bootstrap(spark, lakehouse: str, config) -> None:
    """D - 1's snapshot, so day D's run continues from it as a daily schedule's would."""
    from jobs import sliding_windows

    previous = DAY - timedelta(days=1)
    result = sliding_windows.run(spark, lakehouse, previous, previous, config)
    assert set(result["baseline"].values()) == {"bootstrap"}, result


def _mb(value: float) -> str:
    return f"{value:,.0f}"


def print_row(size: int, method: str, m: Measurement, floor: float | None) -> None:
    if m.seconds is None:
        cell, ratio = m.note or m.status, ""
    else:
        cell = f"{m.seconds:8.2f}"
        ratio = f"{m.seconds / floor:8.2f}x" if floor else ""
        if m.parts:
            cell += "  (" + ", ".join(f"{k} {v:.2f}" for k, v in m.parts.items()) + ")"
    cpu = f"cpu {m.cpu_seconds:5.1f} s" if m.cpu_seconds is not None else ""
    print(f"{size:>10,}  {method:<18} {cell:<40} {ratio:>10}  {cpu:<12} driver {_mb(m.driver_peak_mb)} MB, "
          f"workers {_mb(m.workers_peak_mb)} MB", flush=True)


def machine() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = 0
    try:
        mem = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal"))) // 2**20
    except (OSError, StopIteration):
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    import deltalake
    import pyspark

    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": mem, "python": platform.python_version(),
            "java": java[0] if java else "", "pyspark": pyspark.__version__, "deltalake": deltalake.__version__,
            "load_average_at_start": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report_only:
        return report_only(args)
    from jobs.runtime.spark_session import SPARK_DEFAULTS, get_spark
    from windowing_core.config import PipelineConfig

    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    config = PipelineConfig()
    length = config.windows[0].length
    info = {"machine": machine(), "spark_settings": {**SPARK_DEFAULTS, **args.spark_conf}, "sizes": args.sizes,
            "day": DAY.isoformat(), "window": config.windows[0].describe()}

    started, ticks = time.perf_counter(), cpu_ticks()
    spark = get_spark(args.spark_conf)
    info["spark_start_s"] = round(time.perf_counter() - started, 1)
    print(f"Spark session started in {info['spark_start_s']} s (not timed). Machine: {info['machine']}", flush=True)

    rows: list[dict] = []
    profiles: dict[str, list] = {}
    builtin_stopped_at = range_stopped_at = None
    print(f"\n{'events':>10}  {'method':<18} {'seconds (best)':<40} {'vs floor':>10}  {'cpu':<12} peak memory")
    for n in args.sizes:
        lakehouse = str(work / f"n{n}")
        setup = prepare(spark, lakehouse, n, DAYS, config, args.seed, args.reuse)
        print(f"{n:>10,}  set-up: {setup['rows']:,} event rows ({setup['files']} files) generated in "
              f"{setup['generate_s']:.1f} s, partials and D-1 snapshot in {setup['prepare_s']:.1f} s", flush=True)
        if n == args.sizes[0]:  # warm-up, untimed: JIT, Python workers and every code path
            warming = []
            for _ in range(WARM_UP_RUNS):
                methods.scan_floor(spark, lakehouse, DAY, config)
                run_started = time.perf_counter()
                methods.panes_day(spark, lakehouse, DAY, config)
                warming.append(time.perf_counter() - run_started)
            if not args.skip_spark_windows:
                methods.spark_range_frame(spark, lakehouse, DAY, config, length)
            info["warm_up_panes_s"] = [round(w, 2) for w in warming]
            print(f"{'':>10}  warm-up done at {time.perf_counter() - started:.0f} s; panes took "
                  f"{', '.join(f'{w:.2f}' for w in warming)} s run after run", flush=True)
        load, size_ticks = os.getloadavg()[0], cpu_ticks()
        results: dict[str, Measurement] = {}
        results["scan floor"] = measure(spark, lambda: methods.scan_floor(spark, lakehouse, DAY, config),
                                        reps=args.reps, group="floor")
        floor = results["scan floor"].seconds
        before = last_sql_id(spark)
        results["panes"] = measure(spark, lambda: methods.panes_day(spark, lakehouse, DAY, config),
                                   reps=args.reps, group="panes")
        profiles[f"{n}"] = sql_profile(spark, before)
        results.update(output_floors(spark, lakehouse, config, work, args.reps, results["scan floor"]))
        if args.skip_spark_windows:
            pass
        elif range_stopped_at is None:
            results["spark RANGE frame"] = measure(
                spark, lambda: methods.spark_range_frame(spark, lakehouse, DAY, config, length),
                reps=args.reps, timeout=args.range_timeout, group="range", more_if_under=60)
            if results["spark RANGE frame"].seconds is None:
                range_stopped_at = n
        else:
            results["spark RANGE frame"] = Measurement(seconds=None, status="skipped",
                                                       note=f"not tried: did not finish at {range_stopped_at:,}")
        if args.skip_spark_windows:
            pass
        elif builtin_stopped_at is None:
            spark.sparkContext.setLogLevel("ERROR")  # its failed code generation logs the whole plan
            results["spark window()"] = measure(
                spark, lambda: methods.spark_builtin_window(spark, lakehouse, DAY, config, length),
                reps=1, timeout=args.builtin_timeout, group="builtin")
            spark.sparkContext.setLogLevel("WARN")
            if results["spark window()"].seconds is None:
                builtin_stopped_at = n
        else:
            results["spark window()"] = Measurement(seconds=None, status="skipped",
                                                    note=f"not tried: did not finish at {builtin_stopped_at:,}")
        steal = steal_fraction(size_ticks, cpu_ticks())
        for method, m in results.items():
            print_row(n, method, m, floor)
            rows.append({"events": n, "event_rows": setup["rows"], "keys": keys_for(n), "method": method,
                         "seconds": None if m.seconds is None else round(m.seconds, 3),
                         "ratio_to_floor": None if m.seconds is None or not floor else round(m.seconds / floor, 2),
                         "runs": " ".join(f"{r:.2f}" for r in m.runs), "status": m.status, "note": m.note,
                         "parts": " ".join(f"{k}={v:.2f}" for k, v in m.parts.items()),
                         "cpu_seconds": None if m.cpu_seconds is None else round(m.cpu_seconds, 1),
                         "load_average": round(load, 1), "steal": round(steal, 3),
                         "driver_peak_mb": round(m.driver_peak_mb), "workers_peak_mb": round(m.workers_peak_mb)})
        write_csv(out / "results.csv", rows)

    if args.sizes:
        (out / "profile.json").write_text(json.dumps(profiles, indent=1))
    scaling = [] if args.skip_scaling else window_scaling(spark, work, args, config)
    info["total_s"] = round(time.perf_counter() - started, 1)
    info["steal"] = round(steal_fraction(ticks, cpu_ticks()), 3)
    report(spark, out, work, args, config, rows, scaling, info)
    return 0


def output_floors(spark, lakehouse: str, config, work: Path, reps: int, scan: Measurement) -> dict[str, Measurement]:
    """The write floor (panes' rows of D, just written, cached and written again by Spark's own
    Parquet writer) and its sum with the scan floor: panes' ratio to that sum is what its own
    work costs over reading its input once and writing its output once."""
    cached = methods.output_rows(spark, lakehouse, DAY, config)
    scratch = str(work / "write-floor")
    try:
        write = measure(spark, lambda: methods.write_floor(cached, scratch), reps=reps, group="write")
    finally:
        for df in cached:
            df.unpersist()
        shutil.rmtree(scratch, ignore_errors=True)
    both = Measurement(seconds=None if write.seconds is None else scan.seconds + write.seconds, status=write.status,
                       cpu_seconds=None if write.cpu_seconds is None else scan.cpu_seconds + write.cpu_seconds,
                       note="the two floors added", driver_peak_mb=max(scan.driver_peak_mb, write.driver_peak_mb),
                       workers_peak_mb=max(scan.workers_peak_mb, write.workers_peak_mb))
    return {"write floor": write, "scan + write floor": both}


def report(spark, out: Path, work: Path, args, config, rows: list[dict], scaling: list[dict], info: dict) -> None:
    """Plans, plot and tables; the measurements are already in the CSVs."""
    (out / "run.json").write_text(json.dumps(info, indent=1, default=str))
    plotted = bool(rows) and plot(out / "ratio.png", rows, info)  # no sizes: the window-length scaling only
    try:
        if rows:
            explain = explain_plans(spark, str(work / f"n{max(r['events'] for r in rows)}"), config,
                                    config.windows[0].length)
            (out / "explain.txt").write_text(explain["text"])
            info["explain"] = explain["summary"]
    except Exception as err:  # the jobs change shape; the measurements must still be reported
        info["explain"] = f"could not explain the plans: {type(err).__name__}: {err}"
    (out / "run.json").write_text(json.dumps(info, indent=1, default=str))
    (out / "results.md").write_text(markdown(rows, scaling, info))
    print("\n" + markdown(rows, scaling, info))
    written = ["results.csv" if rows else "", "scaling.csv" if scaling else "", "ratio.png" if plotted else "",
               "results.md", "explain.txt" if rows else "", "profile.json" if rows else "", "run.json"]
    print(f"wrote {out}/: {', '.join(n for n in written if n)} ({info.get('total_s', 0):.0f} s in all)")


def report_only(args) -> int:
    """Rebuild plot, tables and plans from an earlier run's CSVs (``--report-only``)."""
    from jobs.runtime.spark_session import SPARK_DEFAULTS, get_spark
    from windowing_core.config import PipelineConfig

    out = Path(args.out)

    def load(name: str) -> list[dict]:
        path = out / name
        if not path.exists():
            return []
        with open(path) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            for k, v in r.items():
                if v == "":
                    r[k] = None
                elif k in ("events", "event_rows", "keys", "driver_peak_mb", "workers_peak_mb", "changes",
                           "snapshot_rows"):
                    r[k] = int(float(v))
                elif k in ("seconds", "ratio_to_floor", "cpu_seconds", "load_average", "steal", "partials_s", "sliding_s",
                           "vs_1d", "vs_1d_median"):
                    r[k] = float(v)
        return rows

    previous = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    info = {"machine": previous.get("machine") or machine(), "spark_settings": SPARK_DEFAULTS, **{
        k: v for k, v in previous.items() if k not in ("machine", "explain")}}
    report(get_spark(), out, Path(args.work), args, PipelineConfig(), load("results.csv"), load("scaling.csv"), info)
    return 0


def sliding_every_minute(length: str, config):
    """``config`` with one window of ``length`` sliding every minute instead of its own windows."""
    from windowing_core.config import PipelineConfig
    from windowing_core.window_spec import WindowSpec

    return PipelineConfig(windows=(WindowSpec.of(length, length, "1m"),), aggregations=config.aggregations)


def window_lakehouse(base: str, copy: str) -> str:
    """A lakehouse of its own for one window length: ``base``'s events and minute partials.

    Each window's D - 1 snapshot then lives in its own copy and is computed once, before the
    rounds, instead of replacing another window's before every timed run (which put a
    bootstrap job, its writes and its garbage between every two measurements). Delta never
    changes a data file in place, so the Parquet files are hard links where the file system
    allows; each log is copied.
    """
    from jobs.tables import EVENTS, MINUTE_PARTIALS

    def link_or_copy(src: str, dst: str) -> None:
        if src.endswith(".parquet"):
            try:
                return os.link(src, dst)
            except OSError:
                pass
        shutil.copy2(src, dst)

    shutil.rmtree(copy, ignore_errors=True)
    for table in (EVENTS, MINUTE_PARTIALS):
        shutil.copytree(table.path(base), table.path(copy), copy_function=link_or_copy)
    return copy


def window_scaling(spark, work: Path, args, config) -> list[dict]:
    """The same day with 1-day, 7-day and 30-day windows; panes' time should stay flat.

    One 32-day set per key population (``--scaling-keys``): a window holds every key with
    events in it, so how many more keys a longer window holds, and with them the snapshot it
    writes, is the set's, not the method's. Each window runs on its own copy of the set with
    its D - 1 snapshot made once, untimed; the rounds interleave the windows, each starting
    with the next one, so load falls on all alike. Besides each window's best run,
    ``vs_1d_median`` is the median over rounds of the window's time over the 1-day window's
    time in the same round: on this machine a window's rounds swing by up to 2x, and pairing
    by round cancels what moves all three.
    """
    rows: list[dict] = []
    for keys in args.scaling_keys:
        rows += _window_scaling(spark, work, args, config, keys)
        write_csv(Path(args.out) / "scaling.csv", rows)
    return rows


def _window_scaling(spark, work: Path, args, config, keys: int) -> list[dict]:
    lakehouse = str(work / f"scaling-{keys}keys")
    n = args.scaling_events_per_day * SCALING_DAYS
    setup = prepare(spark, lakehouse, n, SCALING_DAYS, config, args.seed, args.reuse, keys=keys)
    configs = {name: sliding_every_minute(name, config) for name in ("1d", "7d", "30d")}
    lakehouses = {}
    for name, windowed in configs.items():
        lakehouses[name] = window_lakehouse(lakehouse, f"{lakehouse}-{name}")
        bootstrap(spark, lakehouses[name], windowed)  # D - 1's snapshot of this window, untimed
    print(f"\nwindow-length scaling, {keys:,} keys: {setup['rows']:,} event rows over {SCALING_DAYS} days "
          f"(set-up {setup['prepare_s']:.0f} s)", flush=True)
    floor = measure(spark, lambda: methods.scan_floor(spark, lakehouse, DAY, config), reps=args.reps,
                    group=f"s{keys}-floor")
    rows = [{"keys": keys, "window": "scan floor", "seconds": round(floor.seconds, 3), "partials_s": None,
             "sliding_s": None, "vs_1d": None, "vs_1d_median": None, "rounds": "", "changes": None,
             "snapshot_rows": None}]
    print(f"  scan floor {floor.seconds:.2f} s", flush=True)
    runs: dict[str, list[Measurement]] = {name: [] for name in configs}
    names = list(configs)
    for round_ in range(args.scaling_reps + 1):  # round 0 warms up
        for name in names[round_ % 3:] + names[:round_ % 3]:
            windowed, windowed_lakehouse = configs[name], lakehouses[name]
            m = measure(spark, lambda: methods.panes_day(spark, windowed_lakehouse, DAY, windowed), reps=1,
                        group=f"s{keys}-{name}-{round_}")
            print(f"  {'warm-up' if round_ == 0 else f'round {round_}'} {name:>4}: {m.seconds:.2f} s", flush=True)
            if round_:
                runs[name].append(m)
    best = {name: min(ms, key=lambda m: m.seconds) for name, ms in runs.items()}
    base = best["1d"].seconds
    for name in names:
        m, seconds = best[name], [r.seconds for r in runs[name]]
        paired = statistics.median(s / b for s, b in zip(seconds, (r.seconds for r in runs["1d"])))
        windows = m.result["windows"]
        rows.append({"keys": keys, "window": name, "seconds": round(m.seconds, 3),
                     "partials_s": round(m.parts["partials"], 3), "sliding_s": round(m.parts["sliding"], 3),
                     "vs_1d": round(m.seconds / base, 2), "vs_1d_median": round(paired, 2),
                     "rounds": " ".join(f"{s:.2f}" for s in seconds),
                     "changes": windows["changes"]["rows_written"],
                     "snapshot_rows": windows["snapshots"]["rows_written"]})
        print(f"  {name:>4}: best {m.seconds:.2f} s (partials {m.parts['partials']:.2f}, sliding "
              f"{m.parts['sliding']:.2f}), {m.seconds / base:.2f}x the 1d window (median of rounds "
              f"{paired:.2f}x); {windows['changes']['rows_written']:,} change points, "
              f"{windows['snapshots']['rows_written']:,} snapshot rows", flush=True)
    return rows


def explain_plans(spark, lakehouse: str, config, length: int) -> dict:
    """Physical plans of the panes jobs' DataFrames (and of Spark's window() for contrast)."""
    from pyspark.sql import functions as F

    from jobs import minute_partials, sliding_windows
    from jobs.storage import delta_io
    from jobs.tables import EVENTS, day_filter

    events = delta_io.read_table(spark, EVENTS.path(lakehouse),
                                 partition_filters=day_filter("arrival_date", *minute_partials.arrival_days(DAY, DAY, config)))
    partials = minute_partials.minute_partials(events, config, DAY, DAY)
    if isinstance(partials, tuple):  # (partials, late events)
        partials, late = partials
        plans = {"minute_partials: minute_partials": partials, "minute_partials: late_events": late}
    else:
        plans = {"minute_partials: minute_partials": partials}
    rows, info = sliding_windows.sliding_windows(spark, lakehouse, DAY, DAY, config)
    plans["sliding_windows: window_changes and window_snapshot"] = rows
    builtin = (methods._events(spark, lakehouse, DAY - timedelta(days=7), DAY, config)
               .groupBy("key", F.window("event_time", f"{length} seconds", "1 minute")).count())
    plans["for contrast: Spark window(event_time, 7 days, 1 minute)"] = builtin
    text, summary = [], {}

    def summarise(plans: dict) -> None:
        for name, df in plans.items():
            s = plan_summary(df, TABLES)
            summary[name] = {k: v for k, v in s.items() if k != "text"}
            text.append(f"==== {name}\n{json.dumps(summary[name])}\n\n{s['text']}\n")

    summarise(plans)
    for df in info["persisted"]:  # the job persists what it reads again; only the plans were wanted
        df.unpersist()
    return {"text": "\n".join(text), "summary": summary}


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(path: Path, rows: list[dict], info: dict) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[bench]')", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    styles = {"scan floor": "k--", "scan + write floor": "k:", "panes": "C0o-", "spark RANGE frame": "C1s-",
              "spark window()": "C3^-"}
    for method in dict.fromkeys(r["method"] for r in rows if r["method"] != "write floor"):  # in the sum
        points = [(r["events"], r["ratio_to_floor"]) for r in rows if r["method"] == method and r["ratio_to_floor"]]
        if points:
            ax.plot(*zip(*points), styles.get(method, "o-"), label=method)
        timeouts = [r for r in rows if r["method"] == method and r["status"] == "timeout"]
        for r in timeouts:  # a lower bound: the time limit over the floor
            floor = next(x["seconds"] for x in rows if x["events"] == r["events"] and x["method"] == "scan floor")
            bound = float(r["note"].split(" in ")[1].split(" ")[0]) / floor
            colour = styles.get(method, "C3")[:2]
            ax.plot([r["events"]], [bound], f"{colour}^", markerfacecolor="none", markersize=10)
            last = r["events"] == max(x["events"] for x in rows)  # label to the left, inside the axes
            ax.annotate(f"{method}: did not finish", (r["events"], bound), textcoords="offset points",
                        xytext=(-8 if last else 8, -3), ha="right" if last else "left", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("events (8 days)")
    ax.set_ylabel("seconds / scan-floor seconds")
    m = info["machine"]
    ax.set_title(f"Day D of a 7-day window sliding every minute\n{m['cores']} cores, {m['memory_gib']} GiB, "
                 f"pyspark {m['pyspark']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def markdown(rows: list[dict], scaling: list[dict], info: dict) -> str:
    lines = ["| events | keys | method | seconds | vs scan floor | CPU s | driver peak MB |",
             "|---:|---:|---|---:|---:|---:|---:|"] if rows else []
    for r in rows:
        seconds = f"{r['seconds']:.2f}" if r["seconds"] is not None else r["note"]
        ratio = f"{r['ratio_to_floor']:.2f}x" if r["ratio_to_floor"] is not None else ""
        cpu = "" if r["cpu_seconds"] is None else f"{r['cpu_seconds']:.1f}"
        lines.append(f"| {r['events']:,} | {r['keys']:,} | {r['method']} | {seconds} | {ratio} | {cpu} | "
                     f"{r['driver_peak_mb']:,} |")

    def seconds_of(method: str) -> dict[int, float]:
        return {r["events"]: r["seconds"] for r in rows if r["method"] == method and r["seconds"]}

    panes, scan, both = (seconds_of(m) for m in ("panes", "scan floor", "scan + write floor"))
    sizes = [n for n in panes if n in scan and n in both]
    if sizes:
        lines += ["", "| events | panes vs scan floor | panes vs scan + write floor |", "|---:|---:|---:|"]
        lines += [f"| {n:,} | {panes[n] / scan[n]:.2f}x | {panes[n] / both[n]:.2f}x |" for n in sizes]
    if scaling:
        lines += [""] if lines else []
        lines += ["| keys | window | seconds | minute partials | sliding | vs 1d | vs 1d, median of rounds "
                  "| change points | snapshot rows |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in scaling:
            vs, paired = (("", "") if r["vs_1d"] is None
                          else (f"{r['vs_1d']:.2f}x", f"{r['vs_1d_median']:.2f}x" if r.get("vs_1d_median") else ""))
            counts = ["" if r.get(c) is None else f"{r[c]:,}" for c in ("keys", "changes", "snapshot_rows")]
            lines.append(f"| {counts[0]} | {r['window']} | {r['seconds']:.2f} | {r['partials_s'] or ''} "
                         f"| {r['sliding_s'] or ''} | {vs} | {paired} | {counts[1]} | {counts[2]} |")
    m = info["machine"]
    lines += ["", f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; {m['java']}; "
                  f"pyspark {m['pyspark']}, deltalake {m['deltalake']}; load average at start "
                  f"{[round(x, 1) for x in m['load_average_at_start']]}"
                  + (f"; the host stole {info['steal']:.0%} of the CPU time during the run" if "steal" in info else "")
                  + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
