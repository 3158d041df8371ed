"""``python -m bench small``: what a small partition costs, against its floors.

    python -m bench small                      # 2,000 events, 50 keys: session and processes, ~10 min
    python -m bench small --demo               # and the demo after set-up, ~3 more min

A small day's cost is fixed overhead, not rows, so each figure is a ratio to a floor measured in
the same run:

1. in one Spark session (as a Dagster step runs a job): ingest, partials and windows each against
   reading its input and writing its output with delta-spark (``bench.pipeline``'s floors), <= 3x;
   and with every aggregation kind configured, each job against its own time under the default
   configuration, <= 2x;
2. each job run alone as a command (``python -m jobs.<name>``) against a bare PySpark process that
   reads the same landing files and writes them as Parquet (no Delta, no extra jars), <= 1.5x;
3. the checks of the day against the jobs that wrote the tables they check, <= 1x;
4. with ``--demo``: ``python -m orchestration.demo`` after set-up, <= 60 s, and where its time goes
   (``bench.demo_timeline``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.demo_timeline import TARGET_SECONDS, print_timeline, run_demo, timeline
from bench.pipeline import DAY, STAGES, DaySet, landing_schema, measure_size, prepare, table_rows

JOBS = {"ingest": "jobs.ingest_events", "partials": "jobs.minute_partials", "windows": "jobs.sliding_windows"}

BARE_PROCESS = """
import sys
from pyspark.sql import SparkSession, functions as F
landing, out, schema = sys.argv[1:4]
spark = (SparkSession.builder.master("local[*]").config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false").getOrCreate())
lines = spark.read.option("recursiveFileLookup", "true").text(landing)
lines.select(F.from_json("value", schema).alias("e")).select("e.*").write.mode("overwrite").parquet(out)
spark.stop()
"""
"""The floor of a job run alone: a PySpark process that reads a day's landing files, parses each
line and writes the rows as Parquet, with nothing but the pyspark package."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench small", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--events", type=int, default=2_000, help="events of the day (default 2000)")
    parser.add_argument("--keys", type=int, default=50, help="distinct keys (default 50)")
    parser.add_argument("--reps", type=int, default=3, help="timed rounds, best of (default 3)")
    parser.add_argument("--demo", action="store_true", help="also time the demo after set-up (target 4)")
    parser.add_argument("--work", default="bench/.work", help="scratch folder for the landing files and lakehouses")
    args = parser.parse_args(argv)
    for name in ("events", "keys", "reps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be positive")
    return args


def every_kind():
    """The default windows with every aggregation kind at once, over the one ``value``."""
    from windowing_core.aggregations import AGGREGATIONS, aggregation
    from windowing_core.config import PipelineConfig

    return PipelineConfig(aggregations=tuple(aggregation(kind) for kind in AGGREGATIONS))


def in_one_session(spark, work: Path, args: argparse.Namespace) -> tuple[dict[str, dict], DaySet]:
    """Targets 1 and 3: each stage's best time and its floor, by configuration; and the default
    configuration's day, which the jobs run alone then read."""
    from windowing_core.config import PipelineConfig

    measured, days = {}, {}
    for label, config in (("default", PipelineConfig()), ("every kind", every_kind())):
        days[label] = prepare(spark, work / label.replace(" ", "-"), args.events, args.keys, 7, False, config)
        rounds = argparse.Namespace(stages=list(STAGES), warm_up=1, reps=args.reps)
        measured[label] = {row["stage"]: row for row in table_rows(measure_size(days[label], rounds, work)["best"])}
    return measured, days["default"]


def _seconds(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def as_processes(ds: DaySet, reps: int) -> dict[str, float]:
    """Target 2: each job run alone against the bare process, interleaved, best of ``reps``."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    lakehouse, landing = ds.lakehouse, ds.landing
    day = ["--lakehouse", lakehouse, "--date", DAY.isoformat()]
    commands = {stage: [sys.executable, "-m", module, *day, *(["--landing", landing] if stage == "ingest" else [])]
                for stage, module in JOBS.items()}
    out = tempfile.mkdtemp(prefix="bare-")
    commands["bare process"] = [sys.executable, "-c", BARE_PROCESS, f"{landing}/{DAY.isoformat()}", out,
                                landing_schema(ds.config)]
    best: dict[str, float] = {}
    try:
        for _ in range(reps):
            for name, command in commands.items():
                seconds = _seconds(command, env)
                print(f"    alone: {name:<13} {seconds:6.2f} s", flush=True)
                best[name] = min(best.get(name, seconds), seconds)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return best


def _line(what: str, seconds: float, against: str, reference: float, limit: float) -> str:
    ratio = seconds / reference
    return (f"  {what:<34} {seconds:7.2f} s   {against:<40} {reference:7.2f} s  {ratio:5.2f}x  "
            f"<= {limit:g}x  {'pass' if ratio <= limit else 'MISS'}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from jobs.runtime.spark_session import get_spark

    work = Path(args.work) / f"small-{args.events}-{args.keys}keys"
    work.mkdir(parents=True, exist_ok=True)
    spark = get_spark()
    session, default_day = in_one_session(spark, work, args)
    spark.stop()
    alone = as_processes(default_day, args.reps)

    default, every = session["default"], session["every kind"]
    print(f"\n{args.events:,} events, {args.keys} keys, best of {args.reps}; load average {os.getloadavg()[0]:.1f}")
    print("1. in one session: each job against reading its input and writing its output with delta-spark")
    for stage in JOBS:
        row = default[stage]
        print(_line(stage, row["seconds"], row["against"], row["against_seconds"], 3))
    print("   with every aggregation kind, against the same job under the default configuration")
    for stage in JOBS:
        print(_line(f"{stage}, every kind", every[stage]["seconds"], f"{stage}, default", default[stage]["seconds"], 2))
    print("2. run alone as a command, against a bare PySpark process (read landing, write Parquet)")
    for stage in JOBS:
        print(_line(f"python -m {JOBS[stage]}", alone[stage], "bare process", alone["bare process"], 1.5))
    print("3. the checks of the day, against the jobs that wrote what they check")
    for label, rows in session.items():
        jobs = sum(rows[s]["seconds"] for s in JOBS)
        print(_line(f"checks, {label}", rows["checks"]["seconds"], f"ingest + partials + windows, {label}", jobs, 1))
    if args.demo:  # last: the figures above stand even if the demo fails
        print("4. the demo after set-up", flush=True)
        seconds, home, started, ended = run_demo(work)
        print(_line("python -m orchestration.demo", seconds, "the target", TARGET_SECONDS, 1))
        print_timeline(*timeline(home, started, ended))
    return 0
