"""The pipeline benchmark: one day's landing files through every job and every check, against floors.

    python -m bench                                        # 10^6 events a day, every stage, ~4 min
    python -m bench --events-per-day 1e5 --reps 2          # a quick look
    python -m bench --stages windows --events-per-day 1e7  # one stage (the ones before it run untimed)
    python -m bench --events-per-day 1e6,1e7,3e7 --keys 1e3,1e6 --update-readme   # the growth
    python -m bench --merge a/pipeline.json b/pipeline.json --update-readme        # one table of two runs

For each size (events per day, keys) it builds a lakehouse as the days before day D would have
left it (untimed): the events of arrival days D-7 .. D-1 (``bench.generate``, straight into the
``events`` table), their minute partials and D-1's window snapshot; and arrival day D as landing
files (half gzipped; a few malformed lines and copies). Then, in one Spark session with panes'
defaults, after ``--warm-up`` untimed rounds, ``--reps`` rounds, best of each:

    ingest     jobs.ingest_events for arrival day D: events, quarantine, late_events
    partials   jobs.minute_partials for event day D
    windows    jobs.sliding_windows for day D (7 days sliding every minute, from D-1's snapshot)
    checks     every asset check of day D (expectations.asset_checks: the Great Expectations
               suites and the reconciliations of events, quarantine, minute_partials,
               window_changes, window_snapshot), as Dagster evaluates them
    online     (only when asked for: ``--stages ...,online``) jobs.online_values: day D's
               snapshot into a PostgreSQL server the bench starts (``tests/postgres_server.py``),
               held to the windows job's time; each round replaces every key's row

and the floors, each timed alone in the same rounds:

    read + parse        day D's landing files read and each line parsed once (``from_json``
                        with the fields' types), Spark's noop sink
    read events         the events the partials job reads, noop
    read frames         the frames and the snapshot the windows job reads, noop
    write <table>       the day's rows of the table (read back once and cached, untimed)
                        written by Spark's own Delta writer (delta-spark) into a scratch table

A stage's floor is reading its input once plus writing its output once, with nothing computed in
between; the whole day's is reading and parsing the landing files once plus writing every table
of the day once. The checks are held to the windows job's time. The table it prints (and writes
as ``pipeline.json`` and ``pipeline.md`` under ``--out``, with ``growth.png``: the cost per event
and the driver's peak memory at each size) has each stage's time, its floor, the ratio, the
target and whether it is met. Each size notes the load average: figures from a loaded machine
are noise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

from bench.measure import MemorySampler, _rest, cpu_seconds, settle
from orchestration.event_set.shape import EventShape

DAY = date(2025, 1, 8)
EVENT_DAYS = 8  # D-7 .. D: every frame a 7-day window ending on D holds
STAGES = ("ingest", "partials", "windows", "checks")
ONLINE = "online"
PEERS = {"duckdb": "DuckDB", "spark_window": "Spark's window()"}
TIMEABLE = (*STAGES, ONLINE, *PEERS)
"""Stages ``--stages`` may name: the online store's load (it needs PostgreSQL) and the peers
(``bench.peers``: DuckDB needs the bench extra) only when asked for."""
REQUIRES = {"ingest": (), "partials": ("ingest",), "windows": ("ingest", "partials"),
            "checks": ("ingest", "partials", "windows"), ONLINE: ("ingest", "partials", "windows"),
            **{peer: ("ingest", "partials", "windows") for peer in PEERS}}
"""What each stage reads: run once, untimed, before it is timed."""
WHOLE_DAY = "whole day"
# (what the stage is held to, the most it may take of it): the targets
TARGETS = {"ingest": ("floor", 2.0), "checks": ("windows", 1.0), ONLINE: ("windows", 1.0),
           WHOLE_DAY: ("floor", 3.0)}
README_BEGIN, README_END = "<!-- bench: pipeline table -->", "<!-- /bench: pipeline table -->"


def _count(text: str) -> int:
    try:
        n = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return n


def _counts(text: str) -> list[int]:
    return [_count(t) for t in text.split(",") if t.strip()]


def keys_for(events_per_day: int) -> int:
    """Default keys: one per 10 events of a day, 10^3 .. 10^6."""
    return max(1_000, min(1_000_000, events_per_day // 10))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--events-per-day", type=_counts, default=[1_000_000], metavar="N[,N...]",
                        help="events per day, comma-separated for several sizes (default 1e6)")
    parser.add_argument("--keys", type=_counts, default=None, metavar="K[,K...]",
                        help="distinct keys, comma-separated: every size runs with each (default: one per "
                             "10 events of a day, 10^3 .. 10^6)")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"stages to time, comma-separated, of {','.join(TIMEABLE)} (default all but "
                             f"{ONLINE} and the peers {', '.join(PEERS)}; those before a timed one run once, untimed)")
    parser.add_argument("--reps", type=_count, default=3, help="timed rounds, best of (default 3)")
    parser.add_argument("--warm-up", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--out", default="bench/results", help="folder for pipeline.json, .md and growth.png")
    parser.add_argument("--work", default="bench/.work", help="scratch folder for the landing files and lakehouses")
    parser.add_argument("--reuse", action="store_true",
                        help="keep a size's generated events and landing files from an earlier run (same "
                             "size, keys, seed); everything derived from them is computed again")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true",
                        help="print Spark's stages of each stage's last run (task and CPU seconds, rows, "
                             "shuffles); they are in pipeline.json either way")
    parser.add_argument("--update-readme", metavar="README", nargs="?", const="bench/README.md",
                        help="rewrite the measurements table between the bench markers of this README")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over panes' defaults, repeatable")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="measure nothing: write one report (and with --update-readme the table) from "
                             "the pipeline.json of earlier runs, for sizes measured with different --reps")
    args = parser.parse_args(argv)
    args.stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in args.stages if s not in TIMEABLE]
    if unknown or not args.stages:
        parser.error(f"--stages takes some of {','.join(TIMEABLE)}, got {args.stages}")
    if any("=" not in c for c in args.spark_conf):
        parser.error(f"--spark-conf takes KEY=VALUE, got {args.spark_conf}")
    args.spark_conf = dict(c.split("=", 1) for c in args.spark_conf)
    if args.warm_up < 0:
        parser.error("--warm-up must be 0 or more")
    if args.update_readme and README_BEGIN not in (Path(args.update_readme).read_text()
                                                   if Path(args.update_readme).is_file() else ""):
        parser.error(f"--update-readme: {args.update_readme} has no {README_BEGIN} block to rewrite")
    missing = [p for p in args.merge or [] if not Path(p).is_file()]
    if missing:
        parser.error(f"--merge: no such file {', '.join(missing)}")
    return args


# -- the day's data -----------------------------------------------------------------------------


@dataclass
class DaySet:
    """A lakehouse as the days before D left it, and arrival day D's landing files."""

    spark: Any
    lakehouse: str
    landing: str
    events_per_day: int
    keys: int
    config: Any
    landing_lines: int
    setup_s: float = 0.0


def prepare(spark, work: Path, events_per_day: int, keys: int, seed: int, reuse: bool, config=None) -> DaySet:
    """The day's set under ``config`` (a ``PipelineConfig``; the defaults without one)."""
    from jobs import minute_partials, sliding_windows
    from jobs.storage import delta_io, delta_write
    from jobs.tables import EVENTS
    from windowing_core.config import PipelineConfig

    from bench.generate import accepted, arrival_dates, benchmark_events, write_landing

    config = config or PipelineConfig()
    folder = work / f"day-{events_per_day}-{keys}keys"
    lakehouse, landing = folder / "lakehouse", folder / "landing"
    marker = folder / "generated.json"
    wanted = {"events_per_day": events_per_day, "keys": keys, "seed": seed, "day": DAY.isoformat(),
              "key_field": config.key_field, "shape": repr(EventShape(keys=keys))}
    started = time.perf_counter()
    first = DAY - timedelta(days=EVENT_DAYS - 1)
    if reuse and marker.exists() and json.loads(marker.read_text()).get("wanted") == wanted:
        lines = json.loads(marker.read_text())["landing_lines"]
        for table in (t for t in lakehouse.iterdir() if t.is_dir() and t.name != EVENTS.name):
            shutil.rmtree(table)
        before = [d.isoformat() for d in arrival_dates(first, EVENT_DAYS) if d < DAY]
        kept = delta_io.read_table(spark, EVENTS.path(str(lakehouse)),
                                   partition_filters=[("arrival_date", "in", before)]).limit(0)
        delta_write.replace_partitions(kept, EVENTS.path(str(lakehouse)), partition_by=list(EVENTS.partition_by),
                                    partition_filters=[("arrival_date", ">=", DAY.isoformat())])
    else:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        events = benchmark_events(spark, events_per_day * EVENT_DAYS, first, EVENT_DAYS, keys, seed=seed)
        dates = [d.isoformat() for d in arrival_dates(first, EVENT_DAYS)]
        delta_write.replace_partitions(accepted(events.where(events["arrival_date"] < DAY)),
                                       EVENTS.path(str(lakehouse)), partition_by=list(EVENTS.partition_by),
                                    partition_filters=[("arrival_date", "in", dates)])
        lines = write_landing(events.where(events["arrival_date"] == DAY), str(landing), DAY, config.key_field,
                              seed)
        marker.write_text(json.dumps({"wanted": wanted, "landing_lines": lines}))
    # what the days before D leave: their frames and D - 1's snapshot (bootstrapped from them)
    minute_partials.run(spark, str(lakehouse), first, DAY - timedelta(days=1), config)
    before = sliding_windows.run(spark, str(lakehouse), DAY - timedelta(days=1), DAY - timedelta(days=1), config)
    assert set(before["baseline"].values()) == {"bootstrap"}, before
    return DaySet(spark, str(lakehouse), str(landing), events_per_day, keys, config, lines,
                  time.perf_counter() - started)


# -- the stages -----------------------------------------------------------------------------------


class Checks:
    """Every asset check of day D, evaluated as ``expectations.asset_checks`` does in Dagster.

    ``input_records_reconcile`` reads the counts the ``events`` materialisation reported from
    the Dagster instance: an ephemeral one here, holding the last ingest's report.
    """

    def __init__(self, ds: DaySet):
        import dagster as dg

        from expectations.catalog import EVALUATORS, checks_of

        self.ds, self.dg = ds, dg
        self.instance = dg.DagsterInstance.ephemeral()
        self.tables = [t for t in EVALUATORS if checks_of(ds.config, t)]
        self.names = {t: {c.name for c in checks_of(ds.config, t)} for t in self.tables}

    def report_ingest(self, result) -> None:
        counts = result.by_day[DAY]
        self.instance.report_runless_asset_event(self.dg.AssetMaterialization(
            asset_key="events", partition=DAY.isoformat(), metadata={
                "arrival_days": f"{DAY} .. {DAY}", "input_records": counts.input_records,
                "accepted": counts.accepted, "quarantined": counts.quarantined, "duplicates": counts.duplicates,
                "late_beyond_allowed_lateness": counts.late}))

    def __call__(self) -> dict:
        from expectations.catalog import EVALUATORS
        from expectations.inputs import Inputs
        from jobs.runtime.compilers import events_of_the_days, expressions_for

        ds, failed, evaluated = self.ds, [], 0
        size = events_of_the_days(ds.lakehouse, ds.config, DAY, DAY)
        for table in self.tables:
            inputs = Inputs(ds.spark, ds.landing, ds.lakehouse, ds.config, [DAY], self.names[table], self.instance)
            with expressions_for(ds.spark, **size):  # as the checks' step evaluates them in Dagster
                results = EVALUATORS[table](inputs)
            for check, by_day in results.items():
                evaluated += 1
                if not by_day[DAY].passed:
                    failed.append(f"{table}.{check}: {json.dumps(by_day[DAY].metadata, default=str)[:300]}")
        return {"checks": evaluated, "failed": failed}


class OnlineLoad:
    """Day D's snapshot into the online store of a PostgreSQL server started for the bench."""

    def __init__(self, ds: DaySet):
        from contextlib import ExitStack

        from tests.postgres_server import new_database, postgres_server
        from windowing_core.online import OnlineSpec

        self.ds, self.stack = ds, ExitStack()
        host, port, user = self.stack.enter_context(postgres_server())
        url = f"postgresql://{user}@{host}:{port}/{new_database(host, port, user, 'bench')}"
        self.config = dataclasses.replace(ds.config, online=OnlineSpec(url))

    def __call__(self):
        from jobs import online_values

        loaded = online_values.load(self.ds.lakehouse, DAY, self.config, self.config.online)
        if loaded.written != loaded.rows or loaded.skipped:
            raise RuntimeError(f"the online store did not take day {DAY} whole: {loaded.summary()}")
        return loaded

    def close(self) -> None:
        self.stack.close()


def stage_runs(ds: DaySet, checks: Checks, online: OnlineLoad | None = None) -> dict[str, Callable[[], Any]]:
    from jobs import ingest_events, minute_partials, sliding_windows
    from jobs.runtime.compilers import events_of_the_days, expressions_for

    spark, config = ds.spark, ds.config
    # each job evaluates as a Dagster step runs it: interpreted where its input is tiny
    landing = ingest_events.input_size(ds.landing, config, DAY, DAY)

    def ingest():
        with expressions_for(spark, **landing):
            result = ingest_events.ingest(spark, ds.landing, ds.lakehouse, DAY, DAY, config)
        if not result.reconciles:
            raise RuntimeError(f"ingest does not reconcile: {result}")
        checks.report_ingest(result)
        return result

    def partials():
        with expressions_for(spark, **events_of_the_days(ds.lakehouse, config, DAY, DAY)):
            return minute_partials.run(spark, ds.lakehouse, DAY, DAY, config)

    def windows():
        with expressions_for(spark, **events_of_the_days(ds.lakehouse, config, DAY, DAY)):
            result = sliding_windows.run(spark, ds.lakehouse, DAY, DAY, config)
        if set(result["baseline"].values()) != {"snapshot"}:
            raise RuntimeError(f"the windows of {DAY} did not continue from D-1's snapshot: {result['baseline']}")
        return result

    return {"ingest": ingest, "partials": partials, "windows": windows, "checks": checks,
            **({ONLINE: online} if online else {})}


# -- the floors -----------------------------------------------------------------------------------


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def landing_schema(config) -> str:
    """A landing line's fields with their types, as DDL for ``from_json``."""
    fields = ([(config.value_field, "bigint")] if not config.fields  # the JSON names of the measured fields
              else list(config.measured_fields))
    return ", ".join([f"`{config.key_field}` string", "timestamp timestamp", *[f"`{n}` {t}" for n, t in fields],
                      "event_id string", "arrival_time timestamp"])


def read_and_parse(ds: DaySet) -> None:
    """Day D's landing files read and each line parsed once, with the fields' types."""
    from pyspark.sql import functions as F

    lines = ds.spark.read.option("recursiveFileLookup", "true").text(f"{ds.landing}/{DAY.isoformat()}")
    _noop(lines.select(F.from_json("value", landing_schema(ds.config)).alias("event"), F.col("_metadata.file_path")))


def read_events(ds: DaySet) -> None:
    """The events the partials job reads (arrival days D .. D + lateness, event day D)."""
    from jobs import minute_partials
    from jobs.storage import delta_io
    from jobs.tables import EVENTS, day_filter

    events = delta_io.read_table(ds.spark, EVENTS.path(ds.lakehouse), partition_filters=day_filter(
        "arrival_date", *minute_partials.arrival_days(DAY, DAY, ds.config)))
    _noop(minute_partials.filter_event_days(events, DAY, DAY).select("key", "event_time", "value", "event_id",
                                                                      "arrival_date"))


def read_frames(ds: DaySet) -> None:
    """The frames entering and leaving day D's windows and D-1's snapshot, as the job reads them."""
    from jobs.windows import window_inputs as wi

    spark, config = ds.spark, ds.config
    ranges = [r for spec in config.windows for r in wi.ReadPlan(spec, config, DAY, DAY).frame_ranges]
    before = DAY - timedelta(days=1)
    previous = wi.read_snapshot(spark, ds.lakehouse, before, wi.continued_windows(spark, ds.lakehouse, before, config))
    _noop(wi.read_frames(spark, ds.lakehouse, ranges))
    _noop(previous)


class Outputs:
    """The day's rows of each table the stages write, cached once, for the write floors."""

    TABLES = {"events": ("ingest", "arrival_date"), "minute_partials": ("partials", "event_date"),
              "window_changes": ("windows", "date"), "window_snapshot": ("windows", "date")}

    def __init__(self, ds: DaySet, scratch: Path):
        self.ds, self.scratch, self.rows = ds, scratch, {}

    def cache(self) -> None:
        from jobs.storage import delta_io
        from jobs.tables import ALL_TABLES, day_filter

        tables = {t.name: t for t in ALL_TABLES}
        for name, (_, column) in self.TABLES.items():
            df = delta_io.read_table(self.ds.spark, tables[name].path(self.ds.lakehouse),
                                     partition_filters=day_filter(column, DAY, DAY)).persist()
            df.count()
            self.rows[name] = df

    def write(self, name: str) -> None:
        """delta-spark's own write of the rows, a whole-table overwrite of a scratch table."""
        _, column = self.TABLES[name]
        (self.rows[name].write.format("delta").mode("overwrite").partitionBy(column)
         .save(str(self.scratch / name)))

    def release(self) -> None:
        for df in self.rows.values():
            df.unpersist()
        shutil.rmtree(self.scratch, ignore_errors=True)


def floor_runs(ds: DaySet, outputs: Outputs, stages: list[str]) -> dict[str, Callable[[], Any]]:
    """The floors the timed stages are held to (``FLOORS``), each once."""
    wanted = {part for stage in [*stages, *([WHOLE_DAY] if set(stages) >= set(STAGES) else [])]
              if stage in FLOORS for part in FLOORS[stage][1]}
    runs = {"read + parse": lambda: read_and_parse(ds), "read events": lambda: read_events(ds),
            "read frames": lambda: read_frames(ds)}
    runs |= {f"write {t}": (lambda t=t: outputs.write(t)) for t in Outputs.TABLES}
    return {name: fn for name, fn in runs.items() if name in wanted}


FLOORS = {
    "ingest": ("read + parse landing, write events", ["read + parse", "write events"]),
    "partials": ("read events, write minute_partials", ["read events", "write minute_partials"]),
    "windows": ("read frames and snapshot, write both tables",
                ["read frames", "write window_changes", "write window_snapshot"]),
    WHOLE_DAY: ("read + parse landing, write every table", ["read + parse", *[f"write {t}" for t in Outputs.TABLES]]),
}


# -- measuring -------------------------------------------------------------------------------------


def spark_stages_since(spark, before: set[int]) -> list[dict]:
    """Spark's completed stages not in ``before``: task and CPU seconds, rows, shuffles."""
    stages = [s for s in _rest(spark, "stages?details=false") or [] if s["stageId"] not in before
              and s["status"] == "COMPLETE"]
    return [{"stage": s["stageId"], "name": s["name"][:60], "tasks": s["numTasks"],
             "task_s": round(s["executorRunTime"] / 1000, 2), "cpu_s": round(s["executorCpuTime"] / 1e9, 2),
             "rows_read": s["inputRecords"], "shuffle_read_rows": s["shuffleReadRecords"],
             "shuffle_write_rows": s["shuffleWriteRecords"], "spilled_mb": round(s["diskBytesSpilled"] / 2**20)}
            for s in sorted(stages, key=lambda s: s["stageId"])]


def stage_ids(spark) -> set[int]:
    return {s["stageId"] for s in _rest(spark, "stages?details=false") or []}


@dataclass
class Best:
    seconds: float | None = None
    cpu_seconds: float | None = None
    runs: list[float] = field(default_factory=list)
    spark_stages: list[dict] = field(default_factory=list)


def measure_size(ds: DaySet, args, work: Path) -> dict:
    spark = ds.spark
    checks = Checks(ds)
    online = OnlineLoad(ds) if ONLINE in args.stages else None
    runs = stage_runs(ds, checks, online)
    peers = {}
    if "duckdb" in args.stages:
        from bench.peers import DuckDBChanges

        runs["duckdb"] = peers["duckdb"] = DuckDBChanges(ds.lakehouse, DAY, ds.config, work / "peer")
    if "spark_window" in args.stages:
        from bench.peers import SparkWindowChanges

        runs["spark_window"] = peers["spark_window"] = SparkWindowChanges(
            spark, ds.lakehouse, DAY, ds.config, work / "peer", ds.events_per_day)
    compared = {}
    timed = [s for s in TIMEABLE if s in args.stages]
    needed = [s for s in TIMEABLE if s in timed or any(s in REQUIRES[t] for t in timed)]
    outputs = Outputs(ds, work / "floor-writes")
    best: dict[str, Best] = {}
    whole_day: list[float] = []
    load: list[float] = []
    try:
        with MemorySampler() as memory:
            for stage in needed:  # once, untimed: what the timed stages read, and the floors' rows
                result = runs[stage]()
                if stage == "checks" and result["failed"]:
                    raise SystemExit("checks failed, so the bench is void:\n  " + "\n  ".join(result["failed"]))
                if stage in peers:
                    compared[stage] = peers[stage].compare()
                    print(f"  {PEERS[stage]} against panes' window_changes of {DAY}: {compared[stage]}", flush=True)
                    if any(v for k, v in compared[stage].items() if k.startswith("only_in")) \
                            or not compared[stage]["rows"]:
                        raise SystemExit(f"{PEERS[stage]}'s change points differ from panes', so the bench is void")
            outputs.cache()
            floors = floor_runs(ds, outputs, timed)
            all_runs = {**{s: runs[s] for s in timed}, **floors}
            for round_ in range(args.warm_up + args.reps):
                warm = round_ < args.warm_up
                load.append(os.getloadavg()[0])
                day_total = 0.0
                for name, fn in all_runs.items():
                    settle(spark)
                    before = stage_ids(spark) if not warm and round_ == args.warm_up + args.reps - 1 else None
                    cpu, started = cpu_seconds(), time.perf_counter()
                    result = fn()
                    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
                    if name == "checks" and result["failed"]:
                        raise SystemExit("checks failed, so the bench is void:\n  " + "\n  ".join(result["failed"]))
                    print(f"    {'warm-up' if warm else f'round {round_ - args.warm_up + 1}'}: {name:<24} "
                          f"{seconds:7.2f} s", flush=True)
                    if warm:
                        continue
                    b = best.setdefault(name, Best())
                    b.runs.append(round(seconds, 3))
                    if b.seconds is None or seconds < b.seconds:
                        b.seconds, b.cpu_seconds = seconds, cpu
                    if before is not None:
                        b.spark_stages = spark_stages_since(spark, before)
                    if name in STAGES:
                        day_total += seconds
                if not warm and set(timed) >= set(STAGES):
                    whole_day.append(day_total)
    finally:  # the bench's PostgreSQL server stops even when a stage fails
        if online is not None:
            online.close()
    outputs.release()
    if whole_day:
        best[WHOLE_DAY] = Best(min(whole_day), None, [round(s, 3) for s in whole_day])
    return {"best": best, **({"peer_compared": compared} if compared else {}),
            "driver_peak_mb": round(memory.driver_peak / 2**20),
            "workers_peak_mb": round(memory.workers_peak / 2**20), "load_average": [round(x, 2) for x in load]}


def table_rows(best: dict[str, Best]) -> list[dict]:
    """Each timed stage (and the whole day, when every stage ran) against its floor and target."""
    rows = []
    for stage in [*TIMEABLE, WHOLE_DAY]:
        if stage not in best or stage in PEERS:
            continue
        seconds = best[stage].seconds
        held, limit = TARGETS.get(stage, ("floor", None))
        if held == "windows":
            against, reference = "the windows job", best.get("windows") and best["windows"].seconds
        else:
            against, parts = FLOORS[stage]
            reference = sum(best[p].seconds for p in parts) if all(p in best for p in parts) else None
        ratio = seconds / reference if reference else None
        target = None if limit is None else f"<= {limit:g}x {'floor' if held == 'floor' else 'windows'}"
        rows.append({"stage": stage, "seconds": round(seconds, 3), "against": against,
                     "against_seconds": None if reference is None else round(reference, 3),
                     "ratio": None if ratio is None else round(ratio, 2), "target": target,
                     "met": None if limit is None or ratio is None else ratio <= limit,
                     "cpu_seconds": None if best[stage].cpu_seconds is None else round(best[stage].cpu_seconds, 1),
                     "runs": best[stage].runs})
    for peer, named in PEERS.items():  # panes' ratio to each peer
        if peer not in best or "partials" not in best or "windows" not in best:
            continue
        panes = best["partials"].seconds + best["windows"].seconds
        rows.append({"stage": "partials + windows", "seconds": round(panes, 3),
                     "against": f"{named}: the same change points from the events",
                     "against_seconds": round(best[peer].seconds, 3), "ratio": round(panes / best[peer].seconds, 2),
                     "target": None, "met": None, "cpu_seconds": None, "runs": best[peer].runs})
    return rows


def floor_table(best: dict[str, Best]) -> list[dict]:
    return [{"floor": name, "seconds": round(b.seconds, 3), "runs": b.runs} for name, b in best.items()
            if name not in TIMEABLE and name != WHOLE_DAY]


# -- reporting ----------------------------------------------------------------------------------


def _fmt(value, spec: str = ".2f", suffix: str = "") -> str:
    return "" if value is None else f"{value:{spec}}{suffix}"


def markdown(results: list[dict]) -> str:
    lines = ["| events a day | keys | stage | seconds | floor (or reference) | its seconds | ratio | target | met |"
             " µs per event |",
             "|---:|---:|---|---:|---|---:|---:|---|---|---:|"]
    for r in results:
        for row in r["table"]:
            met = {True: "yes", False: "**no**", None: ""}[row["met"]]
            per_event = row["seconds"] / r["events_per_day"] * 1e6
            lines.append(f"| {r['events_per_day']:,} | {r['keys']:,} | {row['stage']} | {row['seconds']:.2f} | "
                         f"{row['against']} | {_fmt(row['against_seconds'])} | {_fmt(row['ratio'], '.2f', 'x')} | "
                         f"{row['target'] or ''} | {met} | {per_event:.2f} |")
    lines += ["", "| events a day | keys | driver peak MB | load average over the rounds | set-up s |",
              "|---:|---:|---:|---|---:|"]
    for r in results:
        lines.append(f"| {r['events_per_day']:,} | {r['keys']:,} | {r['driver_peak_mb']:,} | "
                     f"{min(r['load_average']):.1f} .. {max(r['load_average']):.1f} | {r['setup_s']:.0f} |")
    return "\n".join(lines) + "\n"


def print_table(r: dict) -> None:
    print(f"\n{r['events_per_day']:,} events a day, {r['keys']:,} keys; best of {r['reps']}; load average "
          f"{min(r['load_average']):.1f} .. {max(r['load_average']):.1f}; driver peak {r['driver_peak_mb']:,} MB")
    print(f"  {'stage':<10} {'seconds':>8}  {'floor (or reference)':<44} {'s':>7} {'ratio':>7}  {'target':<17} met")
    for row in r["table"]:
        met = {True: "pass", False: "MISS", None: ""}[row["met"]]
        print(f"  {row['stage']:<10} {row['seconds']:8.2f}  {row['against']:<44} {_fmt(row['against_seconds']):>7} "
              f"{_fmt(row['ratio'], '.2f', 'x'):>7}  {row['target'] or '-':<17} {met}")
    print("  floors: " + ", ".join(f"{f['floor']} {f['seconds']:.2f} s" for f in r["floors"]))


def print_spark_stages(r: dict) -> None:
    for stage, spark_stages in r["spark_stages"].items():
        print(f"\n  {stage}: Spark's stages of its last run")
        print(f"    {'stage':>5} {'tasks':>5} {'task s':>7} {'CPU s':>6} {'rows read':>11} {'shuffle in':>11} "
              f"{'shuffle out':>11}  name")
        for s in spark_stages:
            print(f"    {s['stage']:>5} {s['tasks']:>5} {s['task_s']:7.2f} {s['cpu_s']:6.2f} {s['rows_read']:>11,} "
                  f"{s['shuffle_read_rows']:>11,} {s['shuffle_write_rows']:>11,}  {s['name']}")


def plot(path: Path, results: list[dict]) -> bool:
    """Cost per event of each stage and the whole day, and the driver's peak memory, by size."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[bench]')")
        return False
    fig, (cost, memory) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    key_counts = sorted({r["keys"] for r in results})
    styles = ["-", "--", ":", "-."]
    for k, keys in enumerate(key_counts):
        of_keys = sorted((r for r in results if r["keys"] == keys), key=lambda r: r["events_per_day"])
        for i, stage in enumerate([WHOLE_DAY, *STAGES]):
            points = [(r["events_per_day"], row["seconds"] / r["events_per_day"] * 1e6)
                      for r in of_keys for row in r["table"] if row["stage"] == stage]
            if points:
                cost.plot(*zip(*points), f"C{i}o{styles[k % 4]}", label=f"{stage}, {keys:,} keys")
        memory.plot([r["events_per_day"] for r in of_keys], [r["driver_peak_mb"] for r in of_keys],
                    f"C0o{styles[k % 4]}", label=f"{keys:,} keys")
    for ax, label in ((cost, "µs per event"), (memory, "driver peak resident MB (Python + JVM)")):
        ax.set_xscale("log")
        ax.set_xlabel("events per day")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    cost.set_yscale("log")
    cost.set_title("Cost per event: flat is linear growth", fontsize=9)
    memory.set_title("The driver's peak memory", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def update_readme(readme: Path, table: str, note: str) -> None:
    text = readme.read_text()
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{readme} has no {README_BEGIN} ... {README_END} block to rewrite")
    readme.write_text(pattern.sub(lambda _: f"{README_BEGIN}\n{note}\n\n{table}{README_END}", text))


def machine() -> dict:
    import platform
    import subprocess

    import pyspark

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    mem = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal"))) // 2**20
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": mem, "python": platform.python_version(),
            "java": java[0] if java else "", "pyspark": pyspark.__version__}


def report(out: Path, info: dict, results: list[dict], command: str, readme: str | None) -> None:
    """``pipeline.json``, ``pipeline.md`` and ``growth.png`` under ``out``, and the README's table."""
    (out / "pipeline.json").write_text(json.dumps({**info, "results": results}, indent=1, default=str))
    table = markdown(results)
    (out / "pipeline.md").write_text(table)
    plotted = plot(out / "growth.png", results)
    m = info["machine"]
    note = f"{command}, on {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {date.today()}."
    if readme:
        update_readme(Path(readme), table, note)
    print(f"\nwrote {out}/pipeline.json, pipeline.md{', growth.png' if plotted else ''}")


def _command_of(run: dict) -> str:
    """The command of a ``pipeline.json`` written before it recorded one."""
    sizes = ",".join(f"{r['events_per_day']:.0e}".replace("+0", "") for r in run["results"])
    return f"python -m bench --events-per-day {sizes} --reps {run['reps']} --warm-up {run['warm_up']}"


def merged(paths: list[str]) -> tuple[dict, list[dict], str]:
    """The runs of several ``pipeline.json`` as one report: each size keeps its own ``reps``."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    info = {"machine": runs[0]["machine"], "day": runs[0]["day"]}
    info["merged"] = [{k: v for k, v in run.items() if k != "results"} for run in runs]
    results = [r for run in runs for r in run["results"]]
    command = " and ".join(f"`{run.get('command') or _command_of(run)}`" for run in runs) + ", merged"
    return info, results, command


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        info, results, command = merged(args.merge)
        report(out, info, results, command, args.update_readme)
        return 0
    from jobs.runtime.spark_session import get_spark

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    spark = get_spark(args.spark_conf)
    command = "python -m bench " + " ".join(argv if argv is not None else os.sys.argv[1:])
    info = {"machine": machine(), "day": DAY.isoformat(), "command": command.strip(), "stages": args.stages,
            "reps": args.reps, "warm_up": args.warm_up, "spark_conf": args.spark_conf,
            "load_average_at_start": os.getloadavg()}
    results = []
    for events_per_day in args.events_per_day:
        for keys in args.keys or [keys_for(events_per_day)]:
            print(f"\n{events_per_day:,} events a day, {keys:,} keys: preparing ...", flush=True)
            ds = prepare(spark, work, events_per_day, keys, args.seed, args.reuse)
            print(f"  set-up {ds.setup_s:.0f} s: {ds.landing_lines:,} landing lines of {DAY}", flush=True)
            measured = measure_size(ds, args, work)
            best = measured.pop("best")
            result = {"events_per_day": events_per_day, "keys": keys, "landing_lines": ds.landing_lines,
                      "reps": args.reps, "setup_s": round(ds.setup_s, 1), **measured, "table": table_rows(best),
                      "floors": floor_table(best),
                      "spark_stages": {n: b.spark_stages for n, b in best.items() if b.spark_stages}}
            results.append(result)
            print_table(result)
            if args.profile:
                print_spark_stages(result)
            info["total_s"] = round(time.perf_counter() - started)
            (out / "pipeline.json").write_text(json.dumps({**info, "results": results}, indent=1, default=str))
    report(out, info, results, f"`{info['command']}`; best of {args.reps}", args.update_readme)
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return 0
